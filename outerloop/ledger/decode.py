"""Ledger lines into events: one bulk decode, line by line only when it fails.

A line of a kind this version does not know is kept as ``UnknownEvent``; an intent whose
action does not decode keeps its envelope with the action ``Unreadable`` (its intent stays
pending until ``Executor.reconcile`` marks it failed); anything else that does not decode
is counted as malformed and skipped, never fatal.
"""

from __future__ import annotations

import msgspec

from outerloop.effects import Unreadable, decode_effect
from outerloop.ledger import events as ev

_BATCH = msgspec.json.Decoder(list[ev.Event])
_ONE = msgspec.json.Decoder(ev.Event)
_UNKNOWN = msgspec.json.Decoder(ev.UnknownEvent)


class _IntentAsFound(ev.EnvelopeAsFound, frozen=True, kw_only=True):
    """An intent line whose action did not decode: its envelope and the action's JSON."""

    key: str = ""
    action: msgspec.Raw


_INTENT_AS_FOUND = msgspec.json.Decoder(_IntentAsFound)


def _unreadable_intent(line: bytes) -> ev.Intent | None:
    """The intent on ``line`` with its action ``Unreadable``, or None when the line is
    not an intent with a readable envelope."""
    try:
        found = _INTENT_AS_FOUND.decode(line)
    except (msgspec.DecodeError, msgspec.ValidationError):
        return None
    if found.kind != "intent":
        return None
    text = bytes(found.action).decode("utf-8", errors="replace")
    try:
        decode_effect(text)
        error = "the line does not decode"
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        error = str(exc)
    return ev.Intent(v=found.v, seq=found.seq, at=found.at, lc=found.lc, run=found.run,
                  key=found.key, action=Unreadable(text=text, error=error))


def decode_lines(lines: list[bytes]) -> tuple[list[ev.Decoded], int]:
    """Events from JSON lines, and how many lines were malformed (skipped).

    One bulk decode; only when it fails (a malformed line, or a kind this version does
    not know) are the lines decoded one by one."""
    if not lines:
        return [], 0
    try:
        return list(_BATCH.decode(b"[" + b",".join(lines) + b"]")), 0
    except (msgspec.DecodeError, msgspec.ValidationError):
        pass
    good: list[ev.Decoded] = []
    bad = 0
    for line in lines:
        try:
            good.append(_ONE.decode(line))
            continue
        except (msgspec.DecodeError, msgspec.ValidationError):
            pass
        intent = _unreadable_intent(line)
        if intent is not None:
            good.append(intent)
            continue
        try:
            unknown = _UNKNOWN.decode(line)
        except (msgspec.DecodeError, msgspec.ValidationError):
            bad += 1
            continue
        if unknown.kind in ev.KNOWN_KINDS:
            bad += 1
        else:
            good.append(unknown)
    return good, bad
