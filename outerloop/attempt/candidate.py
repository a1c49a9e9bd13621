"""What of the agent's working tree becomes the candidate (workspace hygiene).

The candidate is every change to a path the base tracks, plus the new files that are
not ignored: not by the target's ``.gitignore``, not by the kernel's channel exclude,
and not by a built-in ignore set of things a tool leaves behind when the agent runs
the benchmark the way the contract does (bytecode, ``__pycache__``, virtualenvs, tool
caches, compiled objects). A new file outside the scope is left out of the candidate
and named in a note to the agent; it is not a refusal, because a lock file or a scratch
report at the root is not an attempt to write outside the scope. An edit to a tracked
path outside the scope is still refused by the caller.

The built-in set is applied twice: as git's ``core.excludesFile`` (so a virtualenv is
never even hashed) and again on the paths git added (so a ``.gitignore`` in the working
tree that re-includes ``*.pyc`` cannot bring bytecode into a PR).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from outerloop.attempt.paths import RunPaths
from outerloop.contract import Contract, path_allowed
from outerloop.forge import localgit as g
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
EXCLUDE_FILE = "candidate.exclude"
MAX_NOTED_PATHS = 20


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


def _index_env(paths: RunPaths) -> dict[str, str]:
    return {"GIT_INDEX_FILE": str(paths.root / SCRATCH_INDEX)}


def snapshot(paths: RunPaths, base: str, contract: Contract, report: str | None = None) -> Snapshot:
    """The candidate tree of the agent's working tree as it is now.

    Written with the kernel's git dir and a scratch index, so nothing the agent wrote
    into ``ws/.git`` runs. A new file holding exactly the submitted ``report`` is the
    report the tool read: it is published as the report, never sealed as code."""
    env = _index_env(paths)
    exclude = paths.root / EXCLUDE_FILE
    if not exclude.exists() or exclude.read_text() != exclude_patterns():
        exclude.write_text(exclude_patterns())
    g.git(["-c", f"core.excludesFile={exclude}", "--work-tree", str(paths.ws),
           "add", "-A", "--", "."], git_dir=paths.kernel_git, env=env)
    added = g.git_text(["diff-index", "--cached", "--no-renames", "--name-only",
                        "--diff-filter=A", "-z", base], git_dir=paths.kernel_git, env=env)
    new = [p for p in added.split("\0") if p]
    tool_leftovers = [p for p in new if builtin_ignored(p)]
    outside = [p for p in new if not builtin_ignored(p) and not path_allowed(contract, p)]
    reports = [p for p in new if report and p not in tool_leftovers
               and _holds_text(paths.ws, p, report)]
    outside = [p for p in outside if p not in reports]  # the report is no news to the agent
    dropped = tool_leftovers + outside + reports
    if dropped:
        g.git(["update-index", "--force-remove", "-z", "--stdin"], git_dir=paths.kernel_git,
              env=env, stdin="\0".join(dropped).encode() + b"\0")
    tree = g.git_text(["write-tree"], git_dir=paths.kernel_git, env=env)
    return Snapshot(tree, outside)


def _holds_text(ws: Path, rel: str, text: str) -> bool:
    """True when ``ws/rel`` is a regular file whose bytes are exactly ``text`` (UTF-8),
    read without following a symlink on the way (``sandbox/beneath``)."""
    data = text.encode("utf-8")
    try:
        return beneath.read(ws, rel, len(data)) == data
    except OSError:
        return False


def left_out_note(left_out: list[str]) -> str | None:
    """The kernel's note to the agent about new files it did not take, or None."""
    if not left_out:
        return None
    shown = ", ".join(left_out[:MAX_NOTED_PATHS])
    more = f" and {len(left_out) - MAX_NOTED_PATHS} more" if len(left_out) > MAX_NOTED_PATHS \
        else ""
    return (f"Left out of the sealed candidate (new files outside the scope; not an error): "
            f"{shown}{more}. Only changes under the scope are measured and published; "
            f"move a file under the scope if it belongs to the change.")
