"""Repository paths in a contract: what a clean repo-relative path is, and the paths no
contract may open (``.github/``, any ``.git`` component, git control files, the
channel, the contract itself), compared as a case-insensitive, Unicode-ignoring file
system would see them. The contract's validators and its scope rules
(``contract.py``) use these.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence

from pydantic_core import PydanticCustomError

from outerloop.agent_tool.layout import CHANNEL_DIR

CONTRACT_FILE = ".outerloop.yaml"
MAX_PATH_CHARS = 1_024

# Components that are forbidden at any depth, and ones forbidden as the first component.
FORBIDDEN_ANYWHERE = {".git": "a .git component", ".gitmodules": "git control file .gitmodules",
                       ".gitattributes": "git control file .gitattributes"}
FORBIDDEN_TOP = {".github": ".github/", CHANNEL_DIR: f"the channel {CHANNEL_DIR}/",
                  CONTRACT_FILE: f"the contract file {CONTRACT_FILE}"}
GLOB_CHARS = frozenset("*?[]{}")
# Code points HFS+ ignores in names (CVE-2014-9390): ".g\u200cit" is ".git" there.
_IGNORABLE = dict.fromkeys(
    [0x200C, 0x200D, 0x200E, 0x200F, 0x202A, 0x202B, 0x202C, 0x202D, 0x202E,
     0x206A, 0x206B, 0x206C, 0x206D, 0x206E, 0x206F, 0xFEFF]
)


# --------------------------------------------------------------------------- paths


def split_repo_path(path: str) -> list[str] | None:
    """Repo-relative POSIX components of ``path``; None when it is not a clean one.

    Refused: empty, absolute, backslashes, NUL, ``.``/``..``/empty components. A
    single trailing ``/`` (a directory prefix) and leading ``./`` are tolerated.
    """
    if not path or "\\" in path or "\x00" in path or path.startswith("/"):
        return None
    while path.startswith("./"):
        path = path[2:]
    if path.endswith("/"):
        path = path[:-1]
    parts = path.split("/")
    if any(part in ("", ".", "..") for part in parts):
        return None
    return parts


def fold_component(component: str) -> str:
    """A component as a case-insensitive, Unicode-ignoring file system would see it.

    Trailing dots and spaces go too (Windows drops them), so ``.GIT.`` is ``.git``.
    """
    text = unicodedata.normalize("NFC", component).translate(_IGNORABLE)
    return (text.rstrip(" .") or text).casefold()


def is_under(parts: Sequence[str], prefix: Sequence[str]) -> bool:
    return len(parts) >= len(prefix) and list(parts[: len(prefix)]) == list(prefix)


def forbidden_component(parts: Sequence[str]) -> str | None:
    folded = [fold_component(p) for p in parts]
    for part in folded:
        if part in FORBIDDEN_ANYWHERE:
            return FORBIDDEN_ANYWHERE[part]
    if folded and folded[0] in FORBIDDEN_TOP:
        return FORBIDDEN_TOP[folded[0]]
    return None


def check_repo_path(value: str, *, what: str) -> str:
    if len(value) > MAX_PATH_CHARS:
        raise PydanticCustomError("path", "is longer than {n} characters", {"n": MAX_PATH_CHARS})
    if GLOB_CHARS & set(value):
        raise PydanticCustomError("path", "{what} may not contain glob characters (* ? [ ] { })",
                                  {"what": what})
    parts = split_repo_path(value)
    if parts is None:
        raise PydanticCustomError(
            "path", "{what} must be a repo-relative path without '..', '.', '//' or "
            "backslashes, and not the repository root", {"what": what})
    return "/".join(parts) + ("/" if value.endswith("/") else "")


def check_scope_prefix(value: str) -> str:
    cleaned = check_repo_path(value, what="a scope prefix")
    reason = forbidden_component(split_repo_path(cleaned) or [])
    if reason:
        raise PydanticCustomError(
            "path", "overlaps a path no contract may open ({reason})", {"reason": reason})
    return cleaned


def check_roadmap(value: str) -> str:
    return check_repo_path(value, what="the roadmap")


def check_eval_path(value: str) -> str:
    return check_scope_prefix(value).rstrip("/")
