"""The key check of ``outerloop explain``: its decisions are the actions taken.

Read from the ledger's raw JSON lines (not through the explain code): every line of
the target's ``tick.jsonl`` about a run that records a decision (an intent, a recorded
event) and every intent of the run's own job, each with the decision name this check
expects for it. ``outerloop explain RUN --json`` must name exactly those, in that
order, each citing that line first: nothing the ticks did is left out, nothing is
named that no tick (or run job) did.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from click.testing import CliRunner

from outerloop.cli import main

OUTCOMES = frozenset({"done", "failed"})
"""An intent's outcome: part of the intent's decision, never a decision of its own."""
NOT_DECISIONS = frozenset({"feedback_cursor", "seeds_drawn", "note", "gate_look_more"})
"""Bookkeeping lines (how far a PR was read, the hidden seeds): facts, not decisions."""

_EFFECT: dict[str, Callable[[dict[str, object]], str]] = {
    "prepare_workspace": lambda a: "admitted",
    "submit_job": lambda a: f"submit-{a['purpose']}",
    "post_comment": lambda a: f"post-{a['marker_kind']}",
    "open_pr": lambda a: "pr-draft" if a.get("draft") else "pr-ready",
    "close_issue": lambda a: "close-pr" if a.get("pull") else "close-issue",
    "cancel_job": lambda a: "cancel-job",
    "clean_workspace": lambda a: "clean-workspace",
    "prune_jobs": lambda a: "prune-jobs",
    "submit_archive": lambda a: "submit-archive",
}
_RECORDED: dict[str, Callable[[dict[str, object]], str]] = {
    "run_queued": lambda e: "claimed",
    "run_ended": lambda e: "ended",
    "job_ended": lambda e: "job-ended",
    "parked": lambda e: f"parked-{e['reason']}",
    "infra_wait": lambda e: "waiting-machine",
    "endpoint_wait": lambda e: "waiting-endpoint",
    "deadline_extended": lambda e: "deadline-extended",
    "feedback": lambda e: "feedback",
    "publish_ready": lambda e: "review",
    "archived": lambda e: "archived",
}


def _expected(line: dict[str, object]) -> str:
    kind = str(line["kind"])
    if kind == "intent":
        action = line["action"]
        assert isinstance(action, dict)
        return _EFFECT[str(action["kind"])](action)
    return _RECORDED[kind](line)


def actions_taken(home: Path, target_dir: str, run_id: str) -> list[tuple[str, int, str]]:
    """(file, seq, decision) for each decision the ticks and the run's job recorded."""
    taken = []
    tick = f"{target_dir}/tick.jsonl"
    own = f"{target_dir}/runs/{run_id}.jsonl"
    for key in (tick, own):
        path = home / "ledger" / key
        if not path.is_file():
            continue
        for raw in path.read_text().splitlines():
            line = json.loads(raw)
            if key == tick and line.get("run") != run_id:
                continue
            if line["kind"] in OUTCOMES or line["kind"] in NOT_DECISIONS:
                continue
            if key == own and line["kind"] != "intent":
                continue  # the run's own facts: its legs, gate and review (checked apart)
            taken.append((key, int(line["seq"]), _expected(line)))
    return taken


def explained(home: Path, run_id: str) -> list[dict[str, object]]:
    result = CliRunner().invoke(main, ["explain", "--home", str(home), "--json", run_id])
    assert result.exit_code == 0, result.output
    decisions = json.loads(result.output)
    assert isinstance(decisions, list)
    return decisions


def _kinds(home: Path) -> dict[tuple[str, int], str]:
    """Each ledger line's kind by (file, seq)."""
    ledger = home / "ledger"
    return {(str(path.relative_to(ledger)), int(line["seq"])): str(line["kind"])
            for path in ledger.glob("*/**/*.jsonl") if path.name != "heads.jsonl"
            for line in map(json.loads, path.read_text().splitlines())}


def check_home(home: Path) -> int:
    """Check every run of ``home``; the number of runs checked."""
    runs = sorted((home / "ledger").glob("*/runs/*.jsonl"))
    kinds = _kinds(home)
    for path in runs:
        target_dir, run_id = path.parent.parent.name, path.stem
        taken = actions_taken(home, target_dir, run_id)
        named: list[tuple[str, int, str]] = []
        seen: set[tuple[str, int]] = set()
        for d in explained(home, run_id):
            facts = d["facts"]
            assert isinstance(facts, list) and facts, d
            for fact in facts:
                assert (fact["file"], fact["seq"]) in kinds, f"explain cites {fact}: no such line"
            where = (str(facts[0]["file"]), int(facts[0]["seq"]))
            if where in seen:
                continue  # one fact, several decisions (a review and its PR): the first
            seen.add(where)
            if where[0].endswith("tick.jsonl") or kinds[where] == "intent":
                named.append((*where, str(d["decision"]).removesuffix("-again")))
        for key in {where for where, _, _ in taken} | {where for where, _, _ in named}:
            mine = [n for n in named if n[0] == key]  # each file in its own order; the
            done = [t for t in taken if t[0] == key]  # files merge in the fold's order
            assert mine == done, (f"{home} {run_id}: explain's decisions differ from the "
                                  f"actions taken in {key}\nexplain: {mine}\ntaken:   {done}")
    return len(runs)
