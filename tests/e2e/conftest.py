"""Fixtures for end-to-end runs: the fake GitHub for the github forge runs; every home
a test made must verify at its end (``outerloop verify``: each ledger line chains from
the one before, each attested head is there, the history index matches the ledger),
and in the modules of ``EXPLAINED``
``outerloop explain`` must name each run's actions as its ticks took them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from outerloop.ledger.book import verify_home
from tests import support
from tests.e2e.explain_check import EXPLAINED, check_every_run
from tests.github.fixtures import fake_github  # noqa: F401


def homes_under(root: Path) -> list[Path]:
    """Every outerloop home a test made under ``root`` (a directory with a config)."""
    return sorted(config.parent for pattern in ("outerloop.toml", "*/outerloop.toml",
                                                "*/*/outerloop.toml")
                  for config in root.glob(pattern))


GATE_MODULES = frozenset({"test_gate_fishing", "test_confirmation", "test_gate_edges",
                          "test_gate_order"})
"""Modules whose subject is the gate's statistics: their runs keep the contract's
confidence (0.99 unless the test's target says otherwise)."""


@pytest.fixture(autouse=True)
def _quick_gate(monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> None:
    """End-to-end runs are credited at the gate's first look (``QUICK_CONFIDENCE``),
    but in ``GATE_MODULES`` and where a test names its confidence (``make_home``)."""
    if request.module.__name__.rpartition(".")[2] not in GATE_MODULES:
        monkeypatch.setattr(support, "GATE_CONFIDENCE", support.QUICK_CONFIDENCE)


@pytest.fixture(autouse=True)
def _ledger_verifies(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[None]:
    yield
    explained = request.module.__name__.rpartition(".")[2] in EXPLAINED
    for home in homes_under(tmp_path):
        report = verify_home(home)
        assert report.ok, f"{home}: " + "; ".join(p.text() for p in report.problems[:10])
        assert report.index == [], f"{home}: the history index: {report.index}"
        if explained:
            check_every_run(home, some=False)
