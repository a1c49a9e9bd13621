"""Local jobs started by forking a warm interpreter (``[compute] local_start = "fork"``).

A local job costs two interpreter starts before it does any work: its runner
(``runner_main``, ~0.35 s of CPU) and its kernel command (``python -m outerloop
attempt ...``, ~0.4 s of imports). With ``fork`` neither starts afresh: the runner is
forked from a process that already holds the modules (``WARM_MODULES``), and the runner
forks its task when the task is the kernel's own command (``kernel_words``); any other
command (a launch, setup lines) runs through ``bash -c`` as with ``exec``.

Nothing else changes: the runner and the task are still processes of their own, in
their own session, with the job's environment, working directory and log files, pids
recorded and killed as before, so observing, cancelling, time limits and a runner
killed outright behave as under ``exec`` (the compute contract suite runs over both).
The forked child drops everything it inherited that a fresh process would not have:
every descriptor but 0-2 (a submitter's ledger lock included), signal handlers, the
environment, the working directory, the temporary directory Python had picked.

Where it forks from: a process this module forked (a job submitting a job) forks
itself when it has no other thread and has not loaded SQLite (``SQLITE``); its lineage
is the zygote's, so it holds nothing a fresh process would not. Any other submitter (a
tick, a test worker whose module state a test may have patched, a process with threads,
where a lock another thread held stays held in the child) starts one *zygote* for its
lifetime, ``python -m outerloop.compute.local_fork``, which imports ``WARM_MODULES``,
never runs anything else, and forks a runner per request: one line of JSON in, the
runner's pid out.

A forked task whose command submits jobs (``SUBMITTERS``: a run's first leg, a wake)
folds its home before it submits, so it has loaded SQLite by then and could not fork
itself. Instead of starting a zygote then (an interpreter start and ``WARM_MODULES``'
imports, ~0.5 s of CPU per such job), it forks a *spare* as it begins, while it is
still a clean fork source: a child that serves as its zygote over two pipes
(``keep_spare``), in the task's session; the task closes its input and reaps it before
it exits (``with_spare``), and a task killed outright leaves it its end of input.
"""

from __future__ import annotations

import contextlib
import gc
import importlib
import io
import json
import os
import runpy
import shlex
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO

from outerloop import config

WARM_MODULES = (
    "outerloop.compute.local_runner",
    "outerloop.cli.group",
    "outerloop.cli.attempt_cmd",
    "outerloop.attempt.session",
    "outerloop.attempt.measure",
)
"""What a zygote imports before it forks: the runner, the kernel's job command and what
its subcommands import as they start (a session's legs, a pair's measurement: 0.25 s of
imports in each job otherwise). Importing them also builds pydantic's models, so the
plugin scan pydantic does once per process (``importlib.metadata``) is done here."""

KERNEL_MODULE = "outerloop"
CHILD_FAILED_EXIT = 70  # the forked child could not set itself up (EX_SOFTWARE)

CODE_VARS = frozenset({"PYTHONPATH", "PYTHONHOME", "PYTHONSAFEPATH", "PYTHONNOUSERSITE",
                       "PYTHONUSERBASE", "PYTHONPLATLIBDIR"})
"""What an interpreter reads as it starts that decides which modules it imports."""
PythonEnv = tuple[tuple[str, str], ...]

_forked = False
_zygotes: dict[PythonEnv, _Server] = {}
_zygote_lock = threading.Lock()
SQLITE = "_sqlite3"
"""A process that has loaded SQLite never forks a job itself: SQLite keeps, per process,
the descriptors and locks of the databases it opened (the history index, the local
forge), and a child that closed those descriptors (it keeps 0-2) retries their locks
with numbers it does not hold until the busy timeout. It asks a zygote, which never
loads SQLite (``WARM_MODULES`` import no database)."""
_children: list[int] = []
_kept: list[object] = []
"""Objects a forked child must never free: they hold descriptors it closed, whose
numbers it may reuse."""


def forked() -> bool:
    """True in a process this module forked (a runner that may fork its task)."""
    return _forked


# -- the runner -----------------------------------------------------------------------

