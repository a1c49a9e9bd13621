"""The key check of ``outerloop explain``: its decisions are the actions taken.

``check_explained(home, run)`` reads the ledger's raw lines (plain JSON, not the
kernel's decoder) and lists every decision recorded for the run, in the fold's order
(logical clock, time, file, line): each line of a target's ``tick.jsonl`` naming the
run (an intent with its ``done`` or ``failed``, ``run_queued``, ``job_ended``,
``parked``, ``run_ended``...), each line of the run's own file (``runs/<id>.jsonl``:
its job's intents and events) and of its archive file. ``explain RUN --json`` must
name exactly those, in that order, each first citing that very line (an intent also
its outcome): nothing the ticks or the run's job did is left out, nothing is named
that none of them did, and every line explain cites exists. One line may say more
than one decision (a leg and the kernel's refusal, a review and the PR's draft): its
first is the one compared.

The table below is the test's own: it does not import explain's names, so a mapping
broken in explain shows here. A kind it does not know fails, naming where to add it.
Used by every e2e module of ``conftest.EXPLAINED`` after each test, and by tests
that look at the decisions themselves.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from outerloop.cli import main as cli_main
from outerloop.effects import decode_effect

Line = dict[str, Any]
Cite = tuple[str, int]
Order = tuple[int, str, str, int]

EXPLAINED = frozenset({"test_demo", "test_gate_edges", "test_review", "test_recovery_legs",
                       "test_two_targets"})
"""The e2e modules whose runs `outerloop explain` must tell as the ticks took them
(``conftest._ledger_verifies`` runs ``check_every_run`` on each home after each of
their tests): the demo, the gate's edges, the review, recovery legs, two targets. Each
names a module of ``tests/e2e`` (a test checks it)."""


def _action_name(action: Line) -> str:
    """What explain calls an effect that was done."""
    kind = action["kind"]
    if kind == "prepare_workspace":
        return "admitted"
    if kind == "submit_job":
        return f"submit-{action['purpose']}"
    if kind == "post_comment":
        return f"post-{action['marker_kind']}"
    if kind == "open_pr":
        return "pr-draft" if action.get("draft") else "pr-ready"
    if kind == "close_issue":
        return "close-pr" if action.get("pull") else "close-issue"
    return str(kind).replace("_", "-")


_EVENT_NAMES: dict[str, str] = {
    "leg_started": "leg", "leg_ended": "leg-ended", "launched": "launch",
    "gate_look": "gate-look", "verdict": "verdict", "confirmation": "confirmation",
    "revision_asked": "review", "publish_ready": "review", "infra_wait": "waiting-machine",
    "endpoint_wait": "waiting-endpoint", "deadline_extended": "deadline-extended",
    "feedback": "feedback", "outbox": "outbox", "archived": "archived",
    "archive_failed": "archive-failed", "archive_restored": "archive-restored",
    "job_ended": "job-ended", "run_queued": "claimed", "run_ended": "ended",
    "run_alpha": "alpha",
}
NO_DECISION = frozenset({"seeds_drawn", "feedback_cursor", "feedback_delivered", "note",
                         "endpoint_down", "endpoint_up", "done", "failed"})
"""Bookkeeping (the hidden seeds, how far a PR was read, an endpoint's health) and an
intent's outcome (part of the intent's decision): facts, not decisions."""


def _event_name(line: Line) -> str | None:
    """What explain calls a ledger event (None: a bookkeeping line, no decision)."""
    kind = line["kind"]
    if kind == "parked":
        return f"parked-{line['reason']}"
    if kind in _EVENT_NAMES:
        return _EVENT_NAMES[kind]
    if kind in NO_DECISION:
        return None
    raise AssertionError(f"event {kind!r} about a run has no expected decision: add it "
                         f"to tests/e2e/explain_check.py and outerloop/explain/timeline.py")


def _lines(path: Path) -> list[Line]:
    if not path.is_file():
        return []
    return [json.loads(text) for text in path.read_text().splitlines() if text.strip()]


def _order(file: str, line: Line) -> Order:
    return (line["lc"], line["at"], file, line["seq"])


def _decisions_in(file: str, lines: list[Line], run: str | None,
                  ) -> list[tuple[Order, str, list[Cite]]]:
    """The decisions ``lines`` record (those of ``run``, or all): (order, name, cited
    facts); an intent's name says how it came out (``-pending``, ``-failed``)."""
    outcomes = {line["key"]: line for line in lines if line["kind"] in ("done", "failed")}
    out = []
    for line in lines:
        if run is not None and _run_of(line) != run:
            continue
        if line["kind"] == "intent":
            outcome = outcomes.get(_key_of(line))
            suffix = "-pending" if outcome is None else \
                "" if outcome["kind"] == "done" else "-failed"
            cites = [(file, line["seq"])] + ([(file, outcome["seq"])] if outcome else [])
            out.append((_order(file, line), _action_name(line["action"]) + suffix, cites))
        elif (name := _event_name(line)) is not None:
            out.append((_order(file, line), name, [(file, line["seq"])]))
    return out


