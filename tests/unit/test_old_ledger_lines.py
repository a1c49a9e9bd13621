"""A real run's ledger as the version before issue 27's slimming wrote it (every field
at its default written, whole job specs in ``submit_job`` intents, the PR body in both
``publish_ready`` and its ``open_pr`` intent, the report in both ``run_ended`` and its
comment's intent, ``done`` lines naming their run, research-log records with their
files' hashes) still folds to the state that version folded it into, and still
verifies (its chain hashes the lines as they were written).

The fixture (``tests/golden/ledger-before-issue27``) is a demo run's ledger as
``bench/busy_tick.py``'s ``demo_template`` leaves it (``outerloop demo``, the PR
merged, ticked until the run ended), written by commit c144d4c; ``EXPECTED`` is
``summary`` of it as that commit's fold made it (run with that commit's ``outerloop``
first on the path)."""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any

import msgspec

from outerloop.ledger.book import apply_event, decode_lines, order_of, verify_home
from outerloop.ledger.state import State

FIXTURE = Path(__file__).resolve().parent.parent / "golden" / "ledger-before-issue27"
EXPECTED = FIXTURE / "expected-fold.json"


def _digest(text: str | None) -> str | None:
    return None if text is None else hashlib.sha256(text.encode()).hexdigest()[:16]


def summary(ledger: Path) -> dict[str, Any]:
    """What the fold made of ``ledger``'s lines (one at a time, in the fold's order,
    nothing compacted): the facts each changed kind of line feeds."""
    placed = []
    for path in sorted(ledger.rglob("*.jsonl")):
        file = str(path.relative_to(ledger))
        events, bad = decode_lines(path.read_bytes().splitlines())
        assert bad == 0
        placed += [(order_of(file, event), file, event) for event in events]
    state = State()
    for _order, file, event in sorted(placed, key=lambda p: p[0]):
        apply_event(state, file, event)
    runs = {}
    for run in state.runs.values():
        publish = run.publish
        runs[run.run_id] = {
            "state": str(run.state), "ending": str(run.ending), "pr": run.pr_number,
            "report": _digest(run.report), "report_posted": run.report_posted,
            "recorded": run.recorded, "legs": run.legs, "sleeps": run.sleeps,
            "submissions": run.submissions, "verdicts": len(run.verdicts),
            "job_ids": list(run.job_ids), "climb_job": run.climb_job,
            "base_sha": run.base_sha, "branch": run.branch, "pr_head": run.pr_head,
            "published_sha": run.published_sha, "posted": sorted(run.posted),
            "publish_body": _digest(publish.body) if publish else None,
            "agent_report": _digest(getattr(publish, "agent_report", None)
                                    or (publish.report if publish else None)),
        }
    return {
        "runs": runs,
        "jobs": {job_id: [job.name, str(job.purpose), job.run, job.gpus, job.run_minutes,
                          str(job.state), job.exit_code, job.elapsed_s]
                 for job_id, job in sorted(state.jobs.items())},
        "done": {key: msgspec.json.decode(msgspec.json.encode(result))
                 for key, result in sorted(state.done_keys.items())},
        "done_by_run": {run: sorted(keys) for run, keys in sorted(state.done_by_run.items())},
        "intents": sorted(key for _file, key in state.intents),
        "failures": {k: f.count for k, f in sorted(state.failures.items())},
        "published": {t: [p.summary, p.board, p.key] for t, p in state.published.items()},
        "leaders": sorted(f"{t}/{b}={e.value}" for (t, b), e in state.leaders.items()),
    }


def test_a_ledger_written_before_the_slimming_folds_to_the_state_it_folded_to() -> None:
    assert summary(FIXTURE) == json.loads(EXPECTED.read_text())


def test_a_ledger_written_before_the_slimming_still_verifies(tmp_path: Path) -> None:
    shutil.copytree(FIXTURE, tmp_path / "ledger", ignore=shutil.ignore_patterns("*.json"))
    report = verify_home(tmp_path)
    assert not [p.text() for p in report.problems if p.kind != "heads"]
