"""``outerloop start`` without Slurm: the cron line, the local loop, and the resident
dry run's sbatch line (checked against a real Slurm in tests/slurm)."""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.config import Settings, load_settings
from outerloop.errors import ConfigError
from outerloop.home import init_home
from outerloop.kernel.start import CRON_MARKER, cron_line, cron_schedule, resident_name


def home(tmp_path: Path, compute: str = "local") -> Settings:
    init_home(tmp_path / "home", forge="local", compute=compute, harness="scripted",
              targets=[], script=None)
    return load_settings(tmp_path / "home")


def start(settings: Settings, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", "start", "--home",
                           str(settings.home), *args], capture_output=True, text=True,
                          timeout=120, check=False)


def test_cron_line_ticks_every_cadence_quietly_when_printed(tmp_path: Path) -> None:
    settings = home(tmp_path)
    line = cron_line(settings, "/opt/slurm/bin:/usr/bin")
    assert line.startswith("*/10 * * * * PATH=/opt/slurm/bin:/usr/bin ")
    assert "tick --quiet --home" in line and line.endswith(f"{CRON_MARKER}{settings.home}")
    printed = start(settings, "--mode", "cron")
    assert printed.returncode == 0 and "outerloop tick --quiet" in printed.stdout


STAND_IN_CRONTAB = """#!/bin/sh
# A stand-in for crontab(1) over one file: -l prints the table (exit 1 when there is
# none, as cron does), - replaces it with stdin.
table="$(dirname "$0")/table"
case "$1" in
  -l) [ -f "$table" ] || { echo "no crontab for $(id -un)" >&2; exit 1; }; cat "$table" ;;
  -) cat > "$table" ;;
  *) exit 2 ;;
esac
"""


def cron_start(settings: Settings, bin_dir: Path, *args: str) -> subprocess.CompletedProcess[str]:
    import os

    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ.get('PATH', '')}"}
    return subprocess.run([sys.executable, "-m", "outerloop", "start", "--home",
                           str(settings.home), "--mode", "cron", *args], capture_output=True,
                          text=True, timeout=120, check=False, env=env)


def test_uninstall_removes_only_this_homes_line_that_install_added(tmp_path: Path) -> None:
    settings = home(tmp_path)
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "crontab").write_text(STAND_IN_CRONTAB)
    (bin_dir / "crontab").chmod(0o755)
    other = "0 3 * * * backup.sh"
    (bin_dir / "table").write_text(other + "\n")
    installed = cron_start(settings, bin_dir, "--install")
    assert installed.returncode == 0, installed.stderr
    removal = f"outerloop start --mode cron --uninstall --home {settings.home}"
    assert f"remove it with: {removal}" in installed.stdout
    table = (bin_dir / "table").read_text().splitlines()
    assert table[0] == other and table[1].endswith(f"{CRON_MARKER}{settings.home}")
    removed = cron_start(settings, bin_dir, "--uninstall")
    assert removed.returncode == 0, removed.stderr
    assert "removed from your crontab" in removed.stdout and table[1] in removed.stdout
    assert (bin_dir / "table").read_text() == other + "\n"
    again = cron_start(settings, bin_dir, "--uninstall")
    assert again.returncode == 0 and "nothing removed" in again.stdout


def test_install_or_uninstall_is_refused_when_the_mode_is_not_cron(tmp_path: Path) -> None:
    settings = home(tmp_path)
    done = start(settings, "--mode", "local", "--uninstall")
    assert done.returncode == 1 and "--mode cron" in done.stderr


def test_generated_cron_file_says_how_to_install_and_remove_its_line(tmp_path: Path) -> None:
    settings = home(tmp_path)
    assert start(settings, "--mode", "files", "--out", str(tmp_path / "out")).returncode == 0
    text = (tmp_path / "out" / "outerloop.cron").read_text()
    assert f"# remove:  outerloop start --mode cron --uninstall --home {settings.home}" in text


