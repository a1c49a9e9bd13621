"""`outerloop doctor` fails, naming the value and the fix, on the problems operators
hit first; `--json` for scripts; exit 1 only on a failure. It never says ok about what
it could not check: an unread contract, a crontab line no daemon fires, a judge that
gives no verdict on this target."""

from __future__ import annotations

import json
import os
import queue
import re
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from outerloop.config import Settings, load_settings
from outerloop.doctor.driver import check_tick_driver, cron_daemon
from outerloop.home import init_home
from outerloop.kernel.start import CRON_MARKER
from outerloop.kernel.tick import HEARTBEAT_FILE, run_tick
from tests.support import AGENTS, TINYCLF, make_home


def local_home(tmp_path: Path, forge: str = "local") -> Path:
    """A home whose target is in the local forge (``forge="github"``: nothing there)."""
    if forge == "local":
        return make_home(tmp_path).home
    home = tmp_path / "home"
    init_home(home, forge=forge, compute="local", harness="scripted", targets=["o/n"],
              script=str(AGENTS / "tinytsp-2opt.yaml"))
    return home


def doctor(home: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", "doctor", "--home", str(home),
                           *flags], capture_output=True, text=True, timeout=300)


def failures(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith("FAIL")]


def line_of(done: subprocess.CompletedProcess[str], name: str) -> str:
    return next(line for line in done.stdout.splitlines() if f"  {name}:" in line)


def test_doctor_passes_with_a_warning_when_no_tick_driver_is_installed_yet(
        tmp_path: Path) -> None:
    done = doctor(local_home(tmp_path))
    assert done.returncode == 0, done.stdout + done.stderr
    assert failures(done) == []
    assert any(line.startswith("warn  tick driver") and "-> fix: outerloop start" in line
               for line in done.stdout.splitlines())


def test_doctor_fails_naming_the_file_and_the_fix_when_the_forge_token_is_missing(
        tmp_path: Path) -> None:
    home = local_home(tmp_path, forge="github")
    done = doctor(home, "--quick")
    assert done.returncode == 1
    line = next(x for x in failures(done) if "forge token" in x)
    assert str(home / "keys" / "forge-token") in line
    assert "-> fix:" in line and "chmod 600" in line


def test_doctor_fails_naming_the_mode_and_the_fix_when_the_home_is_world_writable(
        tmp_path: Path) -> None:
    home = local_home(tmp_path)
    home.chmod(0o777)
    done = doctor(home, "--json", "--quick")
    assert done.returncode == 1
    data = json.loads(done.stdout)
    (check,) = [c for c in data["checks"] if c["status"] == "fail"]
    assert check["name"] == "home permissions" and "777" in check["detail"]
    assert check["fix"] == f"chmod go-w {home}"


def test_doctor_fails_naming_the_target_when_its_contract_could_not_be_read(
        tmp_path: Path) -> None:
    home = tmp_path / "home"
    init_home(home, forge="local", compute="local", harness="scripted", targets=["o/n"],
              script=str(AGENTS / "tinytsp-2opt.yaml"))
    done = doctor(home, "--quick")
    assert done.returncode == 1
    line = line_of(done, "contracts")
    assert line.startswith("FAIL") and "o/n: not read" in line
    assert "-> fix:" in line and "outerloop forge repo import" in line


def test_doctor_warns_that_prs_open_as_drafts_when_no_review_section_is_written(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path, judge=None)
    config = settings.home / "outerloop.toml"
    config.write_text(re.sub(r"(?ms)^\[review\]\n.*?(?=^\[|\Z)", "", config.read_text()))
    done = doctor(settings.home, "--quick")
    line = line_of(done, "review panel")
    assert line.startswith("warn") and "no [review] in outerloop.toml" in line
    assert "draft" in line and "-> fix:" in line


def test_doctor_fails_quoting_the_reason_and_the_file_when_the_judge_gives_no_verdict(
        tmp_path: Path) -> None:
    """A judge that tests for tinytsp's files: on another target it writes no verdict,
    and the dry run says so with the step and its transcript."""
    judge = tmp_path / "judge-tinytsp-only.yaml"
    judge.write_text('legs:\n  - - expect: "review panel"\n'
                     '    - shell: "test -f base/solver/tour.py"\n'
                     '    - write: {path: verdict.json, content: \'{"verdict": "approve"}\'}\n')
    settings = make_home(tmp_path, "tinyclf-knn.yaml", target_dir=TINYCLF, judge=judge)
    done = doctor(settings.home)
    assert done.returncode == 1
    line = line_of(done, "review panel")
    assert line.startswith("FAIL") and "judge-1 produced no verdict" in line
    assert "test -f base/solver/tour.py" in line
    transcript = line.split("; see ", 1)[1].split(" (")[0]
    assert transcript.startswith(str(settings.home / "cache" / "doctor" / "review"))
    assert Path(transcript).is_file()
    assert "-> fix:" in line and "judges = 0" in line


