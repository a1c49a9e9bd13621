"""The gist of the kernel's refusals of an agent's request: the kernel's own words an
ending's reason may cite, never what the agent wrote."""

from __future__ import annotations

import re

from outerloop.text import one_line

MAX_REFUSED_CHARS = 240
REFUSALS = ("Refused", "Not measured")
"""How the kernel's refusals of an agent's request begin (the notes a leg is resumed
with); ``refusal_gist`` keeps only those."""


def refusal_gist(notes: list[str]) -> str:
    """The gist of each refusal among the kernel's notes to a leg, joined: the fact an
    ending's reason cites ("Refused: no code change"), never the whole note. A gist is the
    note's leading label (``Refused:``) and its first clause, cut at the next colon,
    parenthesis, semicolon or sentence end: what a note lists there is the agent's own
    (paths, names), and a reason holds only the kernel's words."""
    firsts = []
    for note in notes:
        line = " ".join(note.split())
        if not line.startswith(REFUSALS):
            continue
        label = _NOTE_LABEL.match(line)
        head = label.group(0) if label else ""
        rest = line[len(head):]
        firsts.append(head + _CLAUSE_END.split(rest, maxsplit=1)[0])
    return one_line("; ".join(f for f in firsts if f.strip()), MAX_REFUSED_CHARS)


_NOTE_LABEL = re.compile(r"^[A-Z][A-Za-z]*( [a-z]+)?: ")
_CLAUSE_END = re.compile(r"\s*(?::|\(|;|\.(?:\s|$))")
