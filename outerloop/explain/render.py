"""A timeline as text for a maintainer, or as stable JSON for tools.

JSON (``outerloop explain --json``'s ``decisions``): a list of ``{"at", "decision",
"reason", "facts": [{"file", "seq"}]}``, in the fold's order; ``file`` is under the
home's ``ledger/``. The text form is one line per decision, the facts it names in
brackets (``tick.jsonl:7``, ``runs/<id>.jsonl:3``); an issue's outlook, which no ledger
line holds (``explain/outlook.py``), names none.
"""

from __future__ import annotations

from outerloop.explain.timeline import TimelineStep


def as_json(decisions: list[TimelineStep]) -> list[dict[str, object]]:
    return [{"at": d.at, "decision": d.decision, "reason": d.reason,
             "facts": [{"file": c.file, "seq": c.seq} for c in d.facts]} for d in decisions]


def _where(file: str, seq: int) -> str:
    """``owner__name/runs/x.jsonl`` -> ``runs/x.jsonl:seq`` (the target is in the title)."""
    return f"{file.split('/', 1)[-1]}:{seq}"


def text(title: str, decisions: list[TimelineStep]) -> str:
    lines = [title]
    width = max((len(d.decision) for d in decisions), default=0)
    for d in decisions:
        cited = ", ".join(_where(c.file, c.seq) for c in d.facts)
        lines.append(f"{d.at[:19].replace('T', ' ')}  {d.decision:<{width}}  {d.reason}"
                     + (f"  [{cited}]" if d.facts else "  (asked now: the forge, the rule)"))
    if not decisions:
        lines.append("(no decisions recorded yet)")
    return "\n".join(lines) + "\n"
