"""Research lines in a run's kernel repository: where a session on a line starts, what
the line holds after each hand-over, and how far it is from the base.

With ``lines`` on for a benchmark, each agent slot keeps a branch of its own on the
forge, ``agents/<agent-id>`` (``line_paths.line_branch``): a lab notebook that holds
the agent's code and its memory (``AGENT_MEMORY.md``, ``agent_memory/``) from run to
run. What is measured and published is never the line: a candidate is the line's tree
with the memory at the base's version (``attempt/candidate.py``), sealed on the base
(``workspace.seal``), so its pull request holds the base and the changes the win needs
and none of the line's history.

**The start** (``start_line``, performed by the tick inside ``PrepareWorkspace``): the
line's head is fetched from the forge (none yet: the line starts at the base, and the
first push creates it). The base is merged into it as data (``git merge-tree`` under the
hardened runner: no hook, no config or driver of the target's beyond git's own; a
conflict leaves its markers in the tree, and the brief makes resolving them the
session's first task); every instruction file (``line_paths.instruction_path``) is then
reset to the base's reviewed version. That hygiene is one commit of the kernel's own
(author ``outerloop``), never left in the work tree to look like the agent's edits.

**A hand-over** (``save_line``, performed by the run's job at each leg's end): the
tree the job built from the work tree as data is committed on the line's previous head
in the kernel's repository (``refs/outerloop/line``); the tick pushes it
(``PushLine``), fast-forward only.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from outerloop.errors import NotFound
from outerloop.forge import localgit as g
from outerloop.forge.base import Forge
from outerloop.line_paths import MEMORY_FILE, instruction_path, memory_path
from outerloop.run.paths import RunPaths

KERNEL_LOGIN = "outerloop"
LINE_REF = "refs/outerloop/line"
"""The line's latest commit in the run's kernel repository (keeps it from git's gc)."""
SCRATCH_INDEX = "line.index"
MAX_MEMORY_FILE_BYTES = 256 * 1024
"""The largest memory file (``line_paths.memory_path``) a line keeps: a bigger one stays
at its previous version on the line, and neither the brief nor the secret scan reads
it (a memory is notes; the brief shows at most ``render.MAX_MEMORY_CHARS`` anyway)."""
REGULAR_MODES = frozenset({"100644", "100755"})
"""The git modes of a regular file: a memory entry of any other (a symbolic link, a
repository) is never followed, kept or shown."""
START_MESSAGE = ("outerloop: start run {run} on the line {branch}\n\n"
                 "{what}\n\nThis commit is the kernel's, not the agent's: the base "
                 "branch merged in and the agent instruction files put back as the base "
                 "has them (its reviewed versions).\n")


@dataclass(frozen=True)
class LineStart:
    """Where a session on a line starts (``start_line``)."""

    sha: str
    """The commit the agent's clone checks out."""
    head: str | None
    """The line's head on the forge before this run (None: the line is new)."""
    conflicts: list[str] = field(default_factory=list)
    """Paths whose merge conflicted: their markers are in ``sha``'s tree."""
    reset: list[str] = field(default_factory=list)
    """Instruction files put back as the base has them."""


def start_line(paths: RunPaths, forge: Forge, target: str, base: str, branch: str,
               run_id: str) -> LineStart:
    """The line ``branch`` with ``base`` merged in and its instruction files reset, as
    a commit in the run's kernel repository (which holds ``base``). Safe to perform
    again: the same inputs make the same trees, and an unchanged line is its own head."""
    try:
        head: str | None = forge.fetch(target, paths.kernel, branch)
    except NotFound:
        head = None
    if head is None or head == base:
        g.git(["update-ref", LINE_REF, base], git_dir=paths.kernel_git)
        return LineStart(base, head)
    parents, conflicts = [head], []
    tree = _tree_of(paths, head)
    if not g.is_ancestor(base, head, git_dir=paths.kernel_git):
        out = g.git(["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z",
                     head, base], git_dir=paths.kernel_git, ok=(0, 1))
        fields = [f for f in out.decode("utf-8", "surrogateescape").split("\0") if f]
        tree, conflicts = fields[0], sorted(set(fields[1:]))
        parents.append(base)
    tree, reset = _reset_instructions(paths, tree, base)
    conflicts = [p for p in conflicts if not instruction_path(p)]
    if parents == [head] and tree == _tree_of(paths, head):
        sha = head
    else:
        what = [f"Merged the base {base[:12]}." if len(parents) > 1 else ""]
        if conflicts:
            what.append(f"The merge conflicted in: {', '.join(conflicts)} (the conflict "
                        f"markers are left in the tree for the agent to resolve).")
        if reset:
            what.append(f"Instruction files reset to the base's: {', '.join(reset)}.")
        sha = g.commit_tree(paths.kernel_git, tree, parents, START_MESSAGE.format(
            run=run_id, branch=branch, what=" ".join(w for w in what if w)), KERNEL_LOGIN)
    g.git(["update-ref", LINE_REF, sha], git_dir=paths.kernel_git)
    return LineStart(sha, head, conflicts, reset)


def _tree_of(paths: RunPaths, commit: str) -> str:
    return g.git_text(["rev-parse", f"{commit}^{{tree}}"], git_dir=paths.kernel_git)


def _entries(paths: RunPaths, tree: str) -> dict[str, tuple[str, str]]:
    out = g.git(["ls-tree", "-r", "-z", "--full-tree", tree], git_dir=paths.kernel_git)
    found = {}
    for entry in out.split(b"\0"):
        meta, tab, raw = entry.partition(b"\t")
        if tab:
            mode, _kind, name = meta.decode().split()
            found[os.fsdecode(raw)] = (mode, name)
    return found


def _reset_instructions(paths: RunPaths, tree: str, base: str) -> tuple[str, list[str]]:
    """``tree`` with every instruction path as ``base`` has it (added back, changed
    back, or removed when the base has none there); the paths that changed."""
    mine = {p: e for p, e in _entries(paths, tree).items() if instruction_path(p)}
    theirs = {p: e for p, e in _entries(paths, base).items() if instruction_path(p)}
    changed = sorted(p for p in set(mine) | set(theirs) if mine.get(p) != theirs.get(p))
    if not changed:
        return tree, []
    index = paths.root / SCRATCH_INDEX
    env = {"GIT_INDEX_FILE": str(index)}
    try:
        g.git(["read-tree", tree], git_dir=paths.kernel_git, env=env)
        gone = [p for p in changed if p in mine]
        if gone:
            g.git(["update-index", "--force-remove", "-z", "--stdin"],
                  git_dir=paths.kernel_git, env=env,
                  stdin=b"".join(os.fsencode(p) + b"\0" for p in gone))
        back = [p for p in changed if p in theirs]
        if back:
            info = b"".join(f"{theirs[p][0]} {theirs[p][1]}\t".encode() + os.fsencode(p)
                            + b"\0" for p in back)
            g.git(["update-index", "-z", "--index-info"], git_dir=paths.kernel_git,
                  env=env, stdin=info)
        return g.git_text(["write-tree"], git_dir=paths.kernel_git, env=env), changed
    finally:
        index.unlink(missing_ok=True)


def save_line(paths: RunPaths, head: str, tree: str, message: str) -> str:
    """A commit of ``tree`` on the line's ``head`` in the kernel repository (``head``
    itself when the tree did not change); ``LINE_REF`` moves to it."""
    if _tree_of(paths, head) == tree:
        return head
    sha = g.commit_tree(paths.kernel_git, tree, [head], message, KERNEL_LOGIN)
    g.git(["update-ref", LINE_REF, sha], git_dir=paths.kernel_git)
    return sha


def unfit_memory(paths: RunPaths, tree: str) -> list[str]:
    """The memory paths in ``tree`` a line does not keep: anything but a regular file (a
    symbolic link, to ``/etc/passwd`` or anywhere, is never followed), or a file over
    ``MAX_MEMORY_FILE_BYTES``. Sizes are git's (``ls-tree -l``): no byte is read."""
    return sorted(p for p, (mode, size) in _sized(paths, tree).items() if memory_path(p)
                  and (mode not in REGULAR_MODES or size > MAX_MEMORY_FILE_BYTES))


def _sized(paths: RunPaths, tree: str) -> dict[str, tuple[str, int]]:
    out = g.git(["ls-tree", "-r", "-l", "-z", "--full-tree", tree], git_dir=paths.kernel_git)
    found = {}
    for entry in out.split(b"\0"):
        meta, tab, raw = entry.partition(b"\t")
        if tab:
            mode, _kind, _name, size = meta.decode().split()
            found[os.fsdecode(raw)] = (mode, int(size) if size.isdigit() else 0)
    return found


@dataclass(frozen=True)
class Memory:
    """The memory index (``AGENT_MEMORY.md``) a line commit holds, as the brief shows it."""

    text: str = ""
    """Its text (empty: none, or not shown)."""
    chars: int = 0
    """Its length in characters (0: none, or not shown)."""
    unshown: str = ""
    """Why a memory index that is there is not shown (empty: it is, or there is none)."""

    @property
    def first_line(self) -> str:
        return next((ln.strip() for ln in self.text.splitlines() if ln.strip()), "")[:120]


def memory_at(paths: RunPaths, commit: str) -> Memory:
    """``AGENT_MEMORY.md`` at ``commit``, read only when it is a regular file of at most
    ``MAX_MEMORY_FILE_BYTES`` (a line a person pushed was never checked by a save)."""
    try:
        out = g.git(["ls-tree", "-l", "-z", commit, "--", MEMORY_FILE],
                    git_dir=paths.kernel_git)
    except g.GitFailed:
        return Memory()
    meta, tab, _raw = out.split(b"\0")[0].partition(b"\t")
    if not tab:
        return Memory()
    mode, _kind, name, size = meta.decode().split()
    if mode not in REGULAR_MODES:
        return Memory(unshown=f"`{MEMORY_FILE}` on your line is not a regular file (a "
                              f"symbolic link is never followed): not shown")
    if not size.isdigit() or int(size) > MAX_MEMORY_FILE_BYTES:
        return Memory(unshown=f"`{MEMORY_FILE}` on your line is {size} bytes, over "
                              f"{MAX_MEMORY_FILE_BYTES}: not shown; keep it short")
    text = g.git(["cat-file", "blob", name], git_dir=paths.kernel_git).decode(
        "utf-8", "replace")
    return Memory(text=text, chars=len(text))


def shortstat(paths: RunPaths, base: str, commit: str) -> str:
    """``git diff --shortstat base commit`` (trees only: no external diff, no textconv),
    ``"no difference"`` when there is none."""
    out = g.git_text(["diff", "--shortstat", "--no-ext-diff", "--no-textconv", "--no-renames",
                      base, commit], git_dir=paths.kernel_git)
    return out.strip() or "no difference"


def kernel_dir(home: Path, run_id: str) -> str:
    """The kernel repository a run's line commits are pushed from."""
    return str(RunPaths.of(home, run_id).kernel)
