"""What of the agent's working tree becomes the candidate (workspace hygiene).

The candidate is every change to a path the base tracks, plus the new files that are
not ignored: not by the target's ``.gitignore``, not by the kernel's channel exclude,
and not by a built-in ignore set of things a tool leaves behind when the agent runs
the benchmark the way the contract does (bytecode, ``__pycache__``, virtualenvs, tool
caches, compiled objects). A new file outside the scope is left out of the candidate
and named in a note to the agent; it is not a refusal, because a lock file or a scratch
report at the root is not an attempt to write outside the scope. An edit to a tracked
path outside the scope is still refused by the caller.

The tree is read as data (``seal_walk``, ``seal_objects``, ``seal_stage``; docs/security.md,
"Sealing reads the tree as data"): ``unsealable`` refuses a repository of the agent's
own, a new ``.gitmodules`` or a path too long before any git process lists the tree,
and no git process reads a byte, a config or an attribute of it.

The built-in set is applied twice: as git's ``core.excludesFile`` in the listing (so a
virtualenv is never even read) and again on the paths staged (so a ``.gitignore`` in
the working tree that re-includes ``*.pyc`` cannot bring bytecode into a PR).

Bounded inputs: before the seal reads anything, ``size_problem`` looks (``lstat``
only, nothing read) at every file it would take: the index's files and the new files
not ignored. A file over ``MAX_FILE_BYTES`` by apparent size (so a 100 GB sparse file
counts as 100 GB), more than ``MAX_CHANGED_BYTES`` in all, or more than
``MAX_CHANGED_FILES`` new or changed files is refused back to the agent with the files
named: a seal that hashes a huge file outlives git's timeout and kills the job. A file
the base tracks at the same size is the target's own and does not count.
"""

from __future__ import annotations

import stat
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from outerloop.attempt import seal_objects, seal_walk
from outerloop.attempt import seal_stage as stage
from outerloop.contract import Contract
from outerloop.contract_scope import held_under, path_allowed
from outerloop.forge import localgit as g
from outerloop.ledger.book import blob_sizes
from outerloop.line_paths import memory_path
from outerloop.run.paths import RunPaths
from outerloop.sandbox import beneath

IGNORED_DIRS = frozenset({
    "__pycache__", ".venv", "venv", ".virtualenv", ".tox", ".nox", ".eggs",
    ".pytest_cache", ".mypy_cache", ".ruff_cache", ".hypothesis", ".ipynb_checkpoints",
    ".uv-cache", ".cache", "node_modules",
})
IGNORED_DIR_SUFFIXES = (".egg-info", ".dist-info")
IGNORED_FILE_SUFFIXES = (
    ".pyc", ".pyo", ".pyd", ".so", ".o", ".obj", ".a", ".lib", ".dylib", ".dll", ".exe",
    ".class", ".whl",
)
SCRATCH_INDEX = "seal.index"
LINE_INDEX = "line.save.index"
EXCLUDE_FILE = "candidate.exclude"
MAX_NOTED_PATHS = 20
MIB = 1024 * 1024
MAX_FILE_BYTES = 20 * MIB
"""A new or changed file larger than this (apparent size) is refused before the seal:
code is small; data, checkpoints and logs belong outside the workspace (GitHub itself
warns at 50 MB and refuses 100 MB)."""
MAX_CHANGED_BYTES = 200 * MIB
"""All new and changed files together."""
MAX_CHANGED_FILES = 10_000
"""New and changed files, counted."""


def builtin_ignored(path: str) -> bool:
    """True when ``path`` (repo-relative) is a tool's leftover, never part of a candidate."""
    parts = PurePosixPath(path).parts
    for part in parts[:-1]:
        if part in IGNORED_DIRS or part.endswith(IGNORED_DIR_SUFFIXES):
            return True
    name = parts[-1] if parts else ""
    return name in IGNORED_DIRS or name.endswith(IGNORED_FILE_SUFFIXES)


def exclude_patterns() -> str:
    """The built-in ignore set in gitignore syntax."""
    lines = [f"{name}/" for name in sorted(IGNORED_DIRS)]
    lines += [f"*{suffix}/" for suffix in IGNORED_DIR_SUFFIXES]
    lines += [f"*{suffix}" for suffix in IGNORED_FILE_SUFFIXES]
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class Snapshot:
    """The candidate's tree, and the new files outside the scope that were left out."""

    tree: str
    left_out: list[str] = field(default_factory=list)
    eval_only: list[str] = field(default_factory=list)
    """What the agent wrote at eval-only paths (refused; the tree holds the base's)."""