def start_runner(argv: Sequence[str], *, cwd: Path, env: dict[str, str], log: Path) -> int:
    """Start a job's runner, ``python <argv>`` (``-m MODULE ARGS``), by fork and return
    its pid; ``OSError`` when it cannot. It is forked from an interpreter started with
    ``env``'s ``CODE_VARS``, as a fresh one would be."""
    _reap()
    module, args = _module_of(argv)
    python = python_env(env)
    if _forked and threading.active_count() == 1 and python == _STARTED_WITH \
            and SQLITE not in sys.modules:
        return _fork_module(module, args, str(cwd), env, str(log))
    with _zygote_lock:
        zygote = _zygotes.get(python)
        if zygote is None or not zygote.alive():
            _kept.append(zygote)
            zygote = _zygotes[python] = _Zygote(python)
        return zygote.start(module, args, str(cwd), env, str(log))


def python_env(env: Mapping[str, str]) -> PythonEnv:
    """The variables that choose the code an interpreter runs (``CODE_VARS``): one
    started with others would not run the same code, so only a process started with the
    same ones forks a job. (The other ``PYTHON*`` variables change how, not what: output
    buffering, bytecode files, hash seeds.)"""
    return tuple(sorted((k, v) for k, v in env.items() if k in CODE_VARS))


def _module_of(argv: Sequence[str]) -> tuple[str, list[str]]:
    if len(argv) < 2 or argv[0] != "-m":
        raise ValueError(f"not a -m MODULE command line: {list(argv)}")
    return argv[1], list(argv[2:])


def _fork_module(module: str, args: list[str], cwd: str, env: dict[str, str],
                 log: str) -> int:
    log_fd = os.open(log, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    try:
        pid = _fork(lambda: run_module(module, args), cwd=cwd, env=env, out_fd=log_fd,
                    err_fd=log_fd)
    finally:
        os.close(log_fd)
    _children.append(pid)
    return pid


def run_module(module: str, args: list[str]) -> int:
    """``python -m module args`` in this process, as the interpreter runs it (``runpy``,
    the module as ``__main__``); its exit status."""
    sys.argv = [module, *args]
    try:
        runpy.run_module(module, run_name="__main__", alter_sys=True)
    except SystemExit as exc:
        return _exit_code(exc.code)
    return 0


_STARTED_WITH = python_env(config.environ())
"""The ``CODE_VARS`` this interpreter started with (read as the module is imported)."""


# -- the task -------------------------------------------------------------------------

def kernel_words(command: str) -> list[str] | None:
    """The arguments after ``python -m outerloop`` when ``command`` is exactly the
    kernel's own command run by this interpreter, else None (it runs through bash)."""
    try:
        words = shlex.split(command)
    except ValueError:
        return None
    head = [sys.executable, "-m", KERNEL_MODULE]
    return words[len(head):] if words[:len(head)] == head else None


def forks_task(env: Mapping[str, str]) -> bool:
    """True when a forked runner may fork a task run with ``env``: its interpreter
    started with the same ``CODE_VARS`` (else the task's command runs fresh)."""
    return _forked and python_env(env) == _STARTED_WITH


class ForkedTask:
    """A task forked by its runner, polled as ``subprocess.Popen`` is."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.returncode: int | None = None

    def poll(self) -> int | None:
        if self.returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: it ended, how is unknown
                self.returncode = 1
                return self.returncode
            if pid:
                self.returncode = os.waitstatus_to_exitcode(status)
        return self.returncode


SUBMITTERS = (("attempt", "start"), ("attempt", "wake"))
"""The kernel's job commands that submit jobs after folding their home (a leg's
launches, a look's pairs, the next wake): their tasks keep a spare zygote."""


def start_task(words: Sequence[str], *, cwd: str, env: dict[str, str], out_fd: int,
               err_fd: int, go_fd: int, held_exit: int) -> ForkedTask:
    """Fork ``outerloop <words>`` as a task in its own session. Like the ``bash``
    task it stands for, it starts only once the runner writes a line on ``go_fd``
    (``local_runner._held``), and exits ``held_exit`` if that pipe closes first."""
    def run() -> int:
        if not os.read(go_fd, 16):
            return held_exit
        os.close(go_fd)
        if tuple(words[:2]) not in SUBMITTERS:
            return run_module(KERNEL_MODULE, list(words))
        return with_spare(lambda: run_module(KERNEL_MODULE, list(words)))

    return ForkedTask(_fork(run, cwd=cwd, env=env, out_fd=out_fd, err_fd=err_fd,
                            keep=(go_fd,)))


def _exit_code(code: object) -> int:
    """``SystemExit``'s code as the interpreter turns it into a status."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code & 0xFF
    print(code, file=sys.stderr)
    return 1


# -- forking ----------------------------------------------------------------------------

def _fork(body: Callable[[], int], *, cwd: str, env: dict[str, str], out_fd: int,
          err_fd: int, keep: tuple[int, ...] = ()) -> int:
    """Fork a child that becomes a fresh-looking process and runs ``body``; its
    return value is the exit status. Returns the child's pid."""
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid:
        return pid
    code = CHILD_FAILED_EXIT
    try:
        _become_fresh(cwd, env, out_fd, err_fd, keep)
        code = body()
    except BaseException:
        with _quiet():
            traceback.print_exc()
    finally:
        with _quiet():
            sys.stdout.flush()
            sys.stderr.flush()
        os._exit(code)
    raise AssertionError("unreachable")


def _become_fresh(cwd: str, env: dict[str, str], out_fd: int, err_fd: int,
                  keep: tuple[int, ...]) -> None:
    global _forked
    # What the parent's other threads and frames held stays alive and unfreed here,
    # so no finalizer closes a descriptor number this process reuses.
    gc.freeze()
    os.setsid()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(out_fd, 1)
    os.dup2(err_fd, 2)
    _close_all_but(keep)
    for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_DFL)
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    _kept.extend((sys.stdin, sys.stdout, sys.stderr))  # never freed: their fds are gone
    sys.stdin = io.TextIOWrapper(io.FileIO(0, "r", closefd=False))
    sys.stdout = io.TextIOWrapper(io.FileIO(1, "w", closefd=False), encoding="utf-8",
                                  write_through=bool(env.get("PYTHONUNBUFFERED")))
    sys.stderr = io.TextIOWrapper(io.FileIO(2, "w", closefd=False), encoding="utf-8",
                                  errors="backslashreplace", line_buffering=True)
    config.replace_environ(env)
    tempfile.tempdir = None
    os.chdir(cwd)
    _forked = True
    _children.clear()


