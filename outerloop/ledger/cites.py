"""A long text recorded without the lines its run's ledger already holds.

A run's rendered texts repeat what it recorded before: its report (``run_ended``)
quotes the hypothesis (``run_queued``), the agent's report and the experiments table
(its pull request's body, ``publish_ready``); the body quotes the report the agent
submitted (``leg_ended``). Such a text is written with each run of lines that one of
the run's earlier texts holds word for word cut out, leaving ``HOLE`` in its place,
and a ``Cite`` naming where that text holds it (issue 27: a run's ledger stays
small). The fold puts the lines back (``whole``) from the
run's texts (``RunRecord.texts``: every text it cites, by hash, kept until the run is
settled), so every reader sees the whole text.

Why that always finds them: a writer cites only texts of the run its own fold holds,
and a text is added to ``RunRecord.texts`` when the event holding it is folded, never
replaced (it is named by its hash); the logical clock folds every event a writer had
folded before what it writes, so the fold of the citing line holds every text cited.

``HOLE`` is a NUL: redaction never touches it, so the text may be scrubbed of secrets
after it was cut; a text holding a NUL of its own is written whole.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping

from outerloop.ledger import events as ev
from outerloop.ledger.event_parts import Cite

HOLE = "\0"
MIN_CITED = 48
"""Lines shorter than this together are written out (a cite costs about 30 bytes)."""
_LINE = "\n"


def text_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def texts_of(texts: Iterable[str]) -> dict[str, str]:
    """``texts`` by hash (the empty one left out)."""
    return {text_hash(text): text for text in texts if text}


def with_findings(texts: Mapping[str, str], ready: ev.PublishReady) -> dict[str, str]:
    """``texts`` and the summaries and details of ``ready``'s findings, which its body
    quotes (the body may cite them: the fold adds them before it puts the body back)."""
    return {**texts, **texts_of(text for finding in ready.findings
                                for text in (finding.summary, finding.detail))}


def cut(text: str, texts: Mapping[str, str]) -> tuple[str, list[Cite]]:
    """``text`` with each run of whole lines one of ``texts`` (by hash) holds word for
    word cut out (the longest from each line on, at least ``MIN_CITED`` long), and the
    cites that put them back; ``text`` and no cites when none is held (or ``text``
    holds a ``HOLE``)."""
    if HOLE in text or not texts:
        return text, []
    lines = text.split(_LINE)
    out: list[str] = []
    cites: list[Cite] = []
    i = 0
    while i < len(lines):
        best: tuple[int, Cite] | None = None
        j = i + 1
        while j <= len(lines):
            found = _held(_LINE.join(lines[i:j]), texts)
            if found is None:
                break
            best, j = (j, found), j + 1
        if best is not None and best[1].end - best[1].start >= MIN_CITED:
            out.append(HOLE)
            cites.append(best[1])
            i = best[0]
        else:
            out.append(lines[i])
            i += 1
    if not cites:
        return text, []
    return _LINE.join(out), cites


def _held(block: str, texts: Mapping[str, str]) -> Cite | None:
    for key, text in texts.items():
        start = text.find(block)
        if start >= 0:
            return Cite(key, start, start + len(block))
    return None


def whole(text: str, cites: list[Cite], texts: Mapping[str, str]) -> str:
    """``text`` with its cut lines put back (lines whose text is not held, a ledger
    cut short, are left as ``[cited text not found]``)."""
    if not cites:
        return text
    parts = text.split(HOLE)
    out = [parts[0]]
    for index, part in enumerate(parts[1:]):
        cite = cites[index] if index < len(cites) else None
        source = texts.get(cite.text) if cite is not None else None
        out.append(source[cite.start:cite.end] if source is not None and cite is not None
                   else "[cited text not found]")
        out.append(part)
    return "".join(out)
