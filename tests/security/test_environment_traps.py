"""An interpreter the sandbox cannot read is named, with the fix, never blamed on the agent.

The operator's ``python3`` comes from pyenv: a shim on ``PATH`` that execs
``$PYENV_ROOT/libexec/pyenv``, which runs ``$PYENV_ROOT/versions/<v>/bin/python3``. The
shim's directory is on ``PATH`` (granted); ``libexec`` is not. Inside the sandbox every
``python3`` is refused, so the agent can never run its own tool. Through real ticks
(as real ``outerloop tick`` processes with that ``PATH``): ``doctor`` fails naming the
shim, what it runs and the ``[sandbox] read_only`` fix; the first tick prints it; a
run whose job meets it waits saying the environment is broken (never ending as if the
agent gave up) and goes on once the grant is added. A venv inside
the home (its directory can never be granted) is caught at the probe, on each backend.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from outerloop.sandbox import Confinement
from outerloop.sandbox.bwrap import BwrapSandbox
from outerloop.sandbox.landlock import LandlockSandbox
from outerloop.sandbox.resolve import bwrap_problem, landlock_problem
from outerloop.sandbox.traps import Needed, find_traps, pythons_on
from tests.support import (
    TARGET,
    ended,
    forge,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    state_of,
    tick_process,
    tick_until,
)

pytestmark = pytest.mark.security

SHIM = """#!/usr/bin/env bash
set -e
program="${{0##*/}}"

export PYENV_ROOT="{root}"
exec "{root}/libexec/pyenv" exec "$program" "$@"
"""
PYENV = """#!/usr/bin/env bash
set -e
command="$1"; shift
case "$command" in
  which) echo "$PYENV_ROOT/versions/3.11/bin/$1" ;;
  exec) program="$1"; shift; exec "$PYENV_ROOT/versions/3.11/bin/$program" "$@" ;;
  *) echo "pyenv: no such command '$command'" >&2; exit 1 ;;
esac
"""


def fake_pyenv(root: Path, python: str = sys.executable) -> Path:
    """A pyenv root shaped like the real one; returns its ``shims`` directory."""
    for part in ("shims", "libexec", "versions/3.11/bin"):
        (root / part).mkdir(parents=True, exist_ok=True)
    (root / "libexec" / "pyenv").write_text(PYENV)
    for name in ("python3", "python"):
        (root / "shims" / name).write_text(SHIM.format(root=root))
        (root / "versions" / "3.11" / "bin" / name).symlink_to(python)
    for script in [root / "libexec" / "pyenv", *(root / "shims").iterdir()]:
        script.chmod(0o755)
    return root / "shims"


def _script(path: Path) -> Path:
    legs: list[list[dict[str, Any]]] = [[
        {"shell": "echo '# nothing to gain' > stop.md"},
        {"shell": "python3 .outerloop/syscall stop --report stop.md"},
    ]]
    path.write_text(yaml.safe_dump({"legs": legs}, sort_keys=False))
    return path


def _cli(home: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "outerloop", *args, "--home", str(home)],
                          capture_output=True, text=True, env={**os.environ, **env},
                          timeout=300)


def _trapped_home(tmp_path: Path, kind: str, setup: str = "") -> tuple[Any, Path, dict[str, str]]:
    """A home whose ``[sandbox]`` (``kind``) is the file's last section."""
    if (why := BACKENDS[kind][1]()) is not None:
        pytest.skip(f"{kind} cannot start here: {why}")
    made = make_home(tmp_path, _script(tmp_path / "a.yaml"),
                     extra_toml=f'[sandbox]\nkind = "{kind}"\n')
    if setup:
        config = made.home / "outerloop.toml"
        config.write_text(config.read_text().replace("[compute]\n", f"[compute]\n{setup}\n", 1))
    settings = jobs_import_this_checkout(made)
    root = tmp_path / "pyenv"
    shims = fake_pyenv(root)
    return settings, root, {"PATH": f"{shims}:/usr/local/bin:/usr/bin:/bin"}


def _posts(settings: Any, number: int) -> list[str]:
    return [c.body for c in forge(settings).list_comments(TARGET, number)
            if c.author == settings.forge.login]