def _index_env(paths: RunPaths) -> dict[str, str]:
    """The scratch index's environment; a lock a killed git left on it is removed.

    Only the run's jobs seal, one at a time under the run's lease, so a
    ``seal.index.lock`` found here is always a dead job's (a git killed mid-seal by a
    timeout, the job's walltime or a node failure); left, every recovery would fail
    on it the same way until the run is ended."""
    index = paths.root / SCRATCH_INDEX
    Path(f"{index}.lock").unlink(missing_ok=True)
    return {"GIT_INDEX_FILE": str(index)}


def snapshot(paths: RunPaths, base: str, contract: Contract, report: str | None = None,
             found: seal_walk.Scan | None = None, *, on_line: bool = False) -> Snapshot:
    """The candidate tree of the agent's working tree as it is now.

    The tree is read as data (``seal_walk``, ``seal_objects``, ``seal_stage``): no git
    process reads a byte of it, so nothing the agent wrote (``ws/.git``, a nested
    repository's config, a ``.gitattributes`` filter) runs. ``SealRefused`` (its message
    for the agent) when ``unsealable`` finds something, when the tree holds a FIFO a
    seal would take, or when it changed while it was read. A new file holding exactly
    the submitted ``report`` is the report the tool read: it is published as the
    report, never sealed as code. ``found``: the walk ``unsealable`` just made (else
    the tree is walked here). ``on_line``: the run is on a research line, whose memory
    (``line_paths.memory_path``) is never part of a candidate: the tree holds the
    base's version there (usually nothing), so no measured tree, no pull request and no
    scope check ever sees it."""
    found = found if found is not None else seal_walk.scan(paths.ws)
    base_entries = stage.tree_entries(paths.kernel_git, base)
    problems = _scan_problems(paths, found, base_entries, base)
    if problems:
        raise stage.SealRefused(stage.refusal(problems))
    entries = stage.stage_all(paths, found, base_entries, _exclude_file(paths),
                              seal_objects.algorithm(base), builtin_ignored)
    written = _put_back_withheld(entries, base_entries, contract.eval_only)
    if on_line:
        keep_base_at(entries, base_entries, memory_path)
    new = [p for p in entries if p not in base_entries]
    tool_leftovers = [p for p in new if builtin_ignored(p)]
    outside = [p for p in new if not builtin_ignored(p) and not path_allowed(contract, p)]
    reports = [p for p in new if report and p not in tool_leftovers
               and _holds_text(paths.ws, p, report)]
    outside = sorted(p for p in outside if p not in reports)  # the report is no news
    for path in tool_leftovers + outside + reports:
        entries.pop(path, None)
    links = sorted(p for p, e in entries.items()
                   if e[0] == seal_objects.GITLINK and base_entries.get(p) != e)
    if links:  # only the base's own can be there; said, should that ever change
        raise stage.SealRefused(stage.refusal([_gitlink_problem(links)]))
    tree = stage.write_tree(paths, entries, paths.root / SCRATCH_INDEX)
    return Snapshot(tree, outside, written)


def line_tree(paths: RunPaths, head: str, contract: Contract) -> str:
    """The agent's working tree as its research line keeps it, memory included: every
    change and every new file no ignore rule covers (the built-in set included), in or
    out of the scope (the line is a notebook; a candidate takes only what the scope
    allows), the eval-only paths as ``head`` has them. Read as data, like a seal
    (``SealRefused`` for what no seal may touch)."""
    found = seal_walk.scan(paths.ws)
    head_entries = stage.tree_entries(paths.kernel_git, head)
    problems = _scan_problems(paths, found, head_entries, head)
    if problems:
        raise stage.SealRefused(stage.refusal(problems))
    entries = stage.stage_all(paths, found, head_entries, _exclude_file(paths),
                              seal_objects.algorithm(head), builtin_ignored)
    _put_back_withheld(entries, head_entries, contract.eval_only)
    for path in [p for p in entries if builtin_ignored(p)
                 or (entries[p][0] == seal_objects.GITLINK and head_entries.get(p) != entries[p])]:
        del entries[path]
    return stage.write_tree(paths, entries, paths.root / LINE_INDEX)


def keep_base_at(entries: dict[str, stage.Entry], base_entries: dict[str, stage.Entry],
                 kept: Callable[[str], bool]) -> None:
    """Give ``entries`` the base's entries at every path ``kept`` names (the agent's are
    dropped, the base's put back)."""
    for path in [p for p in entries if kept(p)]:
        del entries[path]
    entries.update({p: e for p, e in base_entries.items() if kept(p)})


