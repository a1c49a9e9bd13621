"""Environment traps: a command every confined child needs that the sandbox cannot read.

The sandbox grants the system, the kernel's interpreter, the ``PATH`` directories
outside the home and the agent CLI's install directory. A ``python3`` that comes from
pyenv (a shim on ``PATH`` that execs ``$PYENV_ROOT/libexec/pyenv``, which runs
``$PYENV_ROOT/versions/X/bin/python3``), from conda or from a venv is a *file* on a
granted ``PATH`` directory whose interpreter, libraries or ``pyvenv.cfg`` live in
directories that are not granted. Every confined ``python3`` then fails (``EACCES``
under Landlock, ``ENOENT`` under bwrap) or silently runs as another interpreter, and
every run ends as if the agent had given up.

``find_traps`` proves each needed command the only way that is sure: it starts the
command inside the sandbox the children get (``python3 -c ...`` confined, like
``proof.py``) and compares it with the same command unconfined. A failure names the
command, the path it resolves to (a pyenv shim is followed to what it would run) and
the fix: ``[sandbox] read_only = ["<dir>"]``, or moving the install out of the home
when it lies inside it (declared paths may not overlap the home).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from outerloop.sandbox.base import ENVIRONMENT_BROKEN, SandboxError
from outerloop.sandbox.confine import Confinement
from outerloop.sandbox.policy import SYSTEM_READ_ONLY, overlaps, system_read_only

TIMEOUT_S = 30
PROOF_PREFIX = ".environment-proof-"
MAX_SHIM_BYTES = 8 * 1024
MAX_ERROR_CHARS = 300
PYTHON_NAMES = ("python3", "python")
PYTHON_PROBE = "import json, sys; print(json.dumps([sys.prefix, sys.base_prefix]))"
_PYENV_EXEC = re.compile(r'exec\s+"([^"]+/libexec/pyenv)"\s+exec')
_PYENV_ROOT = re.compile(r'export\s+PYENV_ROOT="([^"]+)"')


@dataclass(frozen=True)
class Needed:
    """A command confined children must be able to start: ``argv[0]`` is absolute."""

    what: str
    argv: tuple[str, ...]
    readable: tuple[str, ...] = ()
    """Extra read-only grants the real children get with it (an agent CLI's install dir)."""
    python: bool = False
    """An interpreter: it must also see the prefix it sees unconfined (a venv's)."""


@dataclass(frozen=True)
class Trap:
    """A needed command the sandbox cannot run, with the fix."""

    what: str
    path: str
    resolved: str
    error: str
    fix: str

    def problem(self) -> str:
        via = f" (it runs {self.resolved})" if self.resolved != self.path else ""
        return f"{self.what} {self.path}{via} cannot run inside the sandbox: {self.error}"

    def message(self) -> str:
        return f"{ENVIRONMENT_BROKEN}: {self.problem()}; fix: {self.fix}"


def pythons_on(path_var: str) -> list[Needed]:
    """The ``python3`` and ``python`` a confined shell finds on ``path_var`` (each file
    once), as an interpreter check."""
    found: list[Needed] = []
    seen: set[str] = set()
    for name in PYTHON_NAMES:
        where = shutil.which(name, path=path_var)
        if where is None or os.path.realpath(where) in seen:
            continue
        seen.add(os.path.realpath(where))
        found.append(Needed(f"`{name}` on PATH", (where, "-c", PYTHON_PROBE), python=True))
    return found


def pyenv_shim(path: str) -> tuple[str, str] | None:
    """``(pyenv, PYENV_ROOT)`` when ``path`` is a pyenv shim (a script that execs
    ``$PYENV_ROOT/libexec/pyenv exec <name>``), else None."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(MAX_SHIM_BYTES)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    text = head.decode("utf-8", "replace")
    found = _PYENV_EXEC.search(text)
    if found is None:
        return None
    root = _PYENV_ROOT.search(text)
    pyenv = found.group(1)
    return pyenv, root.group(1) if root else str(Path(pyenv).parent.parent)


def resolve(path: str, path_var: str) -> str:
    """What running ``path`` runs: for a pyenv shim, what ``pyenv which <name>`` names;
    else ``path`` with its symlinks resolved."""
    shim = pyenv_shim(path)
    if shim is not None:
        pyenv, root = shim
        try:
            done = subprocess.run([pyenv, "which", Path(path).name], capture_output=True,
                                  text=True, timeout=TIMEOUT_S, check=False,
                                  env={"PATH": path_var, "PYENV_ROOT": root, "HOME": root})
        except (OSError, subprocess.TimeoutExpired):
            return path
        real = done.stdout.strip().splitlines()[-1:] if done.returncode == 0 else []
        if real and os.path.isabs(real[0]):
            return real[0]  # as pyenv names it (its ``versions/<v>/bin``)
    return os.path.realpath(path)


def _unconfined_prefixes(argv: Sequence[str], path_var: str) -> list[str] | None:
    try:
        done = subprocess.run(list(argv), capture_output=True, text=True, timeout=TIMEOUT_S,
                              env={"PATH": path_var, "LANG": "C.UTF-8"}, check=False)
        prefixes = json.loads(done.stdout.strip().splitlines()[-1])
    except (OSError, subprocess.TimeoutExpired, ValueError, IndexError):
        return None
    return [str(p) for p in prefixes] if isinstance(prefixes, list) else None


def _granted(path: str, granted: Sequence[str]) -> bool:
    return any(Path(path).is_relative_to(g) for g in granted)


def fix_for(needed: Needed, path_var: str, home: Path, resolved: str) -> str:
    """The directories to declare (a pyenv root; an interpreter's prefixes; a CLI's
    directory), or the move when one lies in the home (it cannot be declared)."""
    shim = pyenv_shim(needed.argv[0])
    if shim is not None:
        wanted = [shim[1]]
    elif needed.python:
        prefixes = _unconfined_prefixes(needed.argv, path_var) or []
        wanted = list(dict.fromkeys(os.path.realpath(p) for p in prefixes)) or \
            [str(Path(resolved).parent.parent)]
    else:  # the directory named (a symlink's, which bwrap must mount) and the real one
        wanted = list(dict.fromkeys([str(Path(needed.argv[0]).parent),
                                     *needed.readable, str(Path(resolved).parent)]))
    try:  # what every child reads already (the system, the kernel's interpreter)
        always: Sequence[str] = system_read_only(home)
    except SandboxError:
        always = SYSTEM_READ_ONLY
    wanted = [w for w in wanted if not _granted(w, always)] or wanted
    wanted = [w for w in wanted if not any(Path(w).is_relative_to(o) for o in wanted
                                           if o != w)]
    inside = [w for w in wanted if overlaps(Path(w), Path(os.path.realpath(home)))]
    if inside:
        return (f"move {', '.join(inside)} out of the outerloop home {home} (a path inside "
                f"it can never be granted), or put another {Path(needed.argv[0]).name} "
                f"first on PATH")
    listed = ", ".join(json.dumps(w) for w in wanted)
    real = (f" (or name it by its real path {resolved}: bwrap mounts real paths only)"
            if not needed.python and resolved != needed.argv[0] else "")
    return f"add it to outerloop.toml: [sandbox] read_only = [{listed}]{real}"


def _last_words(done: subprocess.CompletedProcess[str]) -> str:
    lines = (done.stderr or done.stdout).strip().splitlines()
    text = lines[-1].strip() if lines else "no message"
    return f"exit {done.returncode}: {text}"[:MAX_ERROR_CHARS]


def _probe(confinement: Confinement, needed: Needed, path_var: str,
           root: Path) -> str | None:
    """None when ``needed`` starts confined as it does unconfined, else what went wrong."""
    ws, scratch = root / "ws", root / "home"
    ws.mkdir(parents=True, exist_ok=True)
    scratch.mkdir(exist_ok=True)
    env = {"PATH": path_var, "HOME": str(scratch), "LANG": "C.UTF-8"}
    try:
        argv, env = confinement.command(list(needed.argv), env, workdir=ws, scratch=scratch,
                                        readable=needed.readable)
        done = subprocess.run(argv, cwd=ws, env=env, capture_output=True, text=True,
                              timeout=TIMEOUT_S, check=False)
    except subprocess.TimeoutExpired:
        return f"it did not finish within {TIMEOUT_S}s"
    except OSError as exc:
        return f"it could not be started ({exc.strerror})"
    if done.returncode != 0:
        return _last_words(done)
    if needed.python:
        outside = _unconfined_prefixes(needed.argv, path_var)
        try:
            inside = json.loads(done.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            inside = None
        if outside is not None and inside != outside:
            return (f"it starts, but as {inside[0] if inside else 'another interpreter'} "
                    f"instead of {outside[0]} (the sandbox cannot read its prefix, so its "
                    f"packages are missing)")
    return None


def find_traps(confinement: Confinement, needed: Sequence[Needed], path_var: str,
               home: Path) -> list[Trap]:
    """Start each of ``needed`` inside ``confinement`` (the children's) and return the
    ones that fail there. Nothing to find under ``off`` (nothing is confined). A grant
    the sandbox refuses (``SandboxError``) is reported by ``doctor``'s sandbox check."""
    if confinement.kind == "off":
        return []
    root = home / "runs" / f"{PROOF_PREFIX}{uuid.uuid4().hex[:8]}"
    traps: list[Trap] = []
    try:
        for item in needed:
            try:
                error = _probe(confinement, item, path_var, root)
            except SandboxError:
                continue
            if error is None:
                continue
            resolved = resolve(item.argv[0], path_var)
            traps.append(Trap(item.what, item.argv[0], resolved, error,
                              fix_for(item, path_var, home, resolved)))
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return traps
