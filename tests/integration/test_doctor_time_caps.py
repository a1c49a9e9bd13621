"""``doctor`` says a time cap below what a target's jobs need before any run starts
(issue 51), with the setting, the figure and the fix; no line when nothing is capped."""

from __future__ import annotations

from pathlib import Path

from outerloop.doctor.benchmarks import check_time_caps
from tests.support import make_home


def test_eval_and_session_caps_below_need_fail_naming_the_setting_and_fix(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path, extra_toml="[compute.eval]\ntime_minutes = 1\n"
                                              "[compute.session]\ntime_minutes = 5\n")
    checks = check_time_caps(settings)
    assert [c.status for c in checks] == ["fail"] * 3  # the session, each benchmark
    assert checks[0].detail.startswith("[compute.session] time_minutes = 5 is below")
    assert checks[1].detail.startswith("[compute.eval] time_minutes = 1 is below the 22")
    assert checks[1].fix.startswith("raise [compute.eval] time_minutes to at least 22")


def test_caps_that_leave_every_job_its_time_are_ok_and_no_caps_say_nothing(
        tmp_path: Path) -> None:
    assert check_time_caps(make_home(tmp_path / "a")) == []
    (check,) = check_time_caps(make_home(tmp_path / "b", extra_toml=(
        "[compute.eval]\ntime_minutes = 22\n[compute.session]\ntime_minutes = 40\n")))
    assert check.status == "ok"