def unsealable(paths: RunPaths, base: str, found: seal_walk.Scan | None = None) -> str | None:
    """The refusal for the agent when its working tree holds what no seal may touch (a
    repository of its own, a ``.gitmodules`` the base does not have, a path too long or
    too deep, a folder that cannot be listed), or None.

    Looks at names and ``lstat`` only (``seal_walk``): called before anything else reads
    the tree, ``size_problem``'s listing included."""
    found = found if found is not None else seal_walk.scan(paths.ws)
    problems = _scan_problems(paths, found, stage.tree_entries(paths.kernel_git, base), base)
    return stage.refusal(problems) if problems else None


def _scan_problems(paths: RunPaths, found: seal_walk.Scan,
                   base_entries: dict[str, stage.Entry], base: str) -> list[str]:
    problems = []
    if found.git_dirs:
        problems.append(
            f"the workspace holds git repositories of its own (or names git takes for "
            f"'.git'): {stage.shown(sorted(found.git_dirs))}. The kernel never runs git in "
            f"them and never seals one: delete each (e.g. `rm -rf "
            f"{stage.shown(sorted(found.git_dirs)[:1])}` keeps the folder's other files as "
            f"plain files)")
    modules = _new_gitmodules(paths, found, base_entries, base)
    if modules:
        problems.append(
            f"{stage.shown(modules)} is new or differs from the base's: submodules are never "
            f"sealed. Restore the base's (`git checkout -- .gitmodules`) or delete it")
    if found.too_long:
        problems.append(
            f"these paths are longer than {seal_walk.MAX_PATH_BYTES} bytes or more than "
            f"{seal_walk.MAX_DEPTH} folders deep: {stage.shown(sorted(found.too_long))}. "
            f"Shorten or delete them")
    if found.unreadable:
        problems.append(
            f"these folders could not be listed: {stage.shown(sorted(found.unreadable))}. "
            f"Make them readable (`chmod -R u+rwX`) or delete them")
    return problems


def _new_gitmodules(paths: RunPaths, found: seal_walk.Scan,
                    base_entries: dict[str, stage.Entry], base: str) -> list[str]:
    """``.gitmodules`` when the work tree's differs from the base's (by blob), and any
    symlink git would take for one (git refuses those in an index)."""
    out = [p for p, f in found.found.items()
           if f.kind == "link" and _gitmodules_name(p.rsplit("/", 1)[-1])]
    top = found.found.get(".gitmodules")
    if top is not None and ".gitmodules" not in out:
        mine: stage.Entry | None = None
        if top.kind == "file":
            named, _ = seal_objects.blob_ids(paths.ws, [(".gitmodules", seal_objects.FILE)],
                                             seal_objects.algorithm(base))
            mine = named.get(".gitmodules")
        if mine is None or base_entries.get(".gitmodules") != mine:
            out.append(".gitmodules")
    return sorted(out)


def _gitmodules_name(name: str) -> bool:
    bare = name.rstrip(" .").lower()
    return bare == ".gitmodules" or bare.startswith("gitmod~")


def _gitlink_problem(links: list[str]) -> str:
    return (f"the sealed tree would carry submodules (gitlinks) the base does not have: "
            f"{stage.shown(links)}. Delete them")


def _put_back_withheld(entries: dict[str, stage.Entry], base_entries: dict[str, stage.Entry],
                       held: list[str]) -> list[str]:
    """Give ``entries`` the base's entries at the eval-only paths ``held``; the paths the
    agent wrote there (added or changed against the base, any case).

    The agent's clone lacks them, so the tree of ``ws/`` alone would delete them: put
    back, the seal carries the base's eval-only files unchanged and ``changed_paths``
    shows nothing there, whatever the agent wrote (which is refused, never sealed). A
    file of the agent's where the base has a folder of eval-only files is written
    there too (it cannot stand beside them in one tree)."""
    if not held:
        return []
    mine = {p: e for p, e in entries.items() if held_under(p, held) is not None}
    theirs = {p: e for p, e in base_entries.items() if held_under(p, held) is not None}
    for path in mine:
        del entries[path]
    in_the_way = {parent for path in theirs for parent in _parents(path)
                  if parent in entries}
    for path in in_the_way:
        del entries[path]
    entries.update(theirs)
    return sorted({p for p, entry in mine.items() if theirs.get(p) != entry} | in_the_way)


def _parents(path: str) -> list[str]:
    parts = path.split("/")
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def _exclude_file(paths: RunPaths) -> Path:
    exclude = paths.root / EXCLUDE_FILE
    if not exclude.exists() or exclude.read_text() != exclude_patterns():
        exclude.write_text(exclude_patterns())
    return exclude


