"""The traps a new user hit on a first run, each as the user met it (issue 11)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import AGENTS


def _cli(*args: str, cwd: Path | None = None,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = {k: v for k, v in os.environ.items() if not k.startswith("OUTERLOOP_")}
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "outerloop", *args], capture_output=True,
                          text=True, check=False, timeout=120, cwd=cwd, env=full)


def test_relative_script_is_found_when_init_ran_in_another_directory(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(AGENTS / "tinytsp-2opt.yaml", work / "my-agent.yaml")
    home = tmp_path / "home"
    done = _cli("init", "--home", str(home), "--script", "my-agent.yaml", cwd=work)
    assert done.returncode == 0, done.stderr
    doctor = _cli("doctor", "--home", str(home))
    line = next(x for x in doctor.stdout.splitlines() if "harness (scripted)" in x)
    assert line.startswith("ok") and str(work / "my-agent.yaml") in line


def test_bad_target_writes_nothing_so_the_corrected_init_succeeds(tmp_path: Path) -> None:
    home = tmp_path / "home"
    bad = _cli("init", "--home", str(home), "--target", "notaslash")
    assert bad.returncode == 1 and "targets" in bad.stderr and "nothing written" in bad.stderr
    assert not (home / "outerloop.toml").exists()
    good = _cli("init", "--home", str(home), "--target", "owner/name")
    assert good.returncode == 0, good.stderr


def test_bad_environment_value_is_blamed_on_the_variable_not_the_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _cli("init", "--home", str(home)).returncode == 0
    done = _cli("status", "--home", str(home), env={"OUTERLOOP_CADENCE_TICK_MINUTES": "soon"})
    assert done.returncode == 1
    assert "environment variable OUTERLOOP_CADENCE_TICK_MINUTES" in done.stderr
    assert "outerloop.toml" not in done.stderr


def test_doctor_names_the_missing_setting_when_no_script_is_set(tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _cli("init", "--home", str(home)).returncode == 0
    doctor = _cli("doctor", "--home", str(home))
    line = next(x for x in doctor.stdout.splitlines() if "harness (scripted)" in x)
    assert "no script set" in line and "None" not in line


def test_init_names_the_import_step_when_the_forge_is_local(tmp_path: Path) -> None:
    home = tmp_path / "home"
    done = _cli("init", "--home", str(home), "--target", "me/tinytsp")
    assert "outerloop forge repo import PATH/TO/REPO --as me/tinytsp" in done.stdout
    assert done.stdout.index("forge repo import") < done.stdout.index("outerloop start")


def test_generated_settings_point_at_a_reference_the_installed_version_has(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    assert _cli("init", "--home", str(home)).returncode == 0
    text = (home / "outerloop.toml").read_text()
    assert "docs/operate.md" not in text and "outerloop help settings" in text
    reference = _cli("help", "settings")
    assert reference.returncode == 0
    assert "[cadence]" in reference.stdout and "OUTERLOOP_CADENCE_TICK_MINUTES" in reference.stdout


def test_an_edited_issue_is_taken_when_it_names_a_benchmark_after_the_edit(
        tmp_path: Path) -> None:
    from tests.support import TARGET, make_home, open_issue, state_of, tick_until

    settings = make_home(tmp_path)
    number = open_issue(settings, "Faster", "Make it better.")
    flag = ["--home", str(settings.home)]
    assert _cli("tick", *flag).returncode == 0
    shown = _cli("forge", "issue", "show", str(number), *flag).stdout
    assert f"outerloop forge issue edit {number}" in shown
    edit = _cli("forge", "issue", "edit", str(number), "--body", "Try 2-opt on tour.",
                "--as", "maintainer", *flag)
    assert edit.returncode == 0, edit.stderr
    state = tick_until(settings, lambda s: bool(s.runs), timeout_s=60)
    (run,) = state.runs.values()
    assert run.issue == number and run.target == TARGET
    assert json.loads(_cli("status", "--json", *flag).stdout)["runs"][0]["issue"] == number
    assert state_of(settings).runs


def test_doctor_and_tick_name_the_contract_fields_this_version_ignores(tmp_path: Path) -> None:
    from tests.support import EXAMPLE_TARGET, make_home

    target = tmp_path / "target"
    shutil.copytree(EXAMPLE_TARGET, target)
    contract = target / ".outerloop.yaml"
    contract.write_text(contract.read_text() + "merge: auto\nsteward: {allowed: [tests/]}\n")
    settings = make_home(tmp_path, target_dir=target)
    flag = ["--home", str(settings.home)]
    doctor = _cli("doctor", *flag)
    line = next(x for x in doctor.stdout.splitlines() if x.split()[1:2] == ["contracts:"])
    assert line.startswith("ok") and "merge: not supported by this version; ignored" in line
    tick = _cli("tick", *flag)
    assert tick.returncode == 0
    assert "demo/tinytsp: steward: not supported by this version; ignored" in tick.stdout


def test_status_and_board_say_why_an_issue_waits(tmp_path: Path) -> None:
    from outerloop.kernel.tick import run_tick
    from tests.support import TARGET, forge, make_home, open_issue

    settings = make_home(tmp_path)
    open_issue(settings, "Shorter tours", "Try 2-opt on tour.")
    second = open_issue(settings, "Shorter tours too", "Try Or-opt on tour.")
    run_tick(settings)
    run_tick(settings)
    flag = ["--home", str(settings.home)]
    waiting = json.loads(_cli("status", "--json", *flag).stdout)["waiting"]
    assert [(w["target"], w["issue"]) for w in waiting] == [(TARGET, second)]
    assert "maximum of 1 run(s) at once" in waiting[0]["reason"]
    assert f"waits: {TARGET}#{second}" in _cli("status", *flag).stdout
    board = (settings.home / "board").rglob("*.md")
    assert any(f"#{second}" in p.read_text() and "Waiting issues" in p.read_text()
               for p in board)
    posts = [c for c in forge(settings).list_comments(TARGET, second)
             if "cannot start yet" in c.body]
    run_tick(settings)
    assert len(posts) == 1 and len([c for c in forge(settings).list_comments(TARGET, second)
                                    if "cannot start yet" in c.body]) == 1