@pytest.mark.e2e
@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_unreadable_pyenv_python_is_named_and_holds_new_runs_when_doctor_and_tick_meet_it(
        tmp_path: Path, kind: str) -> None:
    settings, root, env = _trapped_home(tmp_path, kind)
    home, shims = settings.home, root / "shims"
    fix = f'[sandbox] read_only = ["{root}"]'

    doctor = _cli(home, env, "doctor")
    assert doctor.returncode == 1
    failing = [line for line in doctor.stdout.splitlines() if line.startswith("FAIL")]
    assert any("environment" in line and f"{shims}/python3" in line
               and f"{root}/versions/3.11/bin/python3" in line and fix in line
               for line in failing), doctor.stdout

    number = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    first = tick_process(settings, env)
    assert f"{shims}/python3" in first.stdout and fix in first.stdout, first.stdout
    again = tick_process(settings, env)
    assert fix in again.stdout  # said every tick while it holds
    assert state_of(settings).runs == {}  # nothing claimed: every session would fail
    waits = [b for b in _posts(settings, number) if "environment is broken" in b]
    assert len(waits) == 1 and str(root) not in waits[0]  # paths stay the operator's

    config = home / "outerloop.toml"
    config.write_text(config.read_text() + f'read_only = ["{root}"]\n')
    fixed = _cli(home, env, "doctor")
    verdicts = [line.split()[0] for line in fixed.stdout.splitlines() if "environment:" in line]
    assert verdicts == ["ok"], fixed.stdout
    state = tick_until(settings, lambda s: ended(s) and all(
        r.report_posted for r in s.runs.values()), timeout_s=180, subprocess_ticks=True,
        env=env)
    (run,) = state.runs.values()
    assert run.ending == "negative-result" and "the agent stopped" in (run.report or "")


@pytest.mark.e2e
@pytest.mark.parametrize("install", ["pyenv", "venv"])
@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_run_waits_saying_the_environment_is_broken_when_its_job_meets_the_trap(
        tmp_path: Path, kind: str, install: str) -> None:
    """With ``[compute] setup`` lines a job may fix its own PATH, so the tick does not
    hold; the attempt job proves its own environment before the first leg. A trap is
    the deployment's (issue 23): the run waits, saying so with the fix, costs no claim
    and is not ended as if the agent gave up; once the operator adds the grant the run
    goes on. The venv variant: only its ``bin`` is on PATH, its ``pyvenv.cfg`` is not
    granted."""
    settings, root, env = _trapped_home(tmp_path, kind, 'setup = ["true"]')
    if install == "venv":
        root = tmp_path / "venvs" / "v"
        subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
        env = {"PATH": f"{root / 'bin'}:/usr/local/bin:/usr/bin:/bin"}
    number = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, lambda s: any(s.machine_wait(r) is not None
                                               for r in s.runs.values()),
                       timeout_s=180, subprocess_ticks=True, env=env)
    (run,) = state.runs.values()
    wait = state.machine_wait(run)
    assert wait is not None and not run.ended
    assert "environment broken" in wait.message and f'read_only = ["{root}"]' in wait.message
    status = _cli(settings.home, env, "status")
    assert "environment broken" in status.stdout, status.stdout
    posts = _posts(settings, number)
    assert not [b for b in posts if b.startswith(f"# Run {run.run_id}")]  # not ended
    assert len([b for b in posts if "delayed" in b]) == 1

    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text() + f'read_only = ["{root}"]\n')
    state = tick_until(settings, lambda s: ended(s) and all(
        r.report_posted for r in s.runs.values()), timeout_s=180, subprocess_ticks=True,
        env=env)
    (after,) = state.runs.values()
    assert after.run_id == run.run_id
    assert after.ending == "negative-result" and "the agent stopped" in (after.report or "")


BACKENDS = {"landlock": (LandlockSandbox, landlock_problem),
            "bwrap": (BwrapSandbox, bwrap_problem)}


@pytest.mark.parametrize("kind", sorted(BACKENDS))
def test_venv_inside_the_home_is_caught_with_the_move_fix_when_probed(
        tmp_path: Path, kind: str) -> None:
    make, problem = BACKENDS[kind]
    if (why := problem()) is not None:
        pytest.skip(f"{kind} cannot start here: {why}")
    home = tmp_path / "home"
    (home / "runs").mkdir(parents=True)
    venv = home / "tools" / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    path_var = f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    confinement = Confinement(sandbox=make(), home=home)
    needed = pythons_on(path_var)
    assert needed and needed[0].argv[0] == str(venv / "bin" / "python3")
    traps = find_traps(confinement, needed, path_var, home)
    assert traps and traps[0].path == str(venv / "bin" / "python3")
    assert f"move {venv}" in traps[0].fix and "out of the outerloop home" in traps[0].fix
    clean = Needed("the system python", ("/usr/bin/python3", "-c", "pass"))
    assert find_traps(confinement, [clean], path_var, home) == []
    assert traps[0].message().startswith("environment broken: ")


