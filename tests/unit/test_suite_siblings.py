"""Which sibling benchmarks the suite gate measures beside a submission: the guards
(``regression: true``) always, the suite's (``suite``, or every benchmark) when the
candidate touches ``scope.shared``."""

from __future__ import annotations

from outerloop.attempt.suite import siblings_to_measure
from outerloop.contract import Contract, load_contract_text

CONTRACT = """
benchmarks:
  - {{name: alpha, command: a, metric: a, direction: min}}
  - {{name: beta, command: b, metric: b, direction: min{beta}}}
  - {{name: gamma, command: c, metric: c, direction: min}}
  - {{name: delta, command: d, metric: d, direction: min, verification: self_report{delta}}}
budgets: {{gpu_hours_per_run: 0, runs_per_week: 5}}
scope: {{allowed: [local/], shared: [shared/]}}
roadmap: docs/roadmap.md
{suite}
"""


def contract(*, beta: str = "", delta: str = "", suite: str = "") -> Contract:
    return load_contract_text(CONTRACT.format(beta=beta, delta=delta, suite=suite))


def measured(c: Contract, changed: list[str], bench: str = "alpha") -> list[str]:
    own = c.benchmark(bench)
    assert own is not None
    return [b.name for _, b in siblings_to_measure(c, own, changed)]


def test_every_other_measured_benchmark_is_a_sibling_when_shared_is_touched() -> None:
    assert measured(contract(), ["shared/x.py"]) == ["beta", "gamma"]
    assert measured(contract(), ["local/x.py"]) == []


def test_only_the_suite_list_is_measured_when_the_contract_names_a_suite() -> None:
    c = contract(suite="suite: [alpha, Gamma]")
    assert measured(c, ["shared/x.py"]) == ["gamma"]
    assert measured(c, ["local/x.py"]) == []


def test_a_guard_is_measured_beside_every_candidate_when_shared_is_untouched() -> None:
    c = contract(beta=", regression: true", suite="suite: [alpha, gamma]")
    assert measured(c, ["local/x.py"]) == ["beta"]
    assert measured(c, ["shared/x.py"]) == ["beta", "gamma"]
    assert measured(c, ["local/x.py"], bench="beta") == []  # its own run measures it anyway


def test_a_self_reported_guard_is_never_measured() -> None:
    c = contract(delta=", regression: true")
    assert measured(c, ["local/x.py"]) == []
