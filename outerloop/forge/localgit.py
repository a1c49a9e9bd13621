"""Git for the local forge: one hardened way to run ``git`` plus the plumbing it needs.

Every invocation runs with hooks disabled (``core.hooksPath=/dev/null``), no credential
helper, no terminal prompt, only the ``file`` transport, the user's global and system
git config ignored (so a stray ``core.fsmonitor`` or filter cannot run code), ``GIT_*``
variables from the caller's environment dropped, and a timeout after which the whole
process group is killed. A timeout raises ``ForgeUnavailable`` (defer, conclude
nothing); a refusal raises ``ForgeError`` carrying git's own words.
"""

from __future__ import annotations

import functools
import os
import re
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

from outerloop import child_wait
from outerloop.config import environ
from outerloop.errors import ForgeError, ForgeUnavailable

GIT_TIMEOUT_S = 120
MAX_ERROR_CHARS = 500
SHA_RE = re.compile(r"^[0-9a-f]{40}$")
ZERO_SHA = "0" * 40

_HARDENING = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "credential.helper=",
    "-c", "protocol.allow=never",
    "-c", "protocol.file.allow=always",
    "-c", "core.fsmonitor=false",
    "-c", "init.defaultBranch=main",
)


class GitFailed(ForgeError):
    """git exited non-zero; ``returncode`` and ``stderr`` let callers tell a clean
    "no" (``merge-base --is-ancestor`` exits 1) from a real failure."""

    def __init__(self, message: str, returncode: int, stderr: str) -> None:
        super().__init__(message)
        self.returncode = returncode
        self.stderr = stderr


