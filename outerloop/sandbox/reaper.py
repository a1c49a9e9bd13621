"""End a child's whole process tree with it: a subreaper that kills what the child left.

A process group or a session is no boundary: ``setsid -f`` or a double fork leaves
the group and, once its parent exits, is reparented away from whoever started the
tree, so a ``killpg`` at a leg's end misses it. A *child subreaper*
(``PR_SET_CHILD_SUBREAPER``) gets those orphans instead of PID 1: every process the
child ever started stays in the subreaper's subtree until the subreaper dies, and
the subreaper can kill them all.

This file imports only the standard library: the Landlock exec wrapper loads it by
path (it runs as ``python -I -S``, so its directory is not on ``sys.path``), and the
``off`` backend runs it as a script (``python -I -S reaper.py -- argv``). The kernel
imports it as ``outerloop.sandbox.reaper`` for its own backstop (``end_orphans``).

``supervise`` forks the child, forwards TERM, INT and HUP to it, reaps every orphan
as it comes, and when the child has exited SIGKILLs every process left in its
subtree until none is left, then returns the child's status. A leftover stuck in
uninterruptible sleep past ``KILL_DEADLINE_S`` is named on stderr and left behind
(nothing can kill it).
"""

from __future__ import annotations

import ctypes
import os
import sys
import time

TYPE_CHECKING = False  # not typing's: importing typing costs the wrapper ~5 ms a start
if TYPE_CHECKING:
    import signal
    from collections.abc import Callable
    from types import TracebackType
else:
    import _signal as signal  # the C module: ``signal`` imports enum (~4 ms a start)

PR_SET_CHILD_SUBREAPER = 36
PR_GET_CHILD_SUBREAPER = 37
FORWARDED = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
KILL_DEADLINE_S = 10.0
POLL_MIN_S = 0.001
POLL_MAX_S = 0.05
EXIT_REFUSED = 126


def become_subreaper(on: bool = True) -> bool:
    """Make this process the subreaper of everything it starts (``on=False``: stop
    being one). False where the kernel has no such thing (not Linux): then orphans go
    to PID 1 as before."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        return int(libc.prctl(PR_SET_CHILD_SUBREAPER, int(on), 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


def is_subreaper() -> bool:
    """Whether this process adopts its descendants' orphans."""
    if not sys.platform.startswith("linux"):
        return False
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        flag = ctypes.c_int(0)
        if int(libc.prctl(PR_GET_CHILD_SUBREAPER, ctypes.byref(flag), 0, 0, 0)) != 0:
            return False
        return flag.value != 0
    except (OSError, AttributeError):
        return False


def _process_table() -> dict[int, tuple[int, str]]:
    """pid -> (parent pid, state letter) of every process visible in ``/proc``."""
    table: dict[int, tuple[int, str]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) > 1:
            table[int(name)] = (int(fields[1]), fields[0].decode("ascii", "replace"))
    return table


def _tree(root: int, spare: frozenset[int]) -> tuple[set[int], set[int]]:
    """(live, zombie) processes below ``root`` by parent links, leaving out ``spare``
    and everything below them."""
    table = _process_table()
    children: dict[int, list[int]] = {}
    for pid, (ppid, _) in table.items():
        children.setdefault(ppid, []).append(pid)
    found: set[int] = set()
    stack = [root]
    while stack:
        for child in children.get(stack.pop(), []):
            if child not in found and child not in spare:
                found.add(child)
                stack.append(child)
    zombies = {pid for pid in found if table[pid][1] == "Z"}
    return found - zombies, zombies


def _has_children() -> bool:
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def live_descendants(root: int, spare: frozenset[int] = frozenset()) -> set[int]:
    """Every live (not zombie) process below ``root``, but ``spare`` and their trees."""
    return _tree(root, spare)[0]


def kill_descendants(spare: frozenset[int] = frozenset(),
                     deadline_s: float = KILL_DEADLINE_S) -> set[int]:
    """SIGKILL every process below this one (but ``spare`` and their subtrees) and
    reap those that are, or become, its children, until none is left alive. Returns
    the pids killed. Meant for a subreaper: orphans then stay below it and are found;
    in any other process only the still-parented part of the tree is reachable.

    The caller's ended children outside ``spare`` are reaped too, so call it only
    when none of them is one the caller still means to ``wait`` for."""
    if not spare and not _has_children():
        return set()  # no child, so no descendant: skip reading /proc
    me = os.getpid()
    killed: set[int] = set()
    delay = POLL_MIN_S
    deadline = time.monotonic() + deadline_s
    while True:
        alive, zombies = _tree(me, spare)
        for pid in alive:
            try:  # noqa: SIM105 (contextlib costs the wrapper ~3 ms a start)
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        killed |= alive
        for pid in zombies | alive:
            try:  # noqa: SIM105
                os.waitpid(pid, os.WNOHANG)
            except ChildProcessError:
                pass
        if not alive and not zombies:
            return killed
        if time.monotonic() >= deadline:
            print(f"outerloop sandbox: processes {sorted(alive)} survive SIGKILL "
                  f"(uninterruptible sleep?); left behind", file=sys.stderr)
            return killed
        time.sleep(delay)
        delay = min(delay * 2, POLL_MAX_S)


