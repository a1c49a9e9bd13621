"""Symlinks in a candidate: the kernel seals, measures and pushes what the agent left.

A symlink committed into a candidate is followed by whoever checks the tree out: the
kernel's eval, a reviewer's clone, CI. So a candidate may hold a symlink only when its
target, resolved from the link's own directory, stays inside the repository and
inside the contract's scope. Pure: the caller lists the links (``git ls-tree``).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Mapping


def escaping_links(links: Mapping[str, str], in_scope: Callable[[str], bool]) -> list[str]:
    """``path -> target`` of every symlink in the candidate, refused ones described."""
    bad = []
    for path, target in sorted(links.items()):
        if posixpath.isabs(target):
            bad.append(f"{path} -> {target} (absolute: points outside the workspace)")
            continue
        resolved = posixpath.normpath(posixpath.join(posixpath.dirname(path), target))
        if resolved == ".." or resolved.startswith("../") or resolved == ".":
            bad.append(f"{path} -> {target} (points outside the workspace)")
        elif resolved.split("/")[0] == ".git" or not in_scope(resolved):
            bad.append(f"{path} -> {target} (points out of scope, at {resolved})")
    return bad