def test_doctor_gives_the_verdict_of_the_dry_run_when_the_judge_fits_the_target(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    done = doctor(settings.home)
    line = line_of(done, "review panel")
    assert line.startswith("ok") and "judge-1 gave a verdict (approve)" in line


def test_doctor_warns_that_prs_open_as_drafts_when_the_panel_has_no_judges(
        tmp_path: Path) -> None:
    from outerloop.doctor.base import Options
    from outerloop.doctor.review import check_review

    settings = make_home(tmp_path, extra_toml="")
    config = settings.home / "outerloop.toml"
    text = re.sub(r"(?m)^judges = \d+\n", "", config.read_text())
    config.write_text(text.replace("[review]\n", "[review]\njudges = 0\n"))
    (check,) = check_review(load_settings(settings.home), Options())
    assert check.status == "warn" and "judges = 0" in check.detail and "draft" in check.detail


def test_doctor_says_not_checked_never_ok_when_quick_skips_the_dry_run(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        "[compute]\n", '[compute]\nsetup = ["true"]\n', 1))
    done = doctor(settings.home, "--quick")
    for name in ("review panel", "compute setup"):
        line = line_of(done, name)
        assert line.startswith("warn") and "not checked (--quick)" in line, line


def test_doctor_quotes_the_failing_setup_line_when_a_local_job_runs_it(tmp_path: Path) -> None:
    settings = make_home(tmp_path, extra_toml="")
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        "[compute]\n", '[compute]\nsetup = ["true", "ls /no/such/dir"]\n', 1))
    done = doctor(settings.home)
    assert done.returncode == 1
    line = line_of(done, "compute setup")
    assert line.startswith("FAIL")
    assert "[compute] setup line 2 failed: ls /no/such/dir" in line
    assert str(settings.home / "cache" / "doctor" / "node") in line


def test_doctor_fails_naming_the_variable_and_the_driver_when_cron_would_not_set_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    settings = make_home(tmp_path)
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        "[compute]\n", '[compute]\npass_env = ["DOCTOR_PROBE_PROXY"]\n', 1))
    monkeypatch.delenv("DOCTOR_PROBE_PROXY", raising=False)
    done = doctor(settings.home, "--quick", "--driver", "cron")
    assert done.returncode == 1
    line = line_of(done, "pass_env (cron)")
    assert line.startswith("FAIL") and "DOCTOR_PROBE_PROXY not set" in line
    assert "-> fix:" in line and "crontab" in line
    monkeypatch.setenv("DOCTOR_PROBE_PROXY", "http://proxy.example:3128")
    here = doctor(settings.home, "--quick", "--driver", "local")
    assert line_of(here, "pass_env").startswith("ok"), here.stdout


# --- the tick driver: found, and fired --------------------------------------------


