"""``[sandbox] eval_only`` through the real backends: only a scorer reads held-out data.

Each backend, as root and as an unprivileged user, confines a small reader the way a
session (``Confinement.command``), a launch or an eval (``Confinement.shell``, a job's
shell command) and a scorer (``scorer=True``) are confined, and asks it to read a file
under an eval-only host directory. Only the scorer may; the positive control (a file in
its own checkout) shows every denial comes from the grants. ``declared_writes=False``
(an eval) reaches no ``[sandbox] read_write`` path at all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.sandbox import Confinement
from tests.security.fixtures import (
    SYSTEM_PYTHON,
    UNPRIVILEGED_UID,
    Fixture,
    as_user,
    backend,
    children_of,
    chown,
    fixture,
    skip_reason,
)

pytestmark = pytest.mark.security

USERS = {"root": None, "unprivileged": UNPRIVILEGED_UID}
KINDS = ["landlock", "bwrap"]
LABELS = "id,label\n0,a\n"
READER = """
import errno, json, sys
out = {}
for name, path, write in json.loads(sys.argv[1]):
    try:
        if write:
            open(path, "a").write("x")
        else:
            open(path).read()
        out[name] = "ok"
    except OSError as exc:
        out[name] = errno.errorcode.get(exc.errno or 0, str(exc))
print(json.dumps(out))
"""


def _layout(fx: Fixture) -> tuple[Path, Path]:
    held = fx.root / "heldout"
    held.mkdir()
    (held / "test_labels.csv").write_text(LABELS)
    cache = fx.root / "cache"
    cache.mkdir()
    (cache / "entry").write_text("cached\n")
    if (child := children_of(fx)) is not None:  # the operator opens its cache to the child
        for path in (cache, cache / "entry"):  # user (docs/security.md, "Root")
            os.chown(path, *child)
    (fx.ws / "own.txt").write_text("mine\n")
    return held, cache


def _attempts(fx: Fixture, held: Path, cache: Path) -> str:
    return json.dumps([["eval_only", str(held / "test_labels.csv"), False],
                       ["own", str(fx.ws / "own.txt"), False],
                       ["read_write", str(cache / "entry"), True]])


def _run_command(fx: Fixture, kind: str, scorer: bool, declared_writes: bool = True
                 ) -> dict[str, str]:
    held, cache = _layout(fx)
    confinement = Confinement(sandbox=backend(kind, fx), home=fx.home, user=children_of(fx),
                              read_write=(str(cache),), eval_only=(str(held),))
    python = sys.executable if fx.uid is None else SYSTEM_PYTHON
    env = {"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(fx.run_home), "LANG": "C.UTF-8"}
    argv, env = confinement.command([python, "-c", READER, _attempts(fx, held, cache)], env,
                                    workdir=fx.ws, scratch=fx.run_home, scorer=scorer,
                                    declared_writes=declared_writes)
    chown(fx)
    done = subprocess.run([*as_user(fx.uid), *argv], env=env, cwd=fx.ws, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _run_shell(fx: Fixture, kind: str, scorer: bool, declared_writes: bool = True
               ) -> dict[str, str]:
    held, cache = _layout(fx)
    confinement = Confinement(sandbox=backend(kind, fx), home=fx.home, user=children_of(fx),
                              read_write=(str(cache),), eval_only=(str(held),))
    python = "python3" if fx.uid is None else SYSTEM_PYTHON
    (fx.ws / "reader.py").write_text(READER)
    command = f"{python} reader.py '{_attempts(fx, held, cache)}'"
    line = confinement.shell(command, fx.run_home, scorer=scorer,
                             declared_writes=declared_writes)
    chown(fx)
    done = subprocess.run([*as_user(fx.uid), "bash", "-c", line], cwd=fx.ws,
                          env={"PATH": "/usr/local/bin:/usr/bin:/bin", "HOME": str(fx.run_home)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    found: dict[str, str] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


def _skip(kind: str, uid: int | None) -> None:
    reason = skip_reason(kind, uid)
    if reason:
        pytest.skip(f"{kind} cannot run here: {reason}")


@pytest.mark.parametrize("user", sorted(USERS))
@pytest.mark.parametrize("kind", KINDS)
def test_session_cannot_read_an_eval_only_host_path_when_sandboxed(kind: str, user: str) -> None:
    _skip(kind, USERS[user])
    with fixture(USERS[user]) as fx:
        found = _run_command(fx, kind, scorer=False)
    assert found["eval_only"] != "ok" and found["own"] == "ok", found
    assert found["read_write"] == "ok", found  # a session keeps the shared cache


@pytest.mark.parametrize("user", sorted(USERS))
@pytest.mark.parametrize("kind", KINDS)
def test_launch_job_cannot_read_an_eval_only_host_path_when_sandboxed(kind: str,
                                                                     user: str) -> None:
    _skip(kind, USERS[user])
    with fixture(USERS[user]) as fx:
        found = _run_shell(fx, kind, scorer=False)
    assert found["eval_only"] != "ok" and found["own"] == "ok", found


@pytest.mark.parametrize("user", sorted(USERS))
@pytest.mark.parametrize("kind", KINDS)
def test_scorer_reads_the_eval_only_host_path_when_sandboxed(kind: str, user: str) -> None:
    _skip(kind, USERS[user])
    with fixture(USERS[user]) as fx:
        by_command = _run_command(fx, kind, scorer=True, declared_writes=False)
    with fixture(USERS[user]) as fx:
        by_shell = _run_shell(fx, kind, scorer=True, declared_writes=False)
    for found in (by_command, by_shell):
        assert found["eval_only"] == "ok" and found["own"] == "ok", found
        assert found["read_write"] != "ok", found  # evals get no shared writable path


@pytest.mark.parametrize("kind", KINDS)
def test_eval_reaches_no_read_write_path_when_declared_writes_is_off(kind: str) -> None:
    _skip(kind, None)
    with fixture(None) as fx:
        found = _run_shell(fx, kind, scorer=False, declared_writes=False)
        assert (fx.root / "cache" / "entry").read_text() == "cached\n"
    assert found["read_write"] != "ok" and found["own"] == "ok", found