def _base_sizes(paths: RunPaths, base: str) -> dict[str, int]:
    """``path -> size`` of every regular file of ``base``'s tree."""
    return blob_sizes(g.git(["ls-tree", "-r", "-l", "-z", base], git_dir=paths.kernel_git))


def _size(nbytes: int) -> str:
    for unit, scale in (("GiB", 1024 * MIB), ("MiB", MIB), ("KiB", 1024)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} bytes"


def size_problem(paths: RunPaths, base: str) -> str | None:
    """The refusal for the agent when what ``git add -A`` would hash is too big, or None.

    Lists what git would add without hashing it (``ls-files``: the scratch index's
    files and the new files no ignore rule covers, the same rules ``snapshot`` uses)
    and ``lstat``s each one, never following a symlink and never reading a byte."""
    env = _index_env(paths)
    listed = g.git(["-c", f"core.excludesFile={_exclude_file(paths)}", "--work-tree",
                    str(paths.ws), "ls-files", "-z", "--cached", "--others",
                    "--exclude-standard", "--", "."],
                   git_dir=paths.kernel_git, env=env, cwd=paths.ws)
    base_sizes = _base_sizes(paths, base)
    big: list[tuple[str, int]] = []
    count = total = 0
    for path in dict.fromkeys(listed.decode("utf-8", "surrogateescape").split("\0")):
        if not path:
            continue
        try:
            info = beneath.lstat(paths.ws, path)  # no link followed on the way
        except OSError:
            continue
        if info is None:
            continue  # deleted since the base, or not a path git could add
        if not stat.S_ISREG(info.st_mode) or base_sizes.get(path) == info.st_size:
            continue
        count += 1
        total += info.st_size
        if info.st_size > MAX_FILE_BYTES:
            big.append((path, info.st_size))
    problems = []
    if big:
        big.sort(key=lambda item: -item[1])
        shown = ", ".join(f"{p} ({_size(n)})" for p, n in big[:MAX_NOTED_PATHS])
        more = f" and {len(big) - MAX_NOTED_PATHS} more" if len(big) > MAX_NOTED_PATHS else ""
        problems.append(f"these files are larger than the limit of {_size(MAX_FILE_BYTES)} "
                        f"a file (apparent size: a sparse file counts in full): {shown}{more}")
    if total > MAX_CHANGED_BYTES:
        problems.append(f"the new and changed files add up to {_size(total)} (limit "
                        f"{_size(MAX_CHANGED_BYTES)})")
    if count > MAX_CHANGED_FILES:
        problems.append(f"{count} files are new or changed (limit {MAX_CHANGED_FILES})")
    if not problems:
        return None
    return (f"Refused: {'; '.join(problems)}. Delete them or move them out of the "
            f"workspace (data, checkpoints and logs do not belong in the candidate; a "
            f"file a .gitignore covers is not sealed), then stage again; nothing was "
            f"launched, sealed or charged.")


def _holds_text(ws: Path, rel: str, text: str) -> bool:
    """True when ``ws/rel`` is a regular file whose bytes are exactly ``text`` (UTF-8),
    read without following a symlink on the way (``sandbox/beneath``)."""
    data = text.encode("utf-8")
    try:
        return beneath.read(ws, rel, len(data)) == data
    except OSError:
        return False


def _listed(paths: list[str]) -> str:
    """The first ``MAX_NOTED_PATHS`` of ``paths``, and how many more."""
    more = len(paths) - MAX_NOTED_PATHS
    return ", ".join(paths[:MAX_NOTED_PATHS]) + (f" and {more} more" if more > 0 else "")


def eval_only_refusal(written: list[str]) -> str | None:
    """The refusal for the agent that wrote at eval-only paths, or None."""
    if not written:
        return None
    return (f"Refused: you wrote at the benchmark's eval-only paths: {_listed(written)}. Those "
            f"files are withheld from your workspace, your launches and the benchmark's "
            f"command (only the trusted scorer reads them, from the base), so nothing there "
            f"can be part of a candidate. Delete them and stage again; nothing was "
            f"launched, sealed or charged.")


def left_out_note(left_out: list[str]) -> str | None:
    """The kernel's note to the agent about new files it did not take, or None."""
    if not left_out:
        return None
    return (f"Left out of the sealed candidate (new files outside the scope; not an error): "
            f"{_listed(left_out)}. Only changes under the scope are measured and published; "
            f"move a file under the scope if it belongs to the change.")