@pytest.mark.parametrize(("compute", "driver", "not_driver"), [
    ("slurm", "outerloop start --mode resident --home", "--mode local"),
    ("local", "outerloop start --mode local --home", "--mode resident"),
])
def test_init_names_the_tick_driver_that_fits_its_compute(
        tmp_path: Path, compute: str, driver: str, not_driver: str) -> None:
    home_dir = tmp_path / "home"
    done = subprocess.run([sys.executable, "-m", "outerloop", "init", "--home", str(home_dir),
                           "--compute", compute], capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert driver in done.stdout and not_driver not in done.stdout
    assert f"outerloop start --mode cron --uninstall --home {home_dir}" in done.stdout


def test_local_loop_ticks_and_prints_a_status_line_when_run_in_the_foreground(
        tmp_path: Path) -> None:
    settings = home(tmp_path)
    done = start(settings, "--mode", "local", "--ticks", "2", "--cadence-seconds", "0.2")
    assert done.returncode == 0, done.stderr
    assert [line.split(":")[0] for line in done.stdout.splitlines()] == ["tick 1", "tick 2"]
    assert (settings.home / "heartbeat.json").exists()


@pytest.mark.parametrize("inherited", ["default", "ignored"])
def test_local_loop_stops_cleanly_when_interrupted(tmp_path: Path, inherited: str) -> None:
    """Ctrl-C while the loop waits for its next tick: "stopped", exit 0, lock free.

    The interrupt is sent once the first tick has printed its line (not when its
    heartbeat appears, which is mid-tick: under load that raced the tick itself).
    ``ignored``: started the way a script's background job (``outerloop start &``) or
    anything under it is, with SIGINT ignored, so Python installs no handler of its own;
    the loop still stops on ``kill -INT``."""
    import signal

    def ignore_sigint() -> None:
        signal.signal(signal.SIGINT, signal.SIG_IGN)

    settings = home(tmp_path)
    proc = subprocess.Popen([sys.executable, "-m", "outerloop", "start", "--home",
                             str(settings.home), "--mode", "local", "--cadence-seconds", "600"],
                            stdout=subprocess.PIPE, text=True,
                            preexec_fn=ignore_sigint if inherited == "ignored" else None)
    assert proc.stdout is not None
    first = proc.stdout.readline()  # blocks until the first tick is over
    assert first.startswith("tick 1: "), first
    proc.send_signal(signal.SIGINT)
    out, _ = proc.communicate(timeout=120)
    assert proc.returncode == 0 and "stopped" in out
    after = subprocess.run([sys.executable, "-m", "outerloop", "tick", "--home",
                            str(settings.home)], capture_output=True, text=True, timeout=120)
    assert after.returncode == 0 and "another tick is running" not in after.stdout


def test_resident_dry_run_prints_a_singleton_sbatch_line_when_compute_is_slurm(
        tmp_path: Path) -> None:
    settings = home(tmp_path, compute="slurm")
    done = start(settings, "--mode", "resident", "--dry-run", "--walltime-minutes", "90")
    argv = shlex.split(done.stdout.strip())
    assert argv[:2] == ["sbatch", "--parsable"]
    assert f"--job-name={resident_name(settings.home)}" in argv
    assert "--dependency=singleton" in argv and "--time=90" in argv
    assert not (settings.home / "resident").exists()


def test_resident_mode_is_refused_when_compute_is_local(tmp_path: Path) -> None:
    done = start(home(tmp_path), "--mode", "resident", "--dry-run")
    assert done.returncode != 0 and "kind = \"slurm\"" in done.stderr


@pytest.mark.parametrize(("minutes", "fields"), [
    (1, "* * * * *"), (5, "*/5 * * * *"), (30, "*/30 * * * *"), (60, "0 * * * *"),
    (120, "0 */2 * * *"), (360, "0 */6 * * *"), (1440, "0 0 * * *")])
def test_cron_schedule_fires_at_even_intervals_when_the_cadence_fits_cron(
        minutes: int, fields: str) -> None:
    assert cron_schedule(minutes) == fields


@pytest.mark.parametrize(("minutes", "nearest"), [(45, "30 or 60"), (90, "60 or 120"),
                                                  (7, "6 or 10"), (300, "240 or 360")])
def test_cron_schedule_is_refused_with_the_nearest_cadences_when_cron_cannot_keep_it(
        minutes: int, nearest: str) -> None:
    with pytest.raises(ConfigError) as caught:
        cron_schedule(minutes)
    assert f"tick_minutes = {minutes}" in str(caught.value) and nearest in str(caught.value)


def test_files_mode_writes_drivers_that_use_this_interpreter_when_asked(
        tmp_path: Path) -> None:
    settings = home(tmp_path, compute="slurm")
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        'kind = "slurm"', 'kind = "slurm"\nsetup = ["module load cuda/12.4"]\n\n'
        '[compute.kernel]\npartition = "service"'))
    done = start(settings, "--mode", "files", "--out", str(tmp_path / "out"))
    assert done.returncode == 0, done.stderr
    sbatch = (tmp_path / "out" / "resident.sbatch").read_text()
    assert f"exec {sys.executable} -m outerloop start --mode resident" in sbatch
    assert "#SBATCH --partition=service" in sbatch and "module load cuda/12.4" in sbatch
    service = (tmp_path / "out" / "outerloop-tick.service").read_text()
    assert f"ExecStart={sys.executable} -m outerloop tick --quiet" in service
    assert sys.executable in (tmp_path / "out" / "outerloop.cron").read_text()
    assert "python3 -m" not in (sbatch + service).replace(sys.executable, "")


