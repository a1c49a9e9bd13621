"""The event union is written once (``ledger.events.Event``); every event struct is in it."""

from __future__ import annotations

from outerloop.ledger import events as ev
from outerloop.ledger.book import decode_lines


def _all_subclasses(cls: type) -> set[type]:
    found = set(cls.__subclasses__())
    for sub in list(found):
        found |= _all_subclasses(sub)
    return found


def test_every_event_struct_is_decoded_when_defined() -> None:
    modules = {ev.__name__, "outerloop.ledger.line_events", "outerloop.ledger.thread_events"}
    defined = {c for c in _all_subclasses(ev._Event) if c.__module__ in modules}
    assert defined == set(ev.KNOWN)


def test_a_known_kind_decodes_to_its_struct_and_an_unknown_one_is_kept_when_read() -> None:
    lines = [b'{"kind":"note","seq":1,"at":"2026-01-01T00:00:00.000000Z","text":"hi"}',
             b'{"kind":"from_the_future","seq":2,"at":"2026-01-01T00:00:00.000000Z"}']
    events, bad = decode_lines(lines)
    assert bad == 0
    assert [type(e) for e in events] == [ev.Note, ev.UnknownEvent]
    assert {str(m.__struct_config__.tag) for m in ev.KNOWN} == ev.KNOWN_KINDS
