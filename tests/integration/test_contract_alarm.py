"""A target whose contract does not load: skipped each tick, one alarm issue after three
failing ticks in a row, closed once the contract validates again (real ticks, local
forge)."""

from __future__ import annotations

import shutil
from pathlib import Path

from outerloop.config import Settings
from outerloop.forge.base import Issue
from outerloop.forge.markers import find_marker
from outerloop.kernel.executor import CRASH_FILE
from outerloop.kernel.tick import run_tick
from tests.support import EXAMPLE_TARGET, TARGET, forge, make_home, state_of, tick_process

BROKEN = "benchmarks:\n  - name: tour\n    metric: [not, a, string]\nbudgets: {}\n"


def _broken_home(tmp_path: Path, contract: str | None = BROKEN) -> Settings:
    target = tmp_path / "target"
    shutil.copytree(EXAMPLE_TARGET, target)
    if contract is None:
        (target / ".outerloop.yaml").unlink()
    else:
        (target / ".outerloop.yaml").write_text(contract)
    return make_home(tmp_path, target_dir=target)


def _ticks(settings: Settings, n: int) -> None:
    for _ in range(n):
        report = run_tick(settings)
        assert report.acted and not report.failures, report.failures


def _alarms(settings: Settings, state: str = "open") -> list[Issue]:
    local = forge(settings)
    numbers = [n for (n,) in _issue_numbers(settings)]
    issues = [local.get_issue(TARGET, n) for n in numbers]
    return [i for i in issues if i.state == state and find_marker(
        [i], "alarm", "contract", settings.forge.login) is not None]


def _issue_numbers(settings: Settings) -> list[tuple[int]]:
    with forge(settings).store.read() as conn:
        rows = conn.execute("SELECT number FROM issues WHERE repo = ? AND is_pr = 0",
                            (TARGET,)).fetchall()
    return [(int(r[0]),) for r in rows]


def _fix_contract(settings: Settings) -> None:
    local = forge(settings)
    branch = local.default_branch(TARGET)
    good = (EXAMPLE_TARGET / ".outerloop.yaml").read_bytes()
    local.commit_files(TARGET, branch, {".outerloop.yaml": good}, "fix the contract",
                       local.branch_head(TARGET, branch))


def test_no_alarm_is_raised_when_contract_failed_only_two_ticks(tmp_path: Path) -> None:
    settings = _broken_home(tmp_path)
    _ticks(settings, 2)
    assert _alarms(settings) == []
    assert state_of(settings).contracts[TARGET].failing == 2


def test_one_alarm_issue_opens_when_contract_failed_three_ticks_or_more(
        tmp_path: Path) -> None:
    settings = _broken_home(tmp_path)
    _ticks(settings, 5)
    (alarm,) = _alarms(settings)
    assert alarm.author == settings.forge.login
    assert alarm.title == "outerloop: the contract does not validate"
    assert "benchmarks[0].metric: must be a string" in alarm.body and "```" in alarm.body
    assert state_of(settings).runs == {}


def test_alarm_issue_opens_when_contract_is_missing(tmp_path: Path) -> None:
    settings = _broken_home(tmp_path, contract=None)
    _ticks(settings, 3)
    (alarm,) = _alarms(settings)
    assert "no .outerloop.yaml" in alarm.body


def test_alarm_issue_is_closed_once_when_contract_validates_again(tmp_path: Path) -> None:
    settings = _broken_home(tmp_path)
    _ticks(settings, 3)
    (alarm,) = _alarms(settings)
    _fix_contract(settings)
    _ticks(settings, 3)
    assert _alarms(settings) == []
    closed = forge(settings).get_issue(TARGET, alarm.number)
    assert closed.state == "closed"
    comments = forge(settings).list_comments(TARGET, alarm.number)
    assert len(comments) == 1 and "validates again" in comments[0].body
    health = state_of(settings).contracts[TARGET]
    assert (health.failing, health.alarm) == (0, None)


def test_new_alarm_opens_when_contract_breaks_again_after_recovery(tmp_path: Path) -> None:
    settings = _broken_home(tmp_path)
    _ticks(settings, 3)
    _fix_contract(settings)
    _ticks(settings, 1)
    local = forge(settings)
    branch = local.default_branch(TARGET)
    local.commit_files(TARGET, branch, {".outerloop.yaml": BROKEN.encode()}, "break again",
                       local.branch_head(TARGET, branch))
    _ticks(settings, 3)
    assert len(_alarms(settings)) == 1
    assert len(_alarms(settings, state="closed")) == 1


def test_alarm_issue_opens_once_when_tick_crashed_after_opening_it(tmp_path: Path) -> None:
    settings = _broken_home(tmp_path)
    _ticks(settings, 2)
    (settings.home / CRASH_FILE).write_text("after-effect:issue:*\n")
    assert tick_process(settings).returncode != 0
    assert len(_alarms(settings)) == 1
    tick_process(settings, check=True)
    tick_process(settings, check=True)
    assert len(_alarms(settings)) == 1
    assert state_of(settings).intents == {}
