"""A target's lock file: what it may say, and the cache key of its bytes (pure).

The lock names packages and versions, nothing else: where they come from is the
operator's (``[deps] pip_args``, pip's own configuration on the tick host), never the
target's. So a line may be a requirement (``name[extras] <op> version ; marker``) with
pip-compile's ``--hash=`` options, a comment or blank; a pip option (``-r``, ``-c``,
``-e``, ``--index-url``, ``--find-links``, ...) or a URL (``name @ https://...``,
``git+...``) is refused, naming the line. Wheels only (``--only-binary :all:``): no
package's code runs on the tick host while the cache is built.
"""

from __future__ import annotations

import hashlib
import platform
import re
import sys

MAX_LOCK_BYTES = 1024 * 1024
KEY_CHARS = 16
_REQUIREMENT = re.compile(
    r"^[A-Za-z0-9](?:[A-Za-z0-9._-]*[A-Za-z0-9])?"  # the name
    r"(?:\s*\[\s*[A-Za-z0-9._-]+(?:\s*,\s*[A-Za-z0-9._-]+)*\s*\])?"  # extras
    r"(?:\s*(?:===|==|~=|!=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+"  # a version clause
    r"(?:\s*,\s*(?:===|==|~=|!=|<=|>=|<|>)\s*[A-Za-z0-9.*+!_-]+)*)?"
    r"\s*(?:;[^@]*)?$")  # an environment marker
_HASH = re.compile(r"^--hash=(sha256|sha384|sha512):[0-9a-fA-F]{32,128}$")


def python_tag() -> str:
    """The interpreter the cache is built for, as part of its key: compiled wheels fit
    one implementation, minor version and machine (``cp311-x86_64``)."""
    impl = {"cpython": "cp", "pypy": "pp"}.get(sys.implementation.name,
                                               sys.implementation.name)
    return f"{impl}{sys.version_info.major}{sys.version_info.minor}-{platform.machine()}"


def cache_key(lock: bytes) -> str:
    """The cache's key for ``lock``: the sha256 of its bytes (first ``KEY_CHARS`` hex
    digits) and the interpreter tag. A changed lock, or another interpreter, is a new
    key, so a cache is never rebuilt in place."""
    return f"{hashlib.sha256(lock).hexdigest()[:KEY_CHARS]}-{python_tag()}"


def _logical_lines(text: str) -> list[tuple[int, str]]:
    """``(first line number, text)`` of each line, continuations (``\\``) joined and
    comments dropped."""
    out: list[tuple[int, str]] = []
    pending, start = "", 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = re.sub(r"(^|\s)#.*$", "", raw)
        if not pending:
            start = number
        if line.rstrip().endswith("\\"):
            pending += line.rstrip()[:-1] + " "
            continue
        whole = (pending + line).strip()
        pending = ""
        if whole:
            out.append((start, whole))
    if pending.strip():
        out.append((start, pending.strip()))
    return out


def lock_problems(lock: bytes, path: str) -> list[str]:
    """Every reason ``lock`` may not be built, one line each naming ``path`` and the
    line; [] when it may."""
    if len(lock) > MAX_LOCK_BYTES:
        return [f"{path}: {len(lock)} bytes; a lock file may be at most {MAX_LOCK_BYTES}"]
    try:
        text = lock.decode("utf-8")
    except UnicodeDecodeError as exc:
        return [f"{path}: not UTF-8 (byte {exc.start}); save it as UTF-8"]
    problems = []
    for number, line in _logical_lines(text):
        words = line.split()
        options = [w for w in words if w.startswith("-")]
        requirement = " ".join(w for w in words if not w.startswith("-"))
        bad = [w for w in options if not _HASH.match(w)]
        if bad or not requirement:
            problems.append(f"{path} line {number}: {(bad or options)[0]!r} is a pip option; "
                            f"a lock names packages and versions only (with --hash=), where "
                            f"they come from is the operator's [deps] pip_args")
        elif "://" in requirement or not _REQUIREMENT.match(requirement):
            problems.append(f"{path} line {number}: {requirement[:80]!r} is not a "
                            f"requirement of the form name[extras]==version (URLs and "
                            f"paths are refused)")
    return problems
