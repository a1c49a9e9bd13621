"""A run's directories, its kernel-owned git repository, seals and checkouts.

``runs/<run_id>/``:
- ``kernel/``  a clone of the target at the pinned base, owned by the kernel: seals
  are built here with the kernel's own git config, so hooks, filters or fsmonitor
  settings the agent writes into ``ws/.git`` are never run;
- ``ws/``      the agent's clone on branch ``outerloop/<agent>/<run_id>`` (no remote);
  when the base contract declares ``eval_only`` paths, a parentless copy of the base
  without them (no file, no object of them);
- ``home/``    the session's HOME (0700);
- ``jobs/<name>/``  job logs (stdout, stderr, exit_code, finished);
- ``trees/<name>/[<i>/]``  fresh checkouts a launch or an eval runs in.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path

from outerloop.agent_tool import layout
from outerloop.config import Settings
from outerloop.contract_scope import held_under
from outerloop.effects import PrepareWorkspace
from outerloop.forge import localgit as g
from outerloop.forge.base import Forge
from outerloop.ledger.events import EffectResult
from outerloop.run.lines import start_line
from outerloop.run.paths import RunPaths
from outerloop.run.wins import write_wins
from outerloop.sandbox import beneath
from outerloop.secret_forms import needles_for

KERNEL_LOGIN = "outerloop"
CHANNEL_EXCLUDE = f"{layout.EXCLUDE_LINE}\n"
READY_FILE = "ready"
"""``runs/<id>/ready``: written last by ``prepare_workspace``. Without it the workspace
is half-made (a tick killed mid-clone) and is made again from scratch."""
START_BRANCH = "outerloop-start"
"""The kernel repository's branch the agent's clone is made from while eval-only paths
are withheld (deleted once cloned; the run's own branch holds the real base)."""
WITHHELD_INDEX = "withhold.index"
WITHHELD_MESSAGE = ("outerloop: the benchmark's eval-only files are withheld\n\n"
                    "This is base {base} without {held}: only the benchmark's trusted "
                    "scorer reads them. No history is given, so no older copy travels "
                    "either.\n")


def prepare_workspace(settings: Settings, forge: Forge, action: PrepareWorkspace) -> EffectResult:
    """Clone the target at ``action.base`` for the kernel and for the agent.

    Idempotent: a complete workspace (its ``ready`` marker, written last, exists) is
    kept, so a retried intent after a crash finds it and records it as done; anything
    less is half-made and is made again."""
    assert action.run is not None
    paths = RunPaths.of(settings.home, action.run)
    paths.root.mkdir(parents=True, exist_ok=True, mode=0o700)
    ready = paths.root / READY_FILE
    if ready.exists():
        return _ready_result(paths, ready)
    for half_made in (paths.kernel, paths.ws):  # no marker: whatever is there is partial
        if half_made.exists():
            shutil.rmtree(half_made)
    sha = forge.fetch(action.target, paths.kernel, action.base)
    g.git(["update-ref", f"refs/heads/{action.branch}", sha], git_dir=paths.kernel_git)
    exclude = paths.kernel_git / "info" / "exclude"
    exclude.parent.mkdir(parents=True, exist_ok=True)
    if CHANNEL_EXCLUDE not in (exclude.read_text() if exclude.exists() else ""):
        with exclude.open("a") as handle:
            handle.write(CHANNEL_EXCLUDE)
    line = start_line(paths, forge, action.target, sha, action.line,
                      str(action.run)) if action.line else None
    start = _clone_for_agent(paths, line.sha if line else sha, action.withhold)
    g.git(["remote", "remove", "origin"], cwd=paths.ws)
    g.git(["checkout", "--quiet", "-B", action.branch, start], cwd=paths.ws)
    if g.resolve(f"refs/heads/{START_BRANCH}", cwd=paths.ws) is not None:
        g.git(["branch", "--quiet", "-D", START_BRANCH], cwd=paths.ws)
    paths.home.mkdir(exist_ok=True, mode=0o700)
    os.chmod(paths.home, 0o700)
    if action.wins:  # a combination run: each win as a patch in the agent's home
        write_wins(forge, action.target, paths, sha, action.wins, action.withhold)
    result = EffectResult(ws=str(paths.ws), base=sha, line_start=line.sha if line else None,
                          conflicts=(line.conflicts or None) if line else None)
    tmp = paths.root / f".{READY_FILE}.tmp"
    tmp.write_text(sha + "\n" + (json.dumps({"line_start": line.sha, "conflicts":
                                             line.conflicts}) + "\n" if line else ""),
                   encoding="utf-8")
    os.replace(tmp, ready)
    return result


def _ready_result(paths: RunPaths, ready: Path) -> EffectResult:
    """What a complete workspace's ``ready`` marker says: the base on its first line, and
    on a research line where the session starts (a JSON line)."""
    lines = ready.read_text(encoding="utf-8").splitlines()
    line = json.loads(lines[1]) if len(lines) > 1 else {}
    return EffectResult(ws=str(paths.ws), base=lines[0].strip(),
                        line_start=line.get("line_start"),
                        conflicts=line.get("conflicts") or None)


def _clone_for_agent(paths: RunPaths, sha: str, withhold: Sequence[str]) -> str:
    """Clone ``ws/`` from the kernel repository; the commit to check out there
    (``sha``: the base, or where a session on a research line starts).

    Nothing withheld: ``sha`` with its history (reached through ``START_BRANCH`` while
    the clone is made: a line's start is on no branch of the kernel repository).
    Eval-only paths declared: a parentless commit of ``sha``'s tree without them,
    cloned through git's transport (``--no-local``: objects are packed from what that
    one branch reaches, never copied or linked wholesale), so ``ws/.git`` holds no
    blob of a withheld file and no commit whose history holds one. The kernel
    repository keeps the real base."""
    if not withhold:
        ref = f"refs/heads/{START_BRANCH}"
        g.git(["update-ref", ref, sha], git_dir=paths.kernel_git)
        try:
            g.git(["clone", "--quiet", "--no-hardlinks", "--no-checkout", "--",
                   str(paths.kernel), str(paths.ws)])
        finally:
            g.git(["update-ref", "-d", ref], git_dir=paths.kernel_git)
        return sha
    tree = withheld_tree(paths, sha, withhold)
    start = g.commit_tree(paths.kernel_git, tree, [], WITHHELD_MESSAGE.format(
        base=sha, held=", ".join(withhold)), KERNEL_LOGIN)
    ref = f"refs/heads/{START_BRANCH}"
    g.git(["update-ref", ref, start], git_dir=paths.kernel_git)
    try:
        g.git(["clone", "--quiet", "--no-local", "--single-branch", "--no-tags",
               "--no-checkout", "--branch", START_BRANCH, "--", str(paths.kernel),
               str(paths.ws)])
    finally:
        g.git(["update-ref", "-d", ref], git_dir=paths.kernel_git)
    return start


def withhold_from_index(paths: RunPaths, env: Mapping[str, str],
                        withhold: Sequence[str]) -> list[str]:
    """Remove from the index at ``env`` every entry at or under a ``withhold`` path
    (``contract_scope.held_under``: component-wise, case-insensitive); the paths removed."""
    if not withhold:
        return []
    listed = g.git(["ls-files", "-z"], git_dir=paths.kernel_git, env=env)
    gone = [p for p in listed.decode("utf-8", "surrogateescape").split("\0")
            if p and held_under(p, withhold) is not None]
    if gone:
        g.git(["update-index", "--force-remove", "-z", "--stdin"], git_dir=paths.kernel_git,
              env=env, stdin="\0".join(gone).encode("utf-8", "surrogateescape") + b"\0")
    return gone


def withheld_tree(paths: RunPaths, commit: str, withhold: Sequence[str]) -> str:
    """The tree of ``commit`` without the ``withhold`` paths."""
    env = {"GIT_INDEX_FILE": str(paths.root / WITHHELD_INDEX)}
    try:
        g.git(["read-tree", commit], git_dir=paths.kernel_git, env=env)
        withhold_from_index(paths, env, withhold)
        return g.git_text(["write-tree"], git_dir=paths.kernel_git, env=env)
    finally:
        Path(env["GIT_INDEX_FILE"]).unlink(missing_ok=True)


def tree_of(paths: RunPaths, commit: str) -> str:
    return g.git_text(["rev-parse", f"{commit}^{{tree}}"], git_dir=paths.kernel_git)


def changed_paths(paths: RunPaths, base: str, tree: str) -> list[str]:
    """Every path that differs between ``base`` and ``tree`` (added, changed, deleted)."""
    out = g.git_text(["diff-tree", "-r", "--no-renames", "--name-only", "-z",
                      tree_of(paths, base), tree], git_dir=paths.kernel_git)
    return [p for p in out.split("\0") if p]


def _blobs_of(paths: RunPaths, tree: str, only: list[str]) -> dict[str, tuple[str, str]]:
    """``path -> (mode, blob)`` of the entries among ``only`` in ``tree``, from one
    listing of the whole tree: the paths never go on a command line (10,000 agent paths
    would pass the kernel's argument limit) nor through pathspec magic."""
    wanted = set(only)
    out = g.git(["ls-tree", "-r", "-z", "--full-tree", tree], git_dir=paths.kernel_git)
    found = {}
    for entry in out.split(b"\0"):
        meta, _, raw = entry.partition(b"\t")
        path = os.fsdecode(raw)
        if path in wanted:
            mode, kind, blob = meta.decode().split()
            if kind == "blob":
                found[path] = (mode, blob)
    return found


def _cat_blobs(paths: RunPaths, blobs: list[str]) -> list[bytes]:
    """The contents of ``blobs`` in order, by one ``cat-file --batch``."""
    if not blobs:
        return []
    out = g.git(["cat-file", "--batch"], git_dir=paths.kernel_git,
                stdin="".join(f"{b}\n" for b in blobs).encode())
    contents, at = [], 0
    for _ in blobs:
        header_end = out.index(b"\n", at)
        size = int(out[at:header_end].split()[2])
        contents.append(out[header_end + 1:header_end + 1 + size])
        at = header_end + 1 + size + 1
    return contents


def symlinks_in(paths: RunPaths, tree: str, only: list[str]) -> dict[str, str]:
    """``path -> target`` of every symlink among ``only`` in ``tree``."""
    if not only:
        return {}
    links = {p: e[1] for p, e in _blobs_of(paths, tree, only).items() if e[0] == "120000"}
    names = sorted(links)
    targets = _cat_blobs(paths, [links[p] for p in names])
    return {p: t.decode("utf-8", "replace") for p, t in zip(names, targets, strict=True)}


MAX_SCANNED_BYTES = 5 * 1024 * 1024


def files_with(paths: RunPaths, tree: str, only: list[str], secrets: list[str]) -> list[str]:
    """The paths among ``only`` whose content in ``tree`` holds one of ``secrets``, or an
    encoded form of one (``secret_forms``)."""
    if not secrets or not only:
        return []
    needles = needles_for(secrets)
    blobs = _blobs_of(paths, tree, only)
    names = sorted(blobs)
    found = []
    for path, data in zip(names, _cat_blobs(paths, [blobs[p][1] for p in names]), strict=True):
        text = data[:MAX_SCANNED_BYTES].decode("utf-8", "replace")
        if needles.find(text) is not None:
            found.append(path)
    return found


def diff_text(paths: RunPaths, base: str, commit: str) -> str:
    """``git diff -U0 base commit`` as text (no renames, no external diff or textconv:
    the target's attributes never pick the program that shows the diff)."""
    return g.git(["-c", "core.quotePath=false", "diff", "--no-color", "--no-ext-diff",
                  "--no-textconv", "--no-renames", "-U0", base, commit, "--"],
                 git_dir=paths.kernel_git).decode("utf-8", "replace")


def tracked_files(paths: RunPaths, commit: str) -> list[str]:
    """Every file path in ``commit``'s tree."""
    out = g.git(["ls-tree", "-r", "-z", "--name-only", commit], git_dir=paths.kernel_git)
    return [p for p in out.decode("utf-8", "replace").split("\0") if p]


def seal(paths: RunPaths, branch: str, base: str, tree: str, message: str) -> str:
    """A commit of ``tree`` on the run's branch in the kernel repository.

    The parent is the previous seal (or the base), so successive seals descend from
    each other and a published branch only ever moves forward; when the run's base moved
    (an agent's rebase), the new base is a second parent, so the published branch holds
    it and merges into the base branch without a conflict. Sealing the same tree twice
    returns the existing seal."""
    head = g.resolve(f"refs/heads/{branch}", git_dir=paths.kernel_git) or base
    holds_base = head == base or g.is_ancestor(base, head, git_dir=paths.kernel_git)
    if tree_of(paths, head) == tree and head != base and holds_base:
        return head
    parents = [head] if holds_base else [head, base]  # a moved base: the seal merges it in
    sha = g.commit_tree(paths.kernel_git, tree, parents, message, KERNEL_LOGIN)
    g.git(["update-ref", f"refs/heads/{branch}", sha, head], git_dir=paths.kernel_git)
    return sha


MERGE_MESSAGE = ("outerloop: merge the moved base {base} into the credited candidate {seal}\n\n"
                 "The base branch moved after the candidate was measured; this merge is "
                 "measured again against the new base before it is published.\n")


def merge_onto(paths: RunPaths, branch: str, base: str, seal: str) -> tuple[str, list[str]]:
    """Merge the candidate ``seal`` onto the moved ``base`` in the kernel repository:
    ``(merge commit, [])`` when it merges cleanly (the run's branch moves to it: the seal
    is its first parent, so the published branch moves forward), else ``("", the
    conflicting paths)``.

    As data: ``git merge-tree`` reads objects only (no work tree, no index), under the
    hardened runner (no hook; global and system config ignored), so the only merge
    drivers a target's ``.gitattributes`` can name are git's built-in ones: no program
    the agent or the target wrote runs."""
    out = g.git(["merge-tree", "--write-tree", "--name-only", "--no-messages", "-z",
                 base, seal], git_dir=paths.kernel_git, ok=(0, 1))
    fields = [f for f in out.decode("utf-8", "surrogateescape").split("\0") if f]
    if len(fields) > 1:
        return "", sorted(set(fields[1:]))
    merged = g.commit_tree(paths.kernel_git, fields[0], [seal, base],
                           MERGE_MESSAGE.format(base=base[:12], seal=seal[:12]), KERNEL_LOGIN)
    g.git(["update-ref", f"refs/heads/{branch}", merged], git_dir=paths.kernel_git)
    return merged, []


def base_bundle(paths: RunPaths, base: str, seal: str) -> None:
    """Give the agent the moved ``base`` as a git bundle in its channel
    (``.outerloop/base.bundle``, one ref: ``git fetch .outerloop/base.bundle
    refs/outerloop/base``): the commits since the base the candidate was built on (their
    merge base), which the agent's clone holds. Written beneath ``ws`` without following
    a link the agent planted."""
    since = g.git_text(["merge-base", base, seal], git_dir=paths.kernel_git)
    g.git(["update-ref", layout.BASE_REF, base], git_dir=paths.kernel_git)
    out = paths.root / "base.bundle.tmp"
    try:
        g.git(["bundle", "create", "--quiet", str(out), layout.BASE_REF, f"^{since}"],
              git_dir=paths.kernel_git)
        beneath.makedirs(paths.ws, layout.CHANNEL_DIR, clear=True)
        beneath.write(paths.ws, layout.rel(layout.BASE_BUNDLE), out.read_bytes(), 0o644,
                      clear=True)
    finally:
        out.unlink(missing_ok=True)


def checkout(paths: RunPaths, commit: str, dest: Path, withhold: Sequence[str] = ()) -> None:
    """A fresh checkout of ``commit`` at ``dest`` (plumbing; no hooks, no filters),
    without the ``withhold`` paths: they leave the scratch index before anything is
    written, so they never reach the disk. An old tree there is removed without
    following the links a job left in it."""
    if dest.exists():
        beneath.remove(dest.parent, dest.name)
    dest.mkdir(parents=True)
    env = {"GIT_INDEX_FILE": str(dest.parent / f".{dest.name}.index")}
    g.git(["read-tree", commit], git_dir=paths.kernel_git, env=env)
    withhold_from_index(paths, env, withhold)
    g.git(["--work-tree", str(dest), "checkout-index", "-a", "-f"],
          git_dir=paths.kernel_git, env=env)
    Path(env["GIT_INDEX_FILE"]).unlink(missing_ok=True)


def read_at(paths: RunPaths, commit: str, path: str) -> str | None:
    """A file's text at ``commit`` in the kernel repository, or None."""
    try:
        return g.git(["show", f"{commit}:{path}"], git_dir=paths.kernel_git).decode(
            "utf-8", "replace")
    except g.GitFailed:
        return None


def read_bytes_at(paths: RunPaths, commit: str, path: str) -> bytes | None:
    """A file's bytes at ``commit`` (``cat-file``: no textconv, no filter), or None."""
    try:
        return g.git(["cat-file", "blob", f"{commit}:{path}"], git_dir=paths.kernel_git)
    except g.GitFailed:
        return None


CLEANED_PARTS = ("ws", "home", "kernel", "trees")


def clean_workspace(home: Path, run_id: str) -> int:
    """Remove the bulky parts of an ended run's directory; keep its prompts, job logs
    and report. Idempotent. Returns the bytes freed. The agent wrote in them: sizes
    are ``lstat``'s and the removal descends through descriptors (``sandbox/beneath``),
    never through a link."""
    paths = RunPaths.of(home, run_id)
    freed = 0
    for part in CLEANED_PARTS:
        if beneath.lstat(paths.root, part) is None:
            continue
        try:
            freed += sum(info.st_size for _, info in beneath.walk_files(paths.root, part)
                         if stat.S_ISREG(info.st_mode))
            beneath.remove(paths.root, part)
        except OSError:
            continue
    return freed