def git_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment every forge git process gets (see the module docstring)."""
    env = {k: v for k, v in environ().items() if not k.startswith("GIT_")}
    env.update(
        GIT_TERMINAL_PROMPT="0",
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CONFIG_GLOBAL="/dev/null",
        GIT_ASKPASS="/bin/false",
        SSH_ASKPASS="/bin/false",
        LC_ALL="C",
    )
    if extra:
        env.update(extra)
    return env


def identity(login: str, email_domain: str = "forge.local") -> dict[str, str]:
    """Author and committer variables naming ``login`` (the forge's commits)."""
    email = f"{login}@{email_domain}"
    return {
        "GIT_AUTHOR_NAME": login, "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": login, "GIT_COMMITTER_EMAIL": email,
    }


def git(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    git_dir: Path | None = None,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = GIT_TIMEOUT_S,
    ok: tuple[int, ...] = (0,),
) -> bytes:
    """Run ``git <args>`` hardened; return stdout. ``GitFailed`` on an exit not in ``ok``
    (``git merge-tree`` exits 1 on a conflict and still prints what it found),
    ``ForgeUnavailable`` when git is missing or exceeds ``timeout_s``."""
    argv = ["git", *_HARDENING]
    if git_dir is not None:
        argv.append(f"--git-dir={git_dir}")
    argv.extend(args)
    try:
        proc = child_wait.Popen(
            argv, cwd=cwd, env=git_env(env), stdin=subprocess.PIPE,
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
        )
    except FileNotFoundError:
        raise ForgeUnavailable("git is not installed or not on PATH; fix: install git "
                               "2.38 or newer") from None
    try:
        out, err = proc.communicate(stdin, timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        raise ForgeUnavailable(
            f"git {args[0] if args else ''} timed out after {timeout_s:.0f}s"
        ) from None
    if proc.returncode not in ok:
        text = err.decode("utf-8", "replace").strip()[:MAX_ERROR_CHARS]
        raise GitFailed(f"git {args[0] if args else ''} failed: {text or 'no message'}",
                        proc.returncode, text)
    return out


def git_text(
    args: Sequence[str],
    *,
    cwd: Path | None = None,
    git_dir: Path | None = None,
    stdin: bytes | None = None,
    env: Mapping[str, str] | None = None,
    timeout_s: float = GIT_TIMEOUT_S,
) -> str:
    """``git`` with stdout decoded and stripped."""
    out = git(args, cwd=cwd, git_dir=git_dir, stdin=stdin, env=env, timeout_s=timeout_s)
    return out.decode("utf-8", "replace").strip()


def resolve(rev: str, *, git_dir: Path | None = None, cwd: Path | None = None) -> str | None:
    """The commit sha ``rev`` names (in ``git_dir``, or the repository at ``cwd``), or
    None if it names no commit there."""
    if not rev or rev.startswith("-"):
        return None
    try:
        out = git_text(["rev-parse", "--verify", "--quiet", "--end-of-options",
                        f"{rev}^{{commit}}"], git_dir=git_dir, cwd=cwd)
    except GitFailed:
        return None
    return out or None


def read_blob(rev: str, path: str, *, git_dir: Path) -> bytes | None:
    """The blob at ``path`` in the commit ``rev`` names, by one ``git cat-file
    --batch``; None when ``rev`` names no commit, or ``path`` nothing or no file
    there (a directory is not a file)."""
    if not rev or rev.startswith("-") or "\n" in rev or "\n" in path:
        return None
    try:
        out = git(["cat-file", "--batch"], git_dir=git_dir,
                  stdin=f"{rev}^{{commit}}:{path}\n".encode())
    except GitFailed:
        return None
    header, _, body = out.partition(b"\n")
    fields = header.split(b" ")
    if len(fields) != 3 or fields[1] != b"blob" or not fields[2].isdigit():
        return None  # "<name> missing", or a tree, a submodule's commit
    size = int(fields[2])
    return body[:size] if len(body) > size else None


def is_ancestor(
    ancestor: str, descendant: str, *, git_dir: Path | None = None, cwd: Path | None = None
) -> bool:
    """Whether ``ancestor`` is reachable from ``descendant``. An object the repository
    does not have is not an ancestor (exit 128 is treated as "no", failing closed)."""
    try:
        git(["merge-base", "--is-ancestor", ancestor, descendant], git_dir=git_dir, cwd=cwd)
    except GitFailed as exc:
        if exc.returncode in (1, 128):
            return False
        raise
    return True


def check_branch_name(branch: str) -> None:
    """Refuse a branch name git would refuse, or one that could pass as an option."""
    if not branch or branch.startswith("-"):
        raise ForgeError(f"branch name {branch!r} is not valid; fix: use a name like "
                         f"outerloop/agent-01/run")
    if not _git_accepts_branch(branch):
        raise ForgeError(f"branch name {branch!r} is not a valid git branch name; "
                         f"fix: see `git help check-ref-format`")


@functools.lru_cache(maxsize=256)
def _git_accepts_branch(branch: str) -> bool:
    """``git check-ref-format`` of ``refs/heads/<branch>``, asked once per name in a
    process (a pure function of the name; every tick asks it of each target's default
    branch, which was a git process per target per tick)."""
    try:
        git(["check-ref-format", f"refs/heads/{branch}"])
    except GitFailed:
        return False
    return True


def write_tree(
    git_dir: Path, parent: str | None, files: Mapping[str, bytes], index_file: Path
) -> str:
    """A tree: ``parent``'s tree with ``files`` written over it, built in a scratch
    index (``index_file``) so no working tree is ever touched."""
    env = {"GIT_INDEX_FILE": str(index_file)}
    if parent:
        git(["read-tree", parent], git_dir=git_dir, env=env)
    else:
        git(["read-tree", "--empty"], git_dir=git_dir, env=env)
    lines = []
    if files:  # one hash-object for them all: each file's bytes beside the scratch index
        written = []
        for n, content in enumerate(files.values()):
            written.append(index_file.parent / f"blob-{n}")
            written[-1].write_bytes(content)
        blobs = git_text(["hash-object", "-w", "--no-filters", "--stdin-paths"],
                         git_dir=git_dir,
                         stdin="".join(f"{f}\n" for f in written).encode()).split()
        if len(blobs) != len(files):
            raise GitFailed(f"git hash-object wrote {len(blobs)} blobs for {len(files)} "
                            f"files", 0, "")
        lines = [f"100644 {blob}\t{path}\n" for blob, path in zip(blobs, files, strict=True)]
    if lines:
        git(["update-index", "--add", "--index-info"], git_dir=git_dir, env=env,
            stdin="".join(lines).encode("utf-8"))
    return git_text(["write-tree"], git_dir=git_dir, env=env)


def commit_tree(
    git_dir: Path, tree: str, parents: Sequence[str], message: str, author: str
) -> str:
    """A commit object for ``tree`` with ``parents``, authored by ``author``."""
    args = ["commit-tree", tree]
    for parent in parents:
        args += ["-p", parent]
    return git_text([*args, "-F", "-"], git_dir=git_dir, env=identity(author),
                    stdin=message.encode("utf-8"))


def compare_and_swap(git_dir: Path, branch: str, new: str, old: str | None) -> bool:
    """Move ``refs/heads/<branch>`` to ``new`` only if it is still ``old`` (None: it
    must not exist). False when another writer moved it first."""
    try:
        git(["update-ref", f"refs/heads/{branch}", new, old or ZERO_SHA], git_dir=git_dir)
    except GitFailed:
        return False
    return True
