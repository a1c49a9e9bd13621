"""CI fails closed: under ``CI=true`` a service suite that skips fails the run.

The slurm, harness, browser, security and archive suites skip, with their reason, when
their service cannot start (no Slurm, no agent CLIs, no Chromium, ...). On a developer's
machine that is a skip; in CI it would hide a broken install behind a green run, so
there each such skip becomes a failure that prints the skip's reason.

Loaded by ``tests/conftest.py`` (its hooks are re-exported there). Under xdist the
test hooks run in the workers (a failed report travels to the controller as it is) and
the module and session hooks on the controller.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

SERVICE_SUITES = ("slurm", "harness", "browser", "security", "archive")
"""Markers (and ``tests/<name>/`` folders) of suites that need a service."""


def in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


def _reason(longrepr: Any) -> str:
    if isinstance(longrepr, tuple) and len(longrepr) == 3:
        return str(longrepr[2]).removeprefix("Skipped: ")
    return str(longrepr)


def _fail_closed(report: Any, suite: str) -> None:
    report.outcome = "failed"
    report.longrepr = (f"CI=true: the {suite} suite must run in CI, but it was skipped: "
                       f"{_reason(report.longrepr)}")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    outcome = yield
    report = outcome.get_result()
    if not (report.skipped and in_ci()) or hasattr(report, "wasxfail"):
        return
    suite = next((name for name in SERVICE_SUITES if item.get_closest_marker(name)), None)
    if suite is not None:
        _fail_closed(report, suite)


_SKIPPED_MODULES: list[str] = []


def pytest_collectreport(report: pytest.CollectReport) -> None:
    """A whole module skipped at import (``pytest.skip(allow_module_level=True)``): kept
    as a skip so the other suites still run, and the session fails at its end.

    This hook, not ``pytest_make_collect_report``: under xdist the workers collect, and
    only this one is called again on the controller with each worker's skipped report;
    the controller prints the summary and sets the exit status."""
    if not (report.skipped and in_ci()):
        return
    parts = Path(report.nodeid.split("::")[0]).parts
    suite = next((p for p in parts[:-1] if p in SERVICE_SUITES), None)
    line = (f"CI=true: the {suite} suite must run in CI, but {report.nodeid} was skipped: "
            f"{_reason(report.longrepr)}")
    if suite is not None and line not in _SKIPPED_MODULES:
        _SKIPPED_MODULES.append(line)


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _SKIPPED_MODULES:
        terminalreporter.section("service suites skipped in CI (the run fails)")
        for line in _SKIPPED_MODULES:
            terminalreporter.line(line)


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    if _SKIPPED_MODULES and exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