@pytest.fixture
def crontab(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A stand-in ``crontab`` on PATH whose table holds this home's line."""
    settings = make_home(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    line = (f"*/10 * * * * {sys.executable} -m outerloop tick --quiet --home "
            f"{settings.home} {CRON_MARKER}{settings.home}")
    script = bin_dir / "crontab"
    script.write_text(f"#!/bin/sh\ncat <<'END'\n{line}\nEND\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    yield settings.home


@pytest.fixture
def cron_running(tmp_path: Path) -> Iterator[None]:
    """A process named ``cron`` (a copy of ``sleep``): what doctor looks for."""
    stand_in = tmp_path / "cron"
    sleep = shutil.which("sleep", path="/usr/bin:/bin")
    assert sleep is not None
    shutil.copy(sleep, stand_in)
    process = subprocess.Popen([str(stand_in), "120"])
    try:
        yield
    finally:
        process.kill()
        process.wait()


def test_doctor_fails_the_crontab_line_when_no_cron_daemon_runs(crontab: Path) -> None:
    if cron_daemon() is not False:
        pytest.skip("a cron daemon runs here (or processes are hidden): nothing to prove")
    (check,) = check_tick_driver(load_settings(crontab))
    assert check.status == "fail", check.line()
    assert "crontab line */10 * * * *" in check.detail and "no cron daemon" in check.detail
    assert "cron" in check.fix and "--mode resident" in check.fix


def _age_heartbeat(settings: Settings) -> None:
    """The last tick's heartbeat, as if it were years old."""
    beat = settings.home / HEARTBEAT_FILE
    data = json.loads(beat.read_text())
    beat.write_text(json.dumps({**data, "time": "2020-01-01T00:00:00.000000Z"}))


def test_doctor_judges_the_crontab_line_by_the_heartbeat_when_cron_runs(
        crontab: Path, cron_running: None) -> None:
    settings = load_settings(crontab)
    (never,) = check_tick_driver(settings)
    assert never.status == "warn" and "no tick has run yet" in never.detail
    run_tick(settings)
    (fresh,) = check_tick_driver(settings)
    assert fresh.status == "ok" and "last tick" in fresh.detail, fresh.line()
    _age_heartbeat(settings)
    (stale,) = check_tick_driver(settings)
    assert stale.status == "fail" and "it is not firing" in stale.detail
    assert str(settings.home / "cron.log") in stale.fix


def test_doctor_fails_when_ticks_stopped_and_no_driver_is_left(tmp_path: Path) -> None:
    # a resident chain an admin cancelled leaves no driver behind, only an old heartbeat
    settings = make_home(tmp_path)
    (never,) = check_tick_driver(settings)
    assert never.status == "warn" and "last tick" not in never.detail
    run_tick(settings)
    (fresh,) = check_tick_driver(settings)
    assert fresh.status == "warn" and "last tick" in fresh.detail, fresh.line()
    _age_heartbeat(settings)
    (stopped,) = check_tick_driver(settings)
    assert stopped.status == "fail", stopped.line()
    assert "ticks stopped" in stopped.detail and "outerloop start" in stopped.fix
    assert "sacct -X --name outerloop-resident-" in stopped.fix


def test_doctor_prints_each_check_as_it_finishes_while_a_slow_one_still_runs(
        tmp_path: Path) -> None:
    """Doctor's lines stream (issue 51): the compute-node job here waits for a file the
    test writes only after doctor has printed its first lines, so those lines were
    printed while doctor still ran, not all at once at its end."""
    go = tmp_path / "go"
    settings = make_home(tmp_path, extra_toml="")
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        "[compute]\n", f'[compute]\nsetup = ["while [ ! -e {go} ]; do sleep 0.2; done"]\n', 1))
    proc = subprocess.Popen([sys.executable, "-m", "outerloop", "doctor", "--home",
                             str(settings.home)], stdout=subprocess.PIPE, text=True)
    lines: queue.Queue[str] = queue.Queue()
    assert proc.stdout is not None
    reader = threading.Thread(target=lambda: [lines.put(x) for x in proc.stdout or ()],
                              daemon=True)
    reader.start()
    try:
        # the node job cannot end before `go` exists: doctor without streaming prints
        # nothing until it gives up on the job (compute_node.WAIT_S), and this fails
        first = lines.get(timeout=120)
        assert " home" in first, first
        assert proc.poll() is None, "doctor ended before the node job could"
        go.touch()
        assert proc.wait(timeout=300) in (0, 1)
        reader.join(timeout=30)
    finally:
        go.touch()
        proc.kill()
    rest = "".join(lines.get_nowait() for _ in range(lines.qsize()))
    setup = next(line for line in (first + rest).splitlines() if "  compute setup:" in line)
    assert setup.startswith("ok"), setup


@pytest.mark.parametrize("setup,seen", [("export PATH=/usr/bin:/bin", "FAIL"), ("true", "ok")])
def test_doctor_runs_the_agent_cli_where_jobs_run_not_only_on_the_login_node(
        tmp_path: Path, setup: str, seen: str) -> None:
    """The CLI on the login node's PATH only (a setup line resets PATH, as a compute
    node without it would): the job's own `--version` fails it (issue 51), and an
    agent CLI the job finds passes with its version."""
    bindir = tmp_path / "login-bin"
    bindir.mkdir()
    cli = bindir / "fakeclaude"
    cli.write_text("#!/bin/sh\necho '9.9.9 (Fake Code)'\n")
    cli.chmod(0o755)
    settings = make_home(tmp_path)
    config = settings.home / "outerloop.toml"
    text = config.read_text().replace(
        '[harness]\nkind = "scripted"\n', '[harness]\nkind = "claude"\nbinary = "fakeclaude"\n', 1)
    config.write_text(text.replace("[compute]\n", f'[compute]\nsetup = ["{setup}"]\n', 1))
    env = {**os.environ, "PATH": f"{bindir}:{os.environ['PATH']}"}
    done = subprocess.run([sys.executable, "-m", "outerloop", "doctor", "--home",
                           str(settings.home)], capture_output=True, text=True, timeout=300,
                          env=env)
    assert line_of(done, "harness (claude) binary").startswith("ok"), done.stdout
    line = line_of(done, "agent CLI on a compute node")
    assert line.startswith(seen), line
    if seen == "FAIL":
        assert "agent CLI 'fakeclaude' not found" in line and "[compute] setup" in line
    else:
        assert "fakeclaude 9.9.9 (Fake Code)" in line