def test_static_deploy_files_never_fall_back_to_the_system_python_when_read() -> None:
    root = Path(__file__).resolve().parents[2] / "deploy"
    for path in [*root.glob("*"), *root.glob("systemd/*")]:
        if path.is_file():
            text = path.read_text()
            assert "python3 -m outerloop" not in text, path


def test_local_loop_takes_the_demo_target_from_issue_to_pr_within_two_minutes(
        tmp_path: Path) -> None:
    import signal
    import time

    from tests.support import TARGET, forge, make_home, open_issue

    settings = make_home(tmp_path)
    assert settings.cadence.tick_minutes * 60 > 120  # the cadence alone could not do it
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, "-m", "outerloop", "start", "--home",
                             str(settings.home), "--mode", "local"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        while not forge(settings).list_prs(TARGET, "all"):
            assert proc.poll() is None, proc.communicate()
            assert time.monotonic() - started < 120, "no pull request within 2 minutes"
            time.sleep(0.5)
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=60)
    print(f"issue to PR in {time.monotonic() - started:.1f} s")


def test_job_watch_wakes_once_when_a_local_job_ends(tmp_path: Path) -> None:
    import time

    from outerloop.compute.base import JobSpec
    from outerloop.compute.factory import make_compute
    from outerloop.kernel.start import JobWatch, wait_s

    settings = home(tmp_path)
    job = make_compute(settings).submit(JobSpec(
        name="short", command="sleep 1", workdir=str(tmp_path), log_dir=str(tmp_path / "logs"),
        time_minutes=1))
    watch = JobWatch(settings)
    watch.watched = [job]
    assert not watch.one_ended()
    deadline = time.monotonic() + 30
    while not watch.one_ended():
        assert time.monotonic() < deadline, "the job's end was never seen"
        time.sleep(0.2)
    assert not watch.one_ended()  # seen once: no tick every second after it
    assert wait_s(600, live_jobs=1) == 30 and wait_s(600, live_jobs=0) == 600


PROXY = "http://proxy.example:3128/a b%x"
"""A value a driver must quote: a space, and a ``%`` (cron reads a bare one as a newline,
systemd as a specifier)."""


def test_every_generated_driver_carries_pass_env_when_written_for_a_home(
        tmp_path: Path) -> None:
    """cron, systemd and a hand-submitted ``sbatch --export=NONE`` start the tick with
    none of the operator's variables, and jobs copy ``pass_env`` from the tick: each
    generated driver sets them itself (issue 23: jobs printed ``https_proxy=None``). A
    name unset where the files are made is named on stderr."""
    settings = home(tmp_path, compute="slurm")
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        'kind = "slurm"', 'kind = "slurm"\npass_env = ["HTTPS_PROXY", "HF_HOME", "NO_PROXY"]'))
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HTTPS_PROXY": PROXY,
           "NO_PROXY": "localhost,.example"}
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "outerloop", "start", "--home",
                           str(settings.home), "--mode", "files", "--out", str(out)],
                          capture_output=True, text=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    assert "pass_env names HF_HOME, which is not set here" in done.stderr
    wanted = {"HTTPS_PROXY": PROXY, "NO_PROXY": "localhost,.example"}

    cron = next(line for line in (out / "outerloop.cron").read_text().splitlines()
                if line and not line.startswith("#"))  # after the install/remove comments
    command = cron.split(" ", 5)[5].replace("\\%", "%")  # what cron hands to sh
    assert "%" not in cron.replace("\\%", "")
    words = shlex.split(command)
    assigned = dict(w.split("=", 1) for w in words[:words.index(sys.executable)])
    assert {k: assigned.get(k) for k in wanted} == wanted

    sbatch = (out / "resident.sbatch").read_text()
    exports = "\n".join(line for line in sbatch.splitlines() if line.startswith("export "))
    shown = subprocess.run(["bash", "-c", f"{exports}\nenv"], capture_output=True, text=True,
                           env={}, check=True).stdout
    seen = dict(line.split("=", 1) for line in shown.splitlines() if "=" in line)
    assert {k: seen.get(k) for k in wanted} == wanted

    service = (out / "outerloop-tick.service").read_text()
    lines = [line for line in service.splitlines() if line.startswith('Environment="')]
    unit = dict(line[len('Environment="'):-1].replace("%%", "%").replace('\\"', '"')
                .split("=", 1) for line in lines)
    assert {k: unit.get(k) for k in wanted} == wanted

    printed = subprocess.run([sys.executable, "-m", "outerloop", "start", "--home",
                              str(settings.home), "--mode", "cron"], capture_output=True,
                             text=True, timeout=120, env=env, check=False)
    assert printed.stdout.strip() == cron
