"""Confine one child: the function every spawner of agent-authored code calls.

``Confinement.command`` turns ``(argv, env)`` into the confined argv and the env the
child needs inside (``TMPDIR`` in its scratch dir: ``/tmp`` is not granted).
``Confinement.shell`` does the same for a job's shell command, run by the job script
or the local runner, whose own code stays outside the sandbox. ``for_run`` builds the
confinement a run's sessions, launches and evals share (and a review session's).
"""

from __future__ import annotations

import dataclasses
import functools
import os
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from outerloop.config import Settings, environ
from outerloop.sandbox import beneath, handover, policy
from outerloop.sandbox.base import CWD, Grants, Kind, Sandbox, SandboxError, shell_words
from outerloop.sandbox.resolve import for_children
from outerloop.sandbox.uid import child_ids

TMP_DIR = "tmp"
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
NO_GRANTS = Grants(read_only=(), read_write=())
"""What ``off`` is given: it confines nothing (its wrap only adds the reaper), and
its children keep the kernel's uid (docs/security.md, "Root")."""
HANDOVER = str(Path(handover.__file__).resolve())


@dataclass(frozen=True)
class Confinement:
    """A sandbox plus the operator's declared paths, for children of one home."""

    sandbox: Sandbox
    home: Path
    read_only: tuple[str, ...] = ()
    read_write: tuple[str, ...] = ()
    eval_only: tuple[str, ...] = ()
    """``[sandbox] eval_only``: granted (read-only) to a benchmark's scorer alone."""
    deps: str | None = None
    """The target's dependency cache (``<home>/deps/<target>/<key>/site``, built by
    the kernel): granted read-only and put first on ``PYTHONPATH`` (``with_deps``)."""
    user: tuple[int, int] | None = dataclasses.field(default_factory=lambda: child_ids(None))
    """``(uid, gid)`` every child runs as when the kernel is root (``uid.py``; by
    default ``nobody``), None when it is not. ``for_run`` reads ``[sandbox]
    child_user``; a ``Confinement`` built by hand gets the default, never root."""

    def with_deps(self, site: str | Path | None) -> Confinement:
        """This confinement, its children also reading ``site`` (None: none)."""
        return dataclasses.replace(self, deps=str(site) if site is not None else None)

    def _deps_env(self, env: dict[str, str]) -> None:
        """``PYTHONPATH`` (and ``PATH``, for the packages' scripts) led by the cache."""
        if self.deps is None:
            return
        env["PYTHONPATH"] = os.pathsep.join(p for p in (self.deps, env.get("PYTHONPATH"))
                                            if p)
        scripts = os.path.join(self.deps, "bin")
        if os.path.isdir(scripts):
            env["PATH"] = os.pathsep.join([scripts, env.get("PATH") or DEFAULT_PATH])

    def _deps_shell(self) -> str:
        """The shell words doing ``_deps_env`` inside a job's confined ``bash -c``."""
        if self.deps is None:
            return ""
        site = shell_words([self.deps])
        words = f'export PYTHONPATH={site}"${{PYTHONPATH:+:$PYTHONPATH}}" && '
        if os.path.isdir(os.path.join(self.deps, "bin")):
            words += f'export PATH={shell_words([os.path.join(self.deps, "bin")])}:"$PATH" && '
        return words

    def _own_read_only(self) -> tuple[str, ...]:
        return (self.deps,) if self.deps is not None else ()

    @property
    def kind(self) -> Kind:
        return self.sandbox.kind

    def _read_only(self, path_var: str, readable: Sequence[str | Path],
                   scorer: bool = False) -> tuple[str, ...]:
        granted = tuple(dict.fromkeys([*policy.system_read_only(self.home, readable),
                                       *policy.path_dirs(path_var, self.home),
                                       *self.read_only]))
        if not scorer:
            self._withheld(granted)
        return tuple(dict.fromkeys([*granted, *(self.eval_only if scorer else ())]))

    def _withheld(self, granted: Sequence[str]) -> None:
        """Refuse to confine a non-scorer child with a grant that reaches an eval-only
        path (a PATH entry or an agent CLI's install dir holding held-out data)."""
        for held in self.eval_only:
            for path in granted:
                if policy.overlaps(Path(held), Path(path)):
                    raise SandboxError(f"[sandbox] eval_only: {held} overlaps {path}, "
                                       f"which this process must read; fix: move the "
                                       f"held-out data out of it")

    def _writes(self, declared_writes: bool) -> tuple[str, ...]:
        return self.read_write if declared_writes else ()

    def command(self, argv: Sequence[str], env: Mapping[str, str], *, workdir: Path,
                scratch: Path, readable: Sequence[str | Path] = (), scorer: bool = False,
                declared_writes: bool = True) -> tuple[list[str], dict[str, str]]:
        """``argv`` confined to ``workdir`` and ``scratch`` (read-write) plus
        ``readable`` (an agent CLI's install dir); ``env`` with ``TMPDIR`` in scratch.

        ``scorer``: a benchmark's trusted scorer, the only child that also reads the
        ``[sandbox] eval_only`` paths. ``declared_writes=False`` (evals) leaves out the
        ``[sandbox] read_write`` paths: a cache a session writes and an eval reads is a
        channel between them. Raises ``SandboxError`` when a grant would expose the
        home, or an eval-only path to a child that is not the scorer."""
        tmp = scratch / TMP_DIR
        scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
        beneath.makedirs(scratch, TMP_DIR, 0o700, clear=True)  # the agent's: no link
        out_env = dict(env)
        out_env["TMPDIR"] = str(tmp)
        path_var = out_env.get("PATH", DEFAULT_PATH)
        self._deps_env(out_env)
        if self.kind == "off":
            return self.sandbox.wrap(argv, NO_GRANTS), out_env
        grants = policy.grants(self._read_only(path_var, readable, scorer),
                               self._writes(declared_writes), [workdir, scratch], self.home,
                               cwd=str(workdir), own_read_only=self._own_read_only())
        if self.user is not None:
            handover.hand_over([os.path.realpath(workdir), os.path.realpath(scratch)],
                               *self.user)
            grants = dataclasses.replace(grants, user=self.user)
        return self.sandbox.wrap(argv, grants), out_env

    def shell(self, command: str, scratch: Path, *, scorer: bool = False,
              declared_writes: bool = True, cwd_under: Path | None = None) -> str:
        """A job's shell command run confined to the shell's ``$PWD`` (the task's
        checkout, ``cwd_under`` or a directory in it) and ``scratch``, with ``TMPDIR``
        in scratch (exported by the command itself: Slurm's step resets ``TMPDIR``).
        When the kernel is root, the job's shell first hands ``$PWD`` and ``scratch``
        to the child's user (``handover.py``; on failure the job ends 126 and nothing
        ran). ``scorer`` and ``declared_writes`` as for ``command``."""
        tmp = shell_words([str(scratch / TMP_DIR)])
        prepare = f"mkdir -p {tmp} && export TMPDIR={tmp} && "
        command = self._deps_shell() + command
        if self.kind == "off":
            return prepare + "exec " + shell_words(
                self.sandbox.wrap(["bash", "-c", command], NO_GRANTS))
        path_var = environ().get("PATH") or DEFAULT_PATH
        grants = policy.grants(self._read_only(path_var, (), scorer),
                               self._writes(declared_writes), [CWD, str(scratch)], self.home,
                               own_read_only=self._own_read_only())
        if self.user is not None:
            ids = f"{self.user[0]}:{self.user[1]}"
            prepare += shell_words([sys.executable, "-I", "-S", HANDOVER, ids, CWD,
                                    str(scratch)]) + " && "
            traverse = (str(cwd_under),) if cwd_under is not None else ()
            grants = dataclasses.replace(grants, user=self.user, traverse=traverse)
        words = self.sandbox.wrap(["bash", "-c", command], grants)
        return prepare + "exec " + shell_words(words)