@pytest.mark.parametrize("kind", sorted(BACKENDS))
def test_venv_outside_the_home_is_caught_with_the_read_only_fix_when_probed(
        tmp_path: Path, kind: str) -> None:
    """Only the venv's ``bin`` is on PATH (granted): Landlock refuses its ``pyvenv.cfg``;
    bwrap hides it, and the interpreter silently starts as the base one without the
    venv's packages (caught by comparing ``sys.prefix`` inside and outside)."""
    make, problem = BACKENDS[kind]
    if (why := problem()) is not None:
        pytest.skip(f"{kind} cannot start here: {why}")
    home = tmp_path / "home"
    (home / "runs").mkdir(parents=True)
    venv = tmp_path / "venvs" / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    path_var = f"{venv / 'bin'}:/usr/local/bin:/usr/bin:/bin"
    confinement = Confinement(sandbox=make(), home=home)
    traps = find_traps(confinement, pythons_on(path_var), path_var, home)
    assert traps and f'read_only = ["{venv}"' in traps[0].fix, traps
    granted = Confinement(sandbox=make(), home=home, read_only=(str(venv),))
    assert find_traps(granted, pythons_on(path_var), path_var, home) == []


@pytest.mark.parametrize("user", ["root", "unprivileged"])
@pytest.mark.parametrize("kind", sorted(BACKENDS))
def test_pyenv_shim_is_refused_and_the_named_fix_works_when_run_as_each_user(
        kind: str, user: str) -> None:
    """The trap and its fix hold for an unprivileged operator too (the probe level: the
    confined shim run as ``nobody`` with a home it owns)."""
    from tests.security.fixtures import (
        SYSTEM_PYTHON,
        UNPRIVILEGED_UID,
        as_user,
        backend,
        children_of,
        chown,
        fixture,
        skip_reason,
    )

    uid = UNPRIVILEGED_UID if user == "unprivileged" else None
    if (why := skip_reason(kind, uid)) is not None:
        pytest.skip(why)
    with fixture(uid) as fx:
        root = fx.root / "pyenv"
        shims = fake_pyenv(root, SYSTEM_PYTHON if uid is not None else sys.executable)
        chown(fx)
        results = []
        for read_only in ((), (str(root),)):
            confinement = Confinement(sandbox=backend(kind, fx), home=fx.home, user=children_of(fx),
                                      read_only=read_only)
            env = {"PATH": f"{shims}:/usr/bin:/bin", "HOME": str(fx.run_home)}
            argv, env = confinement.command([str(shims / "python3"), "-c", "print('ran')"],
                                            env, workdir=fx.ws, scratch=fx.run_home)
            chown(fx)
            results.append(subprocess.run([*as_user(uid), *argv], env=env, cwd=fx.ws,
                                          capture_output=True, text=True, timeout=60))
        refused, fixed = results
        assert refused.returncode != 0 and "libexec/pyenv" in refused.stderr, refused
        assert fixed.returncode == 0 and fixed.stdout.strip() == "ran", fixed


@pytest.mark.parametrize("kind", ["landlock"])
def test_a_known_trap_is_said_from_the_kept_proof_until_it_is_due_again(
        tmp_path: Path, kind: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Proving starts every needed command confined: a tick that already found the trap
    says it again from the kept proof, and proves again ``TRAP_RECHECK_S`` later; a fix
    the fingerprint does not see (the shims made plain links) shows then."""
    from outerloop import clock
    from outerloop.harness.needs import TRAP_RECHECK_S, tick_notes

    settings, root, env = _trapped_home(tmp_path, kind)
    monkeypatch.setenv("PATH", env["PATH"])
    first = tick_notes(settings)
    assert first and all(t.startswith("environment broken") and str(root) in t for t in first)
    for name in ("python3", "python"):  # fixed where the fingerprint cannot see
        shim = root / "shims" / name
        shim.unlink()
        shim.symlink_to(sys.executable)
    assert tick_notes(settings) == first  # from the kept proof: not proved again
    monkeypatch.setattr(clock, "_shift", clock._shift)
    clock.shift(TRAP_RECHECK_S + 1)
    assert tick_notes(settings) == []  # due again: proved, and clean
    (root / "shims" / "python3").unlink()  # broken again: a clean proof holds
    assert tick_notes(settings) == []


def test_an_earlier_versions_bare_proof_is_clean_and_a_malformed_one_proved_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from outerloop.harness import needs

    settings, _root, env = _trapped_home(tmp_path, "landlock")
    monkeypatch.setenv("PATH", env["PATH"])
    proved = settings.home / needs.PROVED_FILE
    proved.parent.mkdir(parents=True, exist_ok=True)
    proved.write_text(needs._fingerprint(settings, needs.children_path()) + "\n")
    assert needs.tick_notes(settings) == []  # read back as a clean proof: not proved
    proved.write_text('{"mark": 1, "traps": [], "at": 0}\n')
    notes = needs.tick_notes(settings)
    assert notes and all(n.startswith("environment broken") for n in notes)
