"""Settling: a run that has ended, been reported and recorded, with no job left live,
drops its bulky details and becomes a row of the history index (``ledger/runs.py``), so the state
a quiet tick loads stays small at any history length. Run after the fold
(``fold.apply_event``, which re-exports ``compact``) by ``rebuild.rebuild``."""

from __future__ import annotations

from outerloop.ledger.records import RunRecord
from outerloop.ledger.state import State
from outerloop.vocabulary import GateVerdict

RECORD_PREFIX = "record:"
"""The done keys of research-log records (``record:<target>:<n>``)."""


def settled(state: State, run: RunRecord, record_lane: bool) -> bool:
    """Ended, its report posted (when it came from an issue) and, when the research-log
    is kept, recorded there, its research line pushed, with none of its jobs still
    live."""
    if not run.ended or run.settled:
        return False
    if run.issue is not None and not run.report_posted:
        return False
    if record_lane and not run.recorded:
        return False
    if run.line is not None and run.line.unpushed:
        return False  # its line's last hand-over is on the forge first (lanes/lines.py)
    return all(state.jobs[j].terminal for j in run.job_ids if j in state.jobs)


def compact(state: State, record_lane: bool = True) -> int:
    """Drop the bulky details of settled runs so the state a quiet tick loads stays
    small at any history length. What the lanes still read of an ended run is kept:
    identity, ending, legs, outage, refusal, cost, PR, credited verdicts."""
    _forget_old_records(state)
    count = 0
    for run in state.runs.live():
        if not settled(state, run, record_lane):
            continue
        for job_id in run.job_ids:
            state.jobs.pop(job_id, None)
        for key in state.done_by_run.pop(run.run_id, []):
            state.done_keys.pop(key, None)
        for key in [k for k, f in state.failures.items() if f.run == run.run_id]:
            del state.failures[key]
        run.verdicts = [v for v in run.verdicts if v.verdict == GateVerdict.IMPROVED]
        run.job_ids, run.launches, run.park_jobs, run.park_evals = [], [], [], []
        run.feedback, run.delivered, run.outbox, run.posted = {}, set(), {}, set()
        run.publish, run.seeds, run.pending_request = None, {}, None
        run.salts, run.confirmations, run.looks, run.trees = {}, {}, {}, {}
        run.report, run.hypothesis, run.texts = "", "", {}
        run.comments_cursor = run.review_comments_cursor = run.issue_comments_cursor = ""
        run.issue_thread_settled = False
        run.base_sha = run.branch = run.session_id = run.pr_head = run.published_sha = None
        run.climb_job = run.wake_job = run.deadline = run.park_seal = run.pending_error = None
        run.ended_order = run.infra_wait = run.endpoint_wait = run.revision = None
        run.rebase_to = run.rebased = run.line = None
        run.settled = True
        count += 1
    summarise_settled(state)
    return count


def _forget_old_records(state: State) -> None:
    """Drop the done keys of research-log records older than each target's latest:
    what was published is ``State.published`` and the runs' ``recorded``, so these
    keys (one per record ever made) are needed by nothing. An intent still pending
    keeps its reconciliation (the finder); the latest key stays, so the same record
    is not planned twice."""
    latest = {mark.key for mark in state.published.values()}
    for key in [k for k in state.done_keys if k.startswith(RECORD_PREFIX) and k not in latest]:
        del state.done_keys[key]


def summarise_settled(state: State) -> None:
    """Move every settled run with no live job to the history index (``ledger/runs.py``). A run
    read back since it settled (a clean, a prune, an archive) drops the done keys it got
    meanwhile, as ``compact`` dropped its earlier ones: its record says what was done
    (``cleaned``, ``pruned``, ``archive``), and kept they grew with history (two per run)."""
    for run in state.runs.live():
        if run.settled and not any(
                j in state.jobs and not state.jobs[j].terminal
                for j in (*run.job_ids, *run.archive_jobs)):
            for key in state.done_by_run.pop(run.run_id, []):
                state.done_keys.pop(key, None)
            state.runs.summarise(run.run_id)
