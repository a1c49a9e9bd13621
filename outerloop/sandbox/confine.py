"""Confine one child: the function every spawner of agent-authored code calls.

``Confinement.command`` turns ``(argv, env)`` into the confined argv and the env the
child needs inside (``TMPDIR`` in its scratch dir: ``/tmp`` is not granted).
``Confinement.shell`` does the same for a job's shell command, run by the job script
or the local runner, whose own code stays outside the sandbox. ``for_run`` builds the
confinement a run's sessions, launches and evals share (and a review session's).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from outerloop.config import Settings, environ
from outerloop.sandbox import beneath, policy
from outerloop.sandbox.base import CWD, Grants, Kind, Sandbox, shell_words
from outerloop.sandbox.resolve import for_children

TMP_DIR = "tmp"
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"
NO_GRANTS = Grants(read_only=(), read_write=())
"""What ``off`` is given: it confines nothing (its wrap only adds the reaper)."""


@dataclass(frozen=True)
class Confinement:
    """A sandbox plus the operator's declared paths, for children of one home."""

    sandbox: Sandbox
    home: Path
    read_only: tuple[str, ...] = ()
    read_write: tuple[str, ...] = ()
    eval_only: tuple[str, ...] = ()
    """``[sandbox] eval_only``: granted (read-only) to a benchmark's scorer alone."""

    @property
    def kind(self) -> Kind:
        return self.sandbox.kind

    def _read_only(self, path_var: str, readable: Sequence[str | Path]) -> tuple[str, ...]:
        return tuple(dict.fromkeys([*policy.system_read_only(self.home, readable),
                                    *policy.path_dirs(path_var, self.home), *self.read_only]))

    def command(self, argv: Sequence[str], env: Mapping[str, str], *, workdir: Path,
                scratch: Path, readable: Sequence[str | Path] = (),
                declared_writes: bool = True, scorer: bool = False) -> tuple[list[str],
                                                                             dict[str, str]]:
        """``argv`` confined to ``workdir`` and ``scratch`` (read-write) plus
        ``readable`` (an agent CLI's install dir); ``env`` with ``TMPDIR`` in scratch.
        ``declared_writes=False`` leaves out ``[sandbox] read_write`` (an eval: a shared
        writable cache would carry state into it); ``scorer=True`` adds the
        ``[sandbox] eval_only`` paths, read-only. Raises ``SandboxError`` when a grant
        would expose the home."""
        tmp = scratch / TMP_DIR
        scratch.mkdir(mode=0o700, parents=True, exist_ok=True)
        beneath.makedirs(scratch, TMP_DIR, 0o700, clear=True)  # the agent's: no link
        out_env = dict(env)
        out_env["TMPDIR"] = str(tmp)
        if self.kind == "off":
            return self.sandbox.wrap(argv, NO_GRANTS), out_env
        read_only = self._read_only(out_env.get("PATH", DEFAULT_PATH), readable)
        if scorer:
            read_only = tuple(dict.fromkeys([*read_only, *self.eval_only]))
        grants = policy.grants(read_only, self.read_write if declared_writes else (),
                               [workdir, scratch], self.home, cwd=str(workdir))
        return self.sandbox.wrap(argv, grants), out_env

    def shell(self, command: str, scratch: Path) -> str:
        """A job's shell command run confined to the shell's ``$PWD`` (the task's
        checkout) and ``scratch``, with ``TMPDIR`` in scratch (exported by the command
        itself: Slurm's step resets ``TMPDIR``)."""
        tmp = shell_words([str(scratch / TMP_DIR)])
        prepare = f"mkdir -p {tmp} && export TMPDIR={tmp} && exec "
        if self.kind == "off":
            return prepare + shell_words(self.sandbox.wrap(["bash", "-c", command], NO_GRANTS))
        path_var = environ().get("PATH") or DEFAULT_PATH
        grants = policy.grants(self._read_only(path_var, ()), self.read_write,
                               [CWD, str(scratch)], self.home)
        words = self.sandbox.wrap(["bash", "-c", command], grants)
        return prepare + shell_words(words)


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
    return Confinement(
        sandbox=for_children(sandbox_settings, harness_kind),
        home=home,
        read_only=policy.declared(sandbox_settings.read_only, home, "read_only"),
        read_write=policy.declared(sandbox_settings.read_write, home, "read_write"),
        eval_only=policy.declared(sandbox_settings.eval_only, home, "eval_only"),
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
