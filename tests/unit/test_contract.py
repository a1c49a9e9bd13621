"""The target contract: loading, field errors, invariants, scope checks, schema."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import pytest

from outerloop.contract import (
    MAX_CONTRACT_BYTES,
    Contract,
    ContractInvalid,
    contract_errors,
    floor,
    load_contract_file,
    load_contract_text,
    schema_json,
)
from outerloop.contract_scope import (
    forbidden_reason,
    path_allowed,
    path_violation,
    scope_violations,
    touches_shared,
)
from outerloop.errors import ContractError
from outerloop.selfrepo import check_not_self_targeting, is_self_targeting

REPO = Path(__file__).resolve().parents[2]

REFERENCE = """\
benchmarks:
  - name: tsp
    command: uv run python -m quickstart.eval --env tsp --json
    metric: mean_tour_length
    direction: min
  - name: denoise
    command: uv run python -m quickstart.eval --env denoise --json
    metric: mean_mse
    direction: min
    seed_env: QUICKSTART_DENOISE_SEED
    min_delta: 0.0002
budgets:
  gpu_hours_per_run: 0
  runs_per_week: 10
scope:
  allowed: [src/quickstart/solvers/]
roadmap: docs/roadmap.md
"""


def _with(old: str, new: str, text: str = REFERENCE) -> str:
    assert old in text, old
    return text.replace(old, new, 1)


def _errors(text: str) -> list[str]:
    return contract_errors(text)


@pytest.fixture
def reference() -> Contract:
    return load_contract_text(REFERENCE)


# ----------------------------------------------------------------------- accepted


def test_reference_contract_validates_unchanged_when_loaded(reference: Contract) -> None:
    assert [b.name for b in reference.benchmarks] == ["tsp", "denoise"]
    assert reference.benchmarks[1].seed_env == "QUICKSTART_DENOISE_SEED"
    assert reference.benchmarks[1].min_delta == 0.0002
    assert reference.scope.allowed == ["src/quickstart/solvers/"]


def test_defaults_apply_when_optional_fields_are_omitted(reference: Contract) -> None:
    bench = reference.benchmarks[0]
    assert (bench.baseline, bench.repeats, bench.gpus, bench.nodes) == ("paired", 1, 0, 1)
    assert bench.self_reported is False
    assert reference.merge == "manual"
    assert reference.budgets.max_active_attempts == 1
    assert reference.channels.siblings and reference.channels.messages
    assert reference.channels.shared_reports
    topup = reference.budgets.review_topup
    assert (topup.launches, topup.sleeps, topup.gpu_hours) == (2, 4, 0.5)


@pytest.mark.parametrize("name", ["minimal.yaml", "full.yaml"])
def test_example_contract_validates_when_loaded_from_file(name: str) -> None:
    contract = load_contract_file(REPO / "contracts" / "examples" / name)
    assert contract.benchmarks


def test_full_example_sets_every_field_when_loaded() -> None:
    contract = load_contract_file(REPO / "contracts" / "examples" / "full.yaml")
    assert contract.model_fields_set == set(Contract.model_fields)
    assert contract.budgets.model_fields_set == set(type(contract.budgets).model_fields)
    bench = contract.benchmarks[0]
    assert bench.model_fields_set == set(type(bench).model_fields)


def test_float_written_without_a_dot_is_accepted_when_yaml_reads_it_as_text() -> None:
    contract = load_contract_text(_with("min_delta: 0.0002", "min_delta: 2e-4"))
    assert contract.benchmarks[1].min_delta == pytest.approx(0.0002)


# ----------------------------------------------------------------------- field errors


def test_every_error_is_named_when_direction_is_up_and_a_key_is_unknown() -> None:
    text = _with("    direction: min\n    seed_env", "    direction: up\n    colour: red\n"
                 "    seed_env")
    errors = _errors(text)
    assert "benchmarks[1].direction: must be 'min' or 'max'" in errors
    assert "benchmarks[1].colour: unknown field" in errors
    assert len(errors) == 2


def test_unknown_budget_key_is_named_when_present() -> None:
    errors = _errors(_with("runs_per_week: 10", "runs_per_week: 10\n  foo: 1"))
    assert errors == ["budgets.foo: unknown field"]


def test_missing_required_fields_are_each_named_when_absent() -> None:
    errors = _errors("benchmarks: []\nscope: {allowed: [src/]}\n")
    assert "benchmarks: must have at least 1 item(s)" in errors
    assert "budgets: required field is missing" in errors
    assert "roadmap: required field is missing" in errors


def test_error_is_raised_with_every_line_when_text_is_invalid() -> None:
    with pytest.raises(ContractInvalid) as caught:
        load_contract_text(_with("direction: min", "direction: up"), "target/.outerloop.yaml")
    assert isinstance(caught.value, ContractError)
    assert caught.value.errors == ["benchmarks[0].direction: must be 'min' or 'max'"]
    assert "target/.outerloop.yaml" in str(caught.value)
    assert "benchmarks[0].direction" in str(caught.value)


def test_duplicate_benchmark_names_are_refused_when_loaded() -> None:
    errors = _errors(_with("name: denoise", "name: tsp"))
    assert len(errors) == 1
    assert errors[0].startswith("benchmarks[1].name: 'tsp' is already benchmarks[0]")


def test_benchmark_names_are_refused_when_they_differ_only_in_case() -> None:
    # issues name benchmarks case-insensitively, so `tour` and `TOUR` would both match
    errors = _errors(_with("name: denoise", "name: TSP"))
    assert len(errors) == 1
    assert errors[0].startswith("benchmarks[1].name: 'TSP' is already benchmarks[0] ('tsp')")


def test_benchmark_name_is_refused_when_it_has_a_space() -> None:
    errors = _errors(_with("name: tsp", "name: t s p"))
    assert errors[0].startswith("benchmarks[0].name: must match")


def test_number_is_refused_when_given_a_yaml_boolean() -> None:
    errors = _errors(_with("runs_per_week: 10", "runs_per_week: yes"))
    assert errors == ["budgets.runs_per_week: must be a number, not true/false"]


def test_runs_per_week_is_refused_when_zero() -> None:
    assert _errors(_with("runs_per_week: 10", "runs_per_week: 0")) == [
        "budgets.runs_per_week: must be greater than 0"]


@pytest.mark.parametrize(("field", "value", "message"), [
    ("gpus", "9", "must be at most 8"),
    ("nodes", "0", "must be at least 1"),
    ("repeats", "10", "must be at most 9"),
    ("min_delta_rel", "1.5", "must be at most 1"),
    ("min_delta", "-1", "must be at least 0"),
    ("eval_minutes", "0", "must be at least 1"),
    ("min_delta", ".inf", "must be a finite number"),
])
def test_benchmark_knob_is_refused_when_out_of_range(field: str, value: str,
                                                     message: str) -> None:
    text = _with("    direction: min\n  - name: denoise", f"    direction: min\n    {field}: "
                 f"{value}\n  - name: denoise")
    assert _errors(text) == [f"benchmarks[0].{field}: {message}"]


def test_cached_baseline_is_refused_when_the_floor_is_zero() -> None:
    errors = _errors(_with("min_delta: 0.0002", "baseline: cached"))
    assert len(errors) == 1
    assert errors[0].startswith("benchmarks[1].baseline: cached needs a positive floor")


def test_cached_baseline_is_accepted_when_the_floor_is_positive() -> None:
    contract = load_contract_text(_with("min_delta: 0.0002", "min_delta: 0.0002\n"
                                        "    baseline: cached"))
    assert contract.benchmarks[1].baseline == "cached"


def test_self_report_is_refused_when_it_contradicts_verification_gate() -> None:
    errors = _errors(_with("min_delta: 0.0002", "self_report: true\n    verification: gate"))
    assert errors[0].startswith("benchmarks[1].self_report: contradicts")


def test_benchmark_is_self_reported_when_verification_says_so() -> None:
    contract = load_contract_text(_with("min_delta: 0.0002", "verification: self_report"))
    assert contract.benchmarks[1].self_reported


@pytest.mark.parametrize("name", ["HOME", "PATH", "TMPDIR", "LANG", "USER", "SHELL",
                                  "UV_SEED", "LD_PRELOAD", "GIT_DIR", "OUTERLOOP_SEED",
                                  "SLURM_SEED"])
def test_seed_env_is_refused_when_it_names_a_managed_variable(name: str) -> None:
    errors = _errors(_with("QUICKSTART_DENOISE_SEED", name))
    assert len(errors) == 1
    assert errors[0].startswith(f"benchmarks[1].seed_env: {name} is managed")


def test_seed_env_is_refused_when_lowercase() -> None:
    errors = _errors(_with("QUICKSTART_DENOISE_SEED", "my_seed"))
    assert errors[0].startswith("benchmarks[1].seed_env: must match")


# ----------------------------------------------------------------------- scope syntax


@pytest.mark.parametrize("prefix", ["'src/*.py'", "../outside/", "/abs/path", "'.'", "'./'",
                                    "src//x", "'a\\b'"])
def test_scope_prefix_is_refused_when_not_a_clean_relative_prefix(prefix: str) -> None:
    errors = _errors(_with("[src/quickstart/solvers/]", f"[{prefix}]"))
    assert len(errors) == 1
    assert errors[0].startswith("scope.allowed[0]: ")


@pytest.mark.parametrize("prefix", [".github/workflows/", ".GitHub/", "src/.git/", ".outerloop/",
                                    ".outerloop.yaml", "src/.GIT/hooks"])
def test_allowed_is_refused_when_it_overlaps_a_forbidden_path(prefix: str) -> None:
    errors = _errors(_with("[src/quickstart/solvers/]", f"[src/ok/, {prefix}]"))
    assert len(errors) == 1
    assert errors[0].startswith("scope.allowed[1]: overlaps a path no contract may open")


@pytest.mark.parametrize("prefix", ["docs/", "docs/roadmap.md", "DOCS/"])
def test_allowed_is_refused_when_it_contains_the_roadmap(prefix: str) -> None:
    errors = _errors(_with("[src/quickstart/solvers/]", f"[{prefix}]"))
    assert len(errors) == 1
    assert errors[0].startswith(f"roadmap: overlaps scope prefix '{prefix}'")


def test_scope_prefix_is_normalised_when_written_with_a_leading_dot_slash() -> None:
    contract = load_contract_text(_with("[src/quickstart/solvers/]", "[./src/a/]"))
    assert contract.scope.allowed == ["src/a/"]


def test_roadmap_is_refused_when_absolute() -> None:
    errors = _errors(_with("roadmap: docs/roadmap.md", "roadmap: /etc/passwd"))
    assert len(errors) == 1
    assert errors[0].startswith("roadmap: the roadmap must be a repo-relative path")


# ----------------------------------------------------------------------- strict YAML


def test_duplicate_keys_are_refused_when_a_mapping_repeats_one() -> None:
    errors = _errors(_with("runs_per_week: 10", "runs_per_week: 10\n  runs_per_week: 99"))
    assert len(errors) == 1
    assert "duplicate key 'runs_per_week'" in errors[0]
    assert "line 15" in errors[0]


def test_aliases_are_refused_when_the_file_uses_anchors() -> None:
    text = _with("budgets:\n", "budgets: &b\n") + "extra: *b\n"
    errors = _errors(text)
    assert len(errors) == 1
    assert "anchor &b is not allowed" in errors[0]


def test_merge_keys_are_refused_when_present() -> None:
    assert "merge keys (<<) are not allowed" in _errors("a: 1\n<<: {b: 2}\n")[0]


def test_contract_is_refused_when_larger_than_64_kib() -> None:
    text = REFERENCE + "#" * (MAX_CONTRACT_BYTES + 1) + "\n"
    errors = _errors(text)
    assert len(errors) == 1
    assert "at most 65536" in errors[0]


def test_file_is_refused_when_larger_than_64_kib(tmp_path: Path) -> None:
    path = tmp_path / ".outerloop.yaml"
    path.write_text(REFERENCE + "#" * MAX_CONTRACT_BYTES + "\n", encoding="utf-8")
    with pytest.raises(ContractInvalid, match="larger than 65536 bytes"):
        load_contract_file(path)


def test_file_is_refused_when_not_utf8(tmp_path: Path) -> None:
    path = tmp_path / ".outerloop.yaml"
    path.write_bytes(REFERENCE.encode() + b"# \xff\n")
    with pytest.raises(ContractInvalid, match="not UTF-8"):
        load_contract_file(path)


def test_missing_file_raises_a_contract_error_when_loaded(tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="no such file"):
        load_contract_file(tmp_path / "absent.yaml")


@pytest.mark.parametrize(("text", "found"), [("", "empty"), ("- a\n", "list"), ("3\n", "int")])
def test_top_level_is_refused_when_not_a_mapping(text: str, found: str) -> None:
    errors = _errors(text)
    assert errors == [f"(top): must be a mapping of fields (benchmarks, budgets, scope, "
                      f"roadmap, ...), found {found}"]


def test_broken_yaml_is_reported_with_its_line_when_unparseable() -> None:
    errors = _errors("a: [1\n")
    assert len(errors) == 1
    assert errors[0].startswith("(yaml): line 2")


def test_deep_nesting_is_refused_when_it_would_exhaust_the_stack() -> None:
    assert _errors("[" * 20_000) == ["(yaml): nested too deeply"]


# ----------------------------------------------------------------------- path checks


@pytest.mark.parametrize("path", ["src/quickstart/solvers/greedy.py",
                                  "src/quickstart/solvers/sub/deep.py"])
def test_path_is_allowed_when_under_an_allowed_prefix(reference: Contract, path: str) -> None:
    assert path_allowed(reference, path)


@pytest.mark.parametrize("path", ["src/quickstart/solversX/a.py", "src/quickstart/eval.py",
                                  "README.md", "Src/quickstart/solvers/a.py"])
def test_path_is_refused_when_outside_the_allowed_prefixes(reference: Contract,
                                                           path: str) -> None:
    assert not path_allowed(reference, path)
    assert path_violation(reference, path) == "outside scope.allowed"


@pytest.mark.parametrize("path", [".github/workflows/ci.yml", ".GitHub/x", "a/.git/b",
                                  "src/quickstart/solvers/.git/config",
                                  "src/quickstart/solvers/.GIT./x", ".outerloop.yaml",
                                  ".OUTERLOOP.YAML", "docs/roadmap.md", "DOCS/Roadmap.md",
                                  "src/quickstart/solvers/.g\u200cit/x",
                                  "src/quickstart/solvers/.gitattributes"])
def test_path_is_forbidden_when_it_matches_an_invariant(reference: Contract, path: str) -> None:
    assert forbidden_reason(reference, path) is not None
    assert not path_allowed(reference, path)


@pytest.mark.parametrize("path", ["src/quickstart/solvers/../../x", "/etc/passwd", "",
                                  "src/quickstart/solvers/./a", "src\\quickstart"])
def test_path_is_refused_when_it_is_not_a_clean_relative_path(reference: Contract,
                                                              path: str) -> None:
    assert not path_allowed(reference, path)


def test_forbidden_wins_when_a_shared_prefix_would_allow_the_path() -> None:
    text = _with("[src/quickstart/solvers/]", "[src/quickstart/solvers/]\n  shared: [lib/]")
    contract = load_contract_text(text)
    assert path_allowed(contract, "lib/common.py")
    assert not path_allowed(contract, "lib/.git/config")


def test_scope_violations_lists_each_bad_path_once_in_order(reference: Contract) -> None:
    paths = ["README.md", "src/quickstart/solvers/a.py", ".github/x", "README.md"]
    assert scope_violations(reference, paths) == ["README.md", ".github/x"]


def test_scope_violations_is_empty_when_every_path_is_allowed(reference: Contract) -> None:
    assert scope_violations(reference, ["src/quickstart/solvers/a.py"]) == []


def test_touches_shared_is_true_when_a_path_is_under_shared() -> None:
    contract = load_contract_text(_with("[src/quickstart/solvers/]",
                                        "[src/quickstart/solvers/]\n  shared: [lib/]"))
    assert touches_shared(contract, ["src/quickstart/solvers/a.py", "lib/x.py"])
    assert not touches_shared(contract, ["src/quickstart/solvers/a.py"])


# ----------------------------------------------------------------------- self-targeting, floor


@pytest.mark.parametrize("target", ["acme/outerloop", "ACME/Outerloop", "acme/outerloop.git"])
def test_self_targeting_is_detected_when_target_is_the_kernel_repo(target: str) -> None:
    assert is_self_targeting(target, "acme/outerloop")
    with pytest.raises(ContractError, match="outerloop's own repository"):
        check_not_self_targeting(target, "acme/outerloop")


def test_self_targeting_is_not_detected_when_repos_differ() -> None:
    assert not is_self_targeting("acme/quickstart", "acme/outerloop")
    assert not is_self_targeting("acme/quickstart", None)
    check_not_self_targeting("acme/quickstart", "acme/outerloop")


def test_floor_is_the_absolute_delta_when_it_exceeds_the_relative_one(
        reference: Contract) -> None:
    assert floor(reference.benchmarks[1], Decimal("1.5")) == Decimal("0.0002")


def test_floor_is_exact_when_relative_to_the_baseline() -> None:
    contract = load_contract_text(_with("min_delta: 0.0002", "min_delta: 0.0002\n"
                                        "    min_delta_rel: 0.1"))
    assert floor(contract.benchmarks[1], Decimal("-0.3")) == Decimal("0.03")


# ----------------------------------------------------------------------- schema


def test_committed_schema_is_in_sync_when_models_change() -> None:
    committed = (REPO / "contracts" / "outerloop.schema.json").read_text(encoding="utf-8")
    assert committed == schema_json(), (
        "contracts/outerloop.schema.json is stale; regenerate it with "
        "`python -m outerloop.contract --schema > contracts/outerloop.schema.json`")


def test_schema_forbids_unknown_fields_when_generated() -> None:
    import json

    schema = json.loads(schema_json())
    assert schema["additionalProperties"] is False
    assert schema["$defs"]["Budgets"]["additionalProperties"] is False
    assert set(schema["required"]) == {"benchmarks", "budgets", "scope", "roadmap"}


def test_every_yaml_example_in_the_reference_doc_validates_when_loaded() -> None:
    import re

    doc = (REPO / "docs" / "contract.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```yaml\n(.*?)```", doc, flags=re.DOTALL)
    assert len(blocks) >= 2
    for block in blocks:
        assert contract_errors(block) == []