def _key_of(intent: Line) -> str:
    """An intent's key: written before issue 27, now its action's own."""
    return str(intent.get("key") or decode_effect(json.dumps(intent["action"])).key)


def _run_of(line: Line) -> object:
    """A line's run: an intent's is its action's (issue 27: not in its envelope)."""
    action = line.get("action") if line["kind"] == "intent" else None
    return line.get("run") or (action.get("run") if isinstance(action, dict) else None)


def _targets(home: Path) -> list[Path]:
    return sorted(p for p in (home / "ledger").iterdir() if p.is_dir() and p.name[0] != ".")


def performed(home: Path, run_id: str) -> list[tuple[str, list[Cite]]]:
    """Every decision the ledger holds for ``run_id``, in the fold's order: (the name
    explain must give it, the facts it must cite first)."""
    found: list[tuple[Order, str, list[Cite]]] = []
    for target in _targets(home):
        tick = f"{target.name}/tick.jsonl"
        found += _decisions_in(tick, _lines(target / "tick.jsonl"), run_id)
        for folder in ("runs", "archive"):
            key = f"{target.name}/{folder}/{run_id}.jsonl"
            found += _decisions_in(key, _lines(home / "ledger" / key), None)
    out: list[tuple[str, list[Cite]]] = []
    ended = False
    for _, name, cites in sorted(found):
        if name == "ended":
            name, ended = ("ended-again" if ended else "ended"), True
        out.append((name, cites))
    return out


def explained(home: Path, run_id: str) -> list[Line]:
    done = CliRunner().invoke(cli_main, ["explain", run_id, "--json", "--home", str(home)])
    assert done.exit_code == 0, done.output
    shown = json.loads(done.output)
    assert shown["ok"] is True
    decisions: list[Line] = shown["decisions"]
    assert isinstance(decisions, list)
    return decisions


def _existing(home: Path) -> set[Cite]:
    """Every ledger line of ``home`` as (file, seq)."""
    ledger = home / "ledger"
    return {(str(path.relative_to(ledger)), int(line["seq"]))
            for path in ledger.glob("*/**/*.jsonl") if path.name != "heads.jsonl"
            for line in _lines(path)}


def _one_snapshot(home: Path, run_id: str) -> tuple[list[Line], list[tuple[str, list[Cite]]]]:
    """Explain's decisions and the ledger's, read of one ledger: a run's job may still
    append (a park) while explain reads, so the ledger is read before and after explain
    and the pair is taken only when nothing was appended in between (the ledger only
    grows, so equal reads bracket what explain saw)."""
    for _ in range(40):
        before = performed(home, run_id)
        decisions = explained(home, run_id)
        if performed(home, run_id) == before:
            return decisions, before
        time.sleep(0.25)
    raise AssertionError(f"the ledger of {run_id} kept changing while explain read it")


def check_explained(home: Path, run_id: str) -> list[Line]:
    """Assert explain's decisions for ``run_id`` are the decisions its ledger holds, in
    order, no more and no fewer; returns explain's decisions."""
    decisions, actions = _one_snapshot(home, run_id)
    assert actions, f"no decisions in the ledger for {run_id}"
    existing = _existing(home)
    named: list[tuple[str, list[Cite]]] = []
    seen: set[Cite] = set()
    for d in decisions:
        cites = [(str(f["file"]), int(f["seq"])) for f in d["facts"]]
        assert cites, f"explain {run_id}: {d} cites no fact"
        missing = [c for c in cites if c not in existing]
        assert not missing, f"explain {run_id}: {d['decision']} cites {missing}: no such line"
        if cites[0] not in seen:
            seen.add(cites[0])
            named.append((str(d["decision"]), cites))
    said = [(name, cites[: len(want)]) for (name, cites), (_, want)
            in zip(named, actions, strict=False)] + named[len(actions):]
    assert said == actions, (
        f"explain {run_id}: its decisions are not the ones the ledger holds\n"
        f"explain: {[(n, c[0]) for n, c in named]}\nledger:  {[(n, c[0]) for n, c in actions]}")
    return decisions


def runs_of(home: Path) -> list[str]:
    """Every run the ledger of ``home`` knows: a run or archive file, or a claim."""
    runs = {p.stem for folder in ("runs", "archive")
            for p in (home / "ledger").glob(f"*/{folder}/*.jsonl")}
    runs |= {line["run"] for target in _targets(home) for line in _lines(target / "tick.jsonl")
             if line["kind"] == "run_queued" and line.get("run")}
    return sorted(runs)


def check_every_run(home: Path, *, some: bool = True) -> list[str]:
    """``check_explained`` for each run of ``home``; the runs. ``some``: there must be
    one."""
    runs = runs_of(home) if (home / "ledger").is_dir() else []
    assert runs or not some, f"no runs in {home}"
    for run_id in runs:
        check_explained(home, run_id)
    return runs