def _close_all_but(keep: tuple[int, ...]) -> None:
    """Close every descriptor from 3 up but ``keep``."""
    low = 3
    for fd in sorted(keep):
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, _max_fd())


def _max_fd() -> int:
    return int(os.sysconf("SC_OPEN_MAX"))


class _quiet:
    """Swallow anything while a dying child reports (its stderr may be gone)."""

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> bool:
        return True


def _reap() -> None:
    """Reap runners this process forked that have ended (no zombies)."""
    for pid in list(_children):
        try:
            done, _ = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            done = pid
        if done:
            _children.remove(pid)


# -- the zygote -------------------------------------------------------------------------

class _Server:
    """A process serving ``serve``'s loop to this one: requests written to
    ``requests``, answers read from ``answers``."""

    def __init__(self, requests: IO[bytes], answers: IO[bytes]) -> None:
        self.owner = os.getpid()
        self.requests = requests
        self.answers = answers

    def alive(self) -> bool:
        """True while it serves this process (a forked child has none of its own)."""
        raise NotImplementedError

    def start(self, module: str, args: list[str], cwd: str, env: dict[str, str],
              log: str) -> int:
        request = {"module": module, "args": args, "cwd": cwd, "env": env, "log": log}
        try:
            self.requests.write(json.dumps(request).encode("utf-8") + b"\n")
            self.requests.flush()
            answer = self.answers.readline().decode("utf-8").strip()
        except (BrokenPipeError, ValueError) as exc:
            raise OSError(f"the fork zygote is gone: {exc}") from None
        if not answer.isdigit():
            raise OSError(answer or "the fork zygote ended without an answer")
        return int(answer)


