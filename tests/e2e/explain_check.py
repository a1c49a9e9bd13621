"""`outerloop explain` against the ledger: its decisions are the actions the kernel took.

``check_explained(home, run)`` reads the ledger's raw lines (plain JSON, not the
kernel's decoder) and collects every action performed for the run: each write-ahead
``intent`` in a target's ``tick.jsonl`` naming the run, with its ``done`` or ``failed``,
the tick's ``run_queued`` and ``run_ended`` of it, and each line of the run's own file
(``runs/<id>.jsonl``: its job's intents and events). Each must appear in
``explain --json``, in the ledger's order (logical clock), as the decision this table
names, citing that very line; and explain may name no action decision (one citing an
intent) that is not among them.

The table below is the test's own: it does not import explain's names, so a mapping
broken in explain shows here.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from outerloop.cli import main as cli_main

Line = dict[str, Any]
Cite = tuple[str, int]


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
    "job_ended": "job-ended", "run_queued": "claimed", "run_ended": "ended",
}
_NO_DECISION = {"seeds_drawn", "feedback_cursor", "feedback_delivered", "note",
                "endpoint_down", "endpoint_up", "done", "failed"}


def _event_name(line: Line) -> str | None:
    """What explain calls a ledger event (None: a bookkeeping line, no decision)."""
    kind = line["kind"]
    if kind == "parked":
        return f"parked-{line['reason']}"
    if kind in _EVENT_NAMES:
        return _EVENT_NAMES[kind]
    if kind in _NO_DECISION:
        return None
    raise AssertionError(f"run-file event {kind!r} has no expected decision: add it here "
                         f"and to outerloop/explain/timeline.py")


def _lines(path: Path) -> list[Line]:
    if not path.is_file():
        return []
    return [json.loads(text) for text in path.read_text().splitlines() if text.strip()]


def _order(file: str, line: Line) -> tuple[int, str, str, int]:
    return (line["lc"], line["at"], file, line["seq"])


def _intents(file: str, lines: list[Line], run: str | None,
             ) -> list[tuple[tuple[int, str, str, int], str, list[Cite]]]:
    """The intents in ``lines`` (of ``run``, or all) with their outcome, as expected
    decisions: (order, name, cited facts)."""
    outcomes = {line["key"]: line for line in lines if line["kind"] in ("done", "failed")}
    out = []
    for line in lines:
        if line["kind"] != "intent" or (run is not None and line.get("run") != run):
            continue
        outcome = outcomes.get(line["key"])
        suffix = "-pending" if outcome is None else \
            "" if outcome["kind"] == "done" else "-failed"
        cites = [(file, line["seq"])] + ([(file, outcome["seq"])] if outcome else [])
        out.append((_order(file, line), _action_name(line["action"]) + suffix, cites))
    return out


def performed(home: Path, run_id: str) -> list[tuple[str, list[Cite], bool]]:
    """Every action the ledger holds for ``run_id``, in the ledger's order: (the name
    explain must give it, the facts it must cite, whether it is an intent)."""
    found: list[tuple[tuple[int, str, str, int], str, list[Cite], bool]] = []
    for target in sorted(p for p in (home / "ledger").iterdir()
                         if p.is_dir() and p.name[0] != "."):
        tick_file, run_file = f"{target.name}/tick.jsonl", f"{target.name}/runs/{run_id}.jsonl"
        tick, own = _lines(target / "tick.jsonl"), _lines(target / "runs" / f"{run_id}.jsonl")
        found += [(o, n, c, True) for o, n, c in _intents(tick_file, tick, run_id)]
        found += [(o, n, c, True) for o, n, c in _intents(run_file, own, None)]
        for file, lines, kinds in ((tick_file, tick, {"run_queued", "run_ended"}),
                                   (run_file, own, None)):
            for line in lines:
                if line["kind"] == "intent" or (kinds is not None and (
                        line["kind"] not in kinds or line.get("run") != run_id)):
                    continue
                name = _event_name(line)
                if name is not None:
                    found.append((_order(file, line), name, [(file, line["seq"])], False))
    out: list[tuple[str, list[Cite], bool]] = []
    ended = False
    for _, name, cites, intent in sorted(found):
        if name == "ended":
            name, ended = ("ended-again" if ended else "ended"), True
        out.append((name, cites, intent))
    return out


def explained(home: Path, run_id: str) -> list[Line]:
    done = CliRunner().invoke(cli_main, ["explain", run_id, "--json", "--home", str(home)])
    assert done.exit_code == 0, done.output
    decisions: list[Line] = json.loads(done.output)
    return decisions


def _is_intent(home: Path, cite: Cite) -> bool:
    file, seq = cite
    return any(x["seq"] == seq and x["kind"] == "intent" for x in _lines(home / "ledger" / file))


def check_explained(home: Path, run_id: str) -> list[Line]:
    """Assert explain's decisions for ``run_id`` are the actions its ledger holds, in
    order, and no more action decisions; returns the decisions."""
    decisions = explained(home, run_id)
    actions = performed(home, run_id)
    assert actions, f"no actions in the ledger for {run_id}"
    cited = [[(f["file"], f["seq"]) for f in d["facts"]] for d in decisions]
    at = 0
    for name, cites, _ in actions:
        while at < len(decisions) and not (decisions[at]["decision"] == name
                                           and cited[at][: len(cites)] == cites):
            at += 1
        assert at < len(decisions), (
            f"explain {run_id}: no decision {name!r} citing {cites} in order; explain said "
            + json.dumps([(d["decision"], c) for d, c in zip(decisions, cited, strict=True)]))
        at += 1
    said = sorted((d["decision"], c[0]) for d, c in zip(decisions, cited, strict=True)
                  if _is_intent(home, c[0]))
    taken = sorted((name, cites[0]) for name, cites, intent in actions if intent)
    assert said == taken, (f"explain {run_id}: its action decisions {said} are not the "
                           f"actions the ledger holds {taken}")
    return decisions


def check_every_run(home: Path) -> list[str]:
    """``check_explained`` for each run with a run file in ``home``; the runs."""
    runs = sorted({p.stem for p in (home / "ledger").glob("*/runs/*.jsonl")})
    assert runs, f"no runs in {home}"
    for run_id in runs:
        check_explained(home, run_id)
    return runs