def scratch_tmp(scratch: Path) -> str:
    return str(scratch / TMP_DIR)


def for_run(settings: Settings, harness_kind: str | None = None) -> Confinement:
    """The confinement of a home's children. Raises ``SandboxError`` when no sandbox
    may be used for ``harness_kind`` (default: the configured harness) or a declared
    path overlaps the home."""
    return _cached(settings.home, settings.sandbox.model_dump_json(),
                   harness_kind or settings.harness.kind)


@functools.lru_cache(maxsize=16)
def _cached(home: Path, sandbox_json: str, harness_kind: str) -> Confinement:
    from outerloop.config import SandboxSettings

    sandbox_settings = SandboxSettings.model_validate_json(sandbox_json)
    read_only = policy.declared(sandbox_settings.read_only, home, "read_only")
    read_write = policy.declared(sandbox_settings.read_write, home, "read_write")
    eval_only = policy.declared(sandbox_settings.eval_only, home, "eval_only")
    policy.eval_only_apart(eval_only, read_only, read_write, home)
    return Confinement(
        sandbox=for_children(sandbox_settings, harness_kind),
        home=home,
        read_only=read_only,
        read_write=read_write,
        eval_only=eval_only,
        user=child_ids(sandbox_settings.child_user, home),
    )


def sandboxed(settings: Settings, argv: Sequence[str], env: Mapping[str, str], *,
              workdir: Path, scratch: Path, readable: Sequence[str | Path] = (),
              harness_kind: str | None = None) -> tuple[list[str], dict[str, str]]:
    """The one call to run any child sandboxed (a review session, a new harness): its
    argv and env confined to ``workdir`` and ``scratch`` (read-write) plus
    ``readable``. Start the result with ``close_fds=True`` (the default): descriptors
    passed to a child bypass every backend. Raises ``SandboxError`` when no sandbox
    may be used or a grant would expose the home."""
    return for_run(settings, harness_kind).command(argv, env, workdir=workdir,
                                                   scratch=scratch, readable=readable)