class _Zygote(_Server):
    """The warm interpreter a submitter forks its runners from, started with ``python``
    as its ``CODE_VARS``."""

    def __init__(self, python: PythonEnv) -> None:
        env = {k: v for k, v in config.environ().items() if k not in CODE_VARS}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", __name__], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            close_fds=True, env={**env, **dict(python)})
        assert self.proc.stdin is not None and self.proc.stdout is not None
        super().__init__(self.proc.stdin, self.proc.stdout)

    def alive(self) -> bool:
        return self.owner == os.getpid() and self.proc.poll() is None


class _Spare(_Server):
    """A zygote this process forked of itself (``keep_spare``): its pid and the
    pipes it reads requests from and writes answers to."""

    def __init__(self, pid: int, requests: int, answers: int) -> None:
        self.pid = pid
        super().__init__(os.fdopen(requests, "wb"), os.fdopen(answers, "rb"))

    def alive(self) -> bool:
        if self.owner != os.getpid():
            return False
        try:
            return os.waitpid(self.pid, os.WNOHANG) == (0, 0)
        except ChildProcessError:
            return False


def with_spare(body: Callable[[], int]) -> int:
    """``body()`` with a spare zygote kept for it (``keep_spare``), which ends, reaped
    here, when ``body`` returns: never an orphan left to whoever reaps this process's."""
    keep_spare()
    try:
        return body()
    finally:
        end_spare()


def end_spare() -> None:
    """End this process's spare: its input closed, it exits; reaped (killed after
    ``SPARE_END_S``, should it still be forking a runner)."""
    with _zygote_lock:
        spare = _zygotes.get(_STARTED_WITH)
        if not isinstance(spare, _Spare) or spare.owner != os.getpid():
            return
        del _zygotes[_STARTED_WITH]
    with contextlib.suppress(OSError):
        spare.requests.close()
    deadline = time.monotonic() + SPARE_END_S
    while True:
        try:
            if os.waitpid(spare.pid, os.WNOHANG) != (0, 0):
                return
        except ChildProcessError:
            return
        if time.monotonic() > deadline:
            with contextlib.suppress(OSError):
                os.kill(spare.pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(spare.pid, 0)
            return
        time.sleep(0.005)


SPARE_END_S = 5.0
"""How long a spare may take to end once its input closed."""


def keep_spare() -> None:
    """Fork a zygote of this process now, while it is a clean fork source (a forked
    process, one thread, no SQLite), and keep it as this process's zygote for the
    interpreter it started with: the runners it submits later are forked from the
    spare, whatever this process has loaded by then. Nothing happens where this
    process could not fork itself."""
    if not (_forked and threading.active_count() == 1 and SQLITE not in sys.modules):
        return
    request_r, request_w = os.pipe()
    answer_r, answer_w = os.pipe()
    sys.stdout.flush()
    sys.stderr.flush()
    pid = os.fork()
    if pid == 0:
        code = CHILD_FAILED_EXIT
        try:
            gc.freeze()  # as in _become_fresh: nothing inherited is freed here
            _close_all_but((request_r, answer_w))
            serve(os.fdopen(request_r, "rb"), os.fdopen(answer_w, "wb"))
            code = 0
        finally:
            os._exit(code)
    os.close(request_r)
    os.close(answer_w)
    with _zygote_lock:
        _zygotes[_STARTED_WITH] = _Spare(pid, request_w, answer_r)


def serve(lines: io.BufferedReader, answers: io.BufferedWriter) -> None:
    """The zygote's loop: a runner forked per request line, its pid (or the error)
    answered; ends at end of input (its submitter is gone)."""
    for name in WARM_MODULES:
        importlib.import_module(name)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # runners are reaped by the kernel
    for line in lines:
        try:
            request = json.loads(line)
            pid = _fork_module(request["module"], request["args"], request["cwd"],
                               request["env"], request["log"])
            _children.clear()
            answer = str(pid)
        except (OSError, ValueError, KeyError) as exc:
            answer = f"cannot fork a runner: {exc}".replace("\n", " ")
        answers.write(answer.encode("utf-8") + b"\n")
        answers.flush()


if __name__ == "__main__":
    # The module by its own name (``-m`` runs a copy called ``__main__``): the runners
    # it forks must find their ``forked()`` flag where ``local_runner`` looks.
    from outerloop.compute import local_fork

    local_fork.serve(sys.stdin.buffer, sys.stdout.buffer)  # type: ignore[arg-type]