def end_orphans(spare: frozenset[int] = frozenset()) -> set[int]:
    """The kernel's backstop after a leg or a judge session: when this process is a
    subreaper, kill whatever the session left below it (a wrapper SIGKILLed at a
    time limit leaves its tree to us), but ``spare`` and their trees. Returns the
    pids killed."""
    if not is_subreaper():
        return set()
    return kill_descendants(spare=spare)


class tree_ends:
    """Within the block this process is a subreaper; leaving it kills every process
    left below it (``end_orphans``), so work after the block never races a leftover.
    A process that was no subreaper before stops being one after the block (the
    kernel's own detached helpers, ``git gc --auto``, are not adopted later).

    Processes already below this one when the block starts (a local job's runner this
    process started earlier) are spared with their trees, and only ended children of
    the block are reaped, so the caller's own ``Popen`` objects keep their status.
    Meant for a process whose other threads start no child during the block. A class,
    not ``contextlib``: this file keeps the wrapper's imports few (start-up time)."""

    def __enter__(self) -> None:
        self.was = is_subreaper()
        live, zombies = _tree(os.getpid(), frozenset())
        self.before = frozenset(live | zombies)
        become_subreaper()

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        end_orphans(self.before)
        if not self.was:
            become_subreaper(False)


def supervise(start_child: Callable[[], int]) -> int:
    """Run ``start_child`` in a forked child (it should exec; its return value is the
    child's exit code if it does not), and return the child's wait status once the
    child and every process it left behind have ended (``exit_like`` passes it on)."""
    become_subreaper()
    old_mask = signal.pthread_sigmask(signal.SIG_BLOCK, FORWARDED)
    try:
        pid = os.fork()
    except OSError:
        signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
        raise
    if pid == 0:
        code = EXIT_REFUSED
        try:
            for sig in FORWARDED:
                signal.signal(sig, signal.SIG_DFL)
            signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
            code = start_child()
        finally:
            try:
                sys.stdout.flush()
                sys.stderr.flush()
            finally:
                os._exit(code)

    def forward(signum: int, _frame: object) -> None:
        try:  # noqa: SIM105
            os.kill(pid, signum)
        except ProcessLookupError:
            pass

    for sig in FORWARDED:
        signal.signal(sig, forward)
    signal.pthread_sigmask(signal.SIG_SETMASK, old_mask)
    status = _wait_for(pid)
    kill_descendants()
    return status


def _wait_for(pid: int) -> int:
    """Wait for ``pid``, reaping every orphan that ends meanwhile; its wait status."""
    while True:
        try:
            ended, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return 0
        if ended == pid:
            return status


def exit_like(status: int) -> int:
    """End as the child did: its exit code, or, when a signal killed it, die of that
    signal too (no core file), so the kernel's caller sees the same wait status."""
    if not os.WIFSIGNALED(status):
        return os.waitstatus_to_exitcode(status)
    sig = os.WTERMSIG(status)
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        for forwarded in FORWARDED:
            signal.signal(forwarded, signal.SIG_DFL)
        signal.signal(sig, signal.SIG_DFL)
        signal.pthread_sigmask(signal.SIG_UNBLOCK, [sig])
        os.kill(os.getpid(), sig)
    except (OSError, ValueError):
        pass
    return 128 + sig


def exec_child(argv: list[str], backend: str) -> int:
    """Close inherited descriptors (they bypass every sandbox) and exec ``argv``;
    returns 127 only when it cannot run (the message names ``backend``)."""
    os.closerange(3, 1 << 16)
    try:
        os.execvp(argv[0], argv)
    except OSError as exc:
        print(f"outerloop sandbox ({backend}): cannot run {argv[0]!r}: {exc}",
              file=sys.stderr)
        return 127
    return EXIT_REFUSED  # not reached


def main(args: list[str]) -> int:
    """``reaper.py -- argv``: run argv unconfined, ending its whole tree with it."""
    if len(args) < 2 or args[0] != "--":
        print("usage: reaper.py -- argv...", file=sys.stderr)
        return EXIT_REFUSED
    return exit_like(supervise(lambda: exec_child(args[1:], "off")))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
