"""What a launch brings back into the channel: ``.outerloop/results/<launch>[/<task>]``,
and the artifacts copied there from the work tree after its job, every path walked
beneath a directory descriptor, no symlink followed (``outerloop.beneath``)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path, PurePosixPath

from outerloop.agent_tool import layout, rules
from outerloop.attempt.channel import MAX_ARTIFACT_BYTES, MAX_ARTIFACTS, NAME_PATTERN
from outerloop.sandbox import beneath


def results_rel(launch: str, task: int | None = None) -> str:
    """``.outerloop/results/<launch>[/<task>]``, relative to the workspace."""
    if rules.name_problem(launch):
        raise ValueError(f"launch name {launch!r} does not match {NAME_PATTERN}")
    return layout.rel(layout.results_name(launch, task))


def results_dir(ws: Path, launch: str, task: int | None = None) -> Path:
    """``ws/.outerloop/results/<launch>/`` (or ``.../<launch>/<task>/``), created fresh.

    Any symlink or file the agent planted on that path is removed first (never
    followed), so the copies land in the channel and nowhere else.
    """
    rel = results_rel(launch, task)
    beneath.makedirs(ws, rel, clear=True)
    return ws / rel


def copy_artifacts(tree: Path, paths: Sequence[str], dest_root: Path,
                   dest_rel: str = "") -> list[str]:
    """Copy each artifact ``paths`` names from the work ``tree`` into
    ``dest_root/dest_rel`` (``results_rel``: the channel, relative to the workspace).

    Each file keeps its repo-relative path under the destination. Refused (with a note,
    never an exception): a bad path, a symlink anywhere on the path (in the tree or on
    the way to the destination), anything but a regular file, a file over
    ``MAX_ARTIFACT_BYTES``; a missing file gets a note too. Each file is opened once,
    through descriptors: what a leftover process swaps in after a check is never
    followed. Returns the notes, empty when everything came back.
    """
    try:
        if dest_rel:
            beneath.makedirs(dest_root, dest_rel, clear=True)
        else:
            dest_root.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        return [f"no artifact copied: the results directory could not be made ({err})"]
    notes: list[str] = []
    for index, path in enumerate(paths):
        if index >= MAX_ARTIFACTS:
            notes.append(f"{path}: not copied: at most {MAX_ARTIFACTS} artifacts per launch")
            continue
        note = _copy_one(tree, path, dest_root, dest_rel)
        if note:
            notes.append(note)
    return notes


def _copy_one(tree: Path, path: str, dest_root: Path, dest_rel: str) -> str | None:
    problem = rules.artifact_problem(path)
    if problem:
        return f"{path}: not copied: {problem}"
    parts = [p for p in PurePosixPath(path).parts if p != "."]
    try:
        data = beneath.read(tree, "/".join(parts), MAX_ARTIFACT_BYTES)
    except FileNotFoundError:
        return f"{path}: not found in the work tree after the job (did the job write it?)"
    except beneath.SymlinkRefused as err:
        return (f"{path}: not copied: {err} (rule: artifacts are regular files reached "
                f"without symlinks)")
    except beneath.NotRegular:
        return f"{path}: not copied: not a regular file"
    except OSError as err:
        return f"{path}: not copied: cannot open it ({err.strerror})"
    if len(data) > MAX_ARTIFACT_BYTES:
        return (f"{path}: not copied: over the limit of {MAX_ARTIFACT_BYTES} bytes (5 MiB); "
                f"write a smaller summary")
    where = "/".join(filter(None, [dest_rel, *parts]))
    try:
        if len(parts) > 1:
            beneath.makedirs(dest_root, where.rsplit("/", 1)[0], clear=True)
        beneath.write(dest_root, where, data, 0o644, clear=True)
    except OSError as err:
        return f"{path}: not copied: cannot write it into the channel ({err})"
    return None
