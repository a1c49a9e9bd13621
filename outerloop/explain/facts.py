"""The ledger facts about one run (or one issue's runs), each with where it is.

Reads the files the fold reads (each target's ``tick.jsonl``, the run's own
``runs/<id>.jsonl`` and ``archive/<id>.jsonl``), decodes them with the fold's decoder
and keeps the lines about the run: those naming it (``run``), and the intents and
outcomes of effects on it. Nothing is written; a missing run is a ``NotFound`` naming
what was asked for.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from outerloop import effects as eff
from outerloop.errors import NotFound
from outerloop.ledger import events as ev
from outerloop.ledger.book import (
    ARCHIVE_DIR,
    LEDGER_DIR,
    RUNS_DIR,
    TICK_FILE,
    decode_lines,
    order_of,
    read_lines,
)


class UnknownRun(NotFound):
    """No ledger of this home knows the run or issue asked for (exit 1, as ``status``,
    ``end`` and ``message`` exit for a run they do not know)."""


@dataclass(frozen=True, slots=True)
class Fact:
    """One ledger line: its file (relative to ``ledger/``), its ``seq`` and its event."""

    file: str
    seq: int
    event: ev.Decoded

    @property
    def order(self) -> tuple[int, str, str, int]:
        return order_of(self.file, self.event)


def _read(ledger: Path, key: str) -> list[Fact]:
    path = ledger / key
    if not path.is_file():
        return []
    events, _bad = decode_lines(read_lines(path).lines)
    return [Fact(file=key, seq=event.seq, event=event) for event in events]


def target_dirs(home: Path) -> list[Path]:
    ledger = home / LEDGER_DIR
    return sorted(p for p in ledger.iterdir() if p.is_dir() and not p.name.startswith(".")) \
        if ledger.is_dir() else []


def run_ids(home: Path) -> list[str]:
    """Every run with a run file in this home, sorted."""
    return sorted({p.stem for d in target_dirs(home) for p in (d / RUNS_DIR).glob("*.jsonl")})


def target_of(home: Path, run_id: str) -> str | None:
    """The ledger directory (``owner__name``) holding ``run_id``'s facts, or None."""
    for directory in target_dirs(home):
        if (directory / RUNS_DIR / f"{run_id}.jsonl").is_file():
            return directory.name
    for directory in target_dirs(home):
        for fact in _read(home / LEDGER_DIR, f"{directory.name}/{TICK_FILE}"):
            if isinstance(fact.event, ev.RunQueued) and fact.event.run == run_id:
                return directory.name
    return None


def run_facts(home: Path, run_id: str) -> list[Fact]:
    """The run's facts in the fold's order (``fold.order_of``)."""
    where = target_of(home, run_id)
    if where is None:
        raise UnknownRun(f"no run {run_id!r} in the ledger of {home}; fix: give a run id "
                         f"as `outerloop status` lists them, or --home")
    ledger = home / LEDGER_DIR
    tick = _about(_read(ledger, f"{where}/{TICK_FILE}"), run_id)
    own = _read(ledger, f"{where}/{RUNS_DIR}/{run_id}.jsonl")
    archive = _read(ledger, f"{where}/{ARCHIVE_DIR}/{run_id}.jsonl")
    return sorted([*tick, *own, *archive], key=lambda f: f.order)


def _about(facts: list[Fact], run_id: str) -> list[Fact]:
    """The facts naming ``run_id`` (an intent: its action names it), and the outcomes of
    its intents (a ``done`` names no run of its own: its intent does)."""
    mine = [f for f in facts if (f.event.run or _intent_run(f.event)) == run_id]
    keys = {f.event.effect_key for f in mine if isinstance(f.event, ev.Intent)}
    return mine + [f for f in facts if f.event.run is None and f.event.kind in _OUTCOMES
                   and getattr(f.event, "key", None) in keys]


_OUTCOMES = frozenset({"done", "failed"})


def _intent_run(event: ev.Decoded) -> str | None:
    """The run of an intent, which its action names (its envelope does not)."""
    if isinstance(event, ev.Intent) and not isinstance(event.action, eff.Unreadable):
        return event.action.run
    return None


def issue_facts(home: Path, repo: str, number: int) -> tuple[list[str], list[Fact]]:
    """The runs that answered issue ``repo#number`` (oldest first) and the issue's own
    facts: why it waited (``issue_waits``), and what the kernel told its author (a
    ``status`` comment's intent, and its ``done`` or ``failed``) before any claim. Both
    empty when the ledger does not know the issue (the caller may ask the forge)."""
    directory = repo.replace("/", "__")
    ledger = home / LEDGER_DIR
    tick = _read(ledger, f"{directory}/{TICK_FILE}")
    runs = [f.event.run for f in tick if isinstance(f.event, ev.RunQueued)
            and f.event.issue == number and f.event.run]
    own = [f for f in tick if (isinstance(f.event, ev.IssueWaits) and f.event.issue == number)
           or _told(f.event, number)]
    keys = {f.event.effect_key for f in own if isinstance(f.event, ev.Intent)}
    outcomes = [f for f in tick if f.event.run is None and f.event.kind in _OUTCOMES
                and getattr(f.event, "key", None) in keys]
    return runs, sorted([*own, *outcomes], key=lambda f: f.order)


def _told(event: ev.Decoded, number: int) -> bool:
    """The intent of a status comment on issue ``number`` that is not a wait's (its
    ``issue_waits`` says the wait)."""
    if not isinstance(event, ev.Intent) or not isinstance(event.action, eff.PostComment):
        return False
    action = event.action
    return (action.number == number and action.marker_kind == "status"
            and action.run is None and not action.marker_key.startswith("waits-"))


def no_such_issue(home: Path, repo: str, number: int, why: str) -> UnknownRun:
    """The error for an issue neither the ledger nor the forge can speak of."""
    return UnknownRun(f"no run or wait for issue {repo}#{number} in the ledger of {home}, "
                      f"and the forge was not asked ({why}); fix: give it as OWNER/NAME#N, "
                      f"as `outerloop status` lists targets")
