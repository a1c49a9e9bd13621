"""Hidden markers on what the kernel posts: ``<!-- outerloop:<kind> key=<value> -->``.

Markers are how a stateless kernel recognises its own past effects on the forge (a
claim on an issue, a report, a reply) and how a write-ahead intent is reconciled after
a crash ("was this comment already posted?").

**Identity is the security root.** Anyone can type a marker into an issue or comment,
so a marker counts only on a post whose author is the kernel's own login (or a
configured former login). Everything else is data. A blank kernel login fails closed:
nothing is trusted, so no claim is ever taken.

Even the kernel's own posts quote untrusted text (an agent's report, an issue body),
always inside a code fence. So a marker counts only when it stands alone on its own
line outside any fenced or indented code block; a marker an agent smuggles into its
report is quoted inside a fence and is therefore ignored. Use ``with_marker`` to attach
one to a body.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol, TypeVar

KIND_RE = re.compile(r"^[a-z][a-z0-9-]{0,31}$")
KEY_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:/@+#=-]{0,199}$")
_MARKER_LINE = re.compile(
    r"^ {0,3}<!--[ \t]*outerloop:(?P<kind>[a-z][a-z0-9-]{0,31})[ \t]+"
    r"key=(?P<key>[A-Za-z0-9][A-Za-z0-9._:/@+#=-]{0,199})[ \t]*-->[ \t]*$"
)
_FENCE_OPEN = re.compile(r"^ {0,3}(?P<run>`{3,}|~{3,})(?P<info>.*)$")


@dataclass(frozen=True)
class Marker:
    """One parsed marker: what kind of effect (``claim``, ``report``...) and its key."""

    kind: str
    key: str


class Authored(Protocol):
    """Anything with an author and a body: comments, issues, pull requests, reviews."""

    @property
    def author(self) -> str: ...

    @property
    def body(self) -> str: ...


T = TypeVar("T", bound=Authored)


def render_marker(kind: str, key: str) -> str:
    """The marker text for ``kind``/``key``; ``ValueError`` if either could break out
    of the HTML comment or fail to parse back (whitespace, ``>``, an empty value)."""
    if not KIND_RE.match(kind):
        raise ValueError(f"marker kind {kind!r} must match {KIND_RE.pattern}")
    if not KEY_RE.match(key):
        raise ValueError(f"marker key {key!r} must match {KEY_RE.pattern}")
    return f"<!-- outerloop:{kind} key={key} -->"


def with_marker(body: str, kind: str, key: str) -> str:
    """``body`` with the marker appended on its own line (the only place it counts)."""
    return f"{body.rstrip()}\n\n{render_marker(kind, key)}\n"


def parse_markers(text: str) -> list[Marker]:
    """Every marker standing alone on a line outside code blocks, in order.

    Fences follow CommonMark: an opening run of 3+ backticks or tildes is closed only
    by a run of the same character at least as long; an unclosed fence runs to the end
    (so anything after it is ignored: failing closed). Lines indented 4+ spaces are
    code and ignored too.
    """
    found: list[Marker] = []
    fence: str | None = None
    for line in text.splitlines():
        if fence is not None:
            stripped = line.strip()
            if (
                len(line) - len(line.lstrip(" ")) <= 3
                and stripped
                and set(stripped) == {fence[0]}
                and len(stripped) >= len(fence)
            ):
                fence = None
            continue
        opening = _FENCE_OPEN.match(line)
        if opening and not (opening["run"][0] == "`" and "`" in opening["info"]):
            fence = opening["run"]
            continue
        match = _MARKER_LINE.match(line)
        if match:
            found.append(Marker(match["kind"], match["key"]))
    return found


def kernel_logins(login: str, former_logins: Iterable[str] = ()) -> frozenset[str]:
    """The logins whose markers count, case-folded (forge logins are case-insensitive).

    A blank ``login`` yields the empty set whatever the former logins: a kernel that
    does not know who it is trusts nothing.
    """
    if not login.strip():
        return frozenset()
    logins = {login.strip().casefold()}
    logins.update(f.strip().casefold() for f in former_logins if f.strip())
    return frozenset(logins)


def _trusted_set(logins: str | Iterable[str]) -> frozenset[str]:
    """A plain string is one login; a collection with any blank entry (a kernel login
    left empty in the config) fails closed to the empty set."""
    if isinstance(logins, str):
        return kernel_logins(logins)
    given = list(logins)
    if not given or any(not x.strip() for x in given):
        return frozenset()
    return frozenset(x.strip().casefold() for x in given)


def is_kernel_post(post: Authored, logins: str | Iterable[str]) -> bool:
    """Whether ``post`` was written by the kernel (current or former login)."""
    trusted = _trusted_set(logins)
    return bool(trusted) and post.author.strip().casefold() in trusted


def trusted_markers(
    posts: Sequence[T], logins: str | Iterable[str]
) -> list[tuple[Marker, T]]:
    """Markers on posts authored by the kernel, paired with their post, in post order.

    ``logins`` is one login, or the current and former logins (``kernel_logins``
    builds them from settings); a plain string is one login, never its characters.
    Markers on anyone else's posts are data and are dropped. No login, or any blank
    one, trusts nothing.
    """
    trusted = _trusted_set(logins)
    if not trusted:
        return []
    return [
        (marker, post)
        for post in posts
        if post.author.strip().casefold() in trusted
        for marker in parse_markers(post.body)
    ]


def find_marker(
    posts: Sequence[T], kind: str, key: str, logins: str | Iterable[str]
) -> T | None:
    """The first kernel post carrying marker ``kind``/``key``, or None.

    Used to reconcile a write-ahead intent: a hit means the effect already happened
    (record ``done`` with this post's id); None means it did not (perform it).
    """
    wanted = Marker(kind, key)
    for marker, post in trusted_markers(posts, logins):
        if marker == wanted:
            return post
    return None
