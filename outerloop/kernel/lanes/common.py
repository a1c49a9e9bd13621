"""Small pure helpers the lanes share."""

from __future__ import annotations

import re
from datetime import datetime

from outerloop.clock import parse_stamp
from outerloop.kernel.actions import Action, RecordEvent
from outerloop.kernel.lanes.view import TickView
from outerloop.ledger import book
from outerloop.ledger import events as ev
from outerloop.ledger.state import Ending, RunRecord
from outerloop.retry_rule import retry_delay_s
from outerloop.text import one_line


def seconds_since(stamp: str | None, now: datetime) -> float:
    if not stamp:
        return 0.0
    return (now - parse_stamp(stamp)).total_seconds()


def step_due(view: TickView, action: Action) -> bool:
    """True unless this exact effect already happened, or failed for sure and waits out
    its delay (``retry_rule``: backed off while its cause may pass, tried every
    ``[limits] human_retry_minutes`` while it waits on a human; never dropped, never every tick)."""
    state = view.state
    if action.key in state.done_keys:
        return False
    failed = state.failures.get(action.key)
    return failed is None or seconds_since(failed.last_at, view.obs.now) >= \
        retry_delay_s(failed.count, failed.cause, view.settings.limits.human_retry_minutes * 60)


MAX_REASON_CHARS = 300


def end_run(run: RunRecord, ending: Ending, why: str, by: str) -> RecordEvent:
    """The tick (or the operator) ends ``run``: ``why`` is the kernel's own account, the
    report's kernel note and, on one line, the ending's reason (``status``, the board)."""
    report, cited = book.cut(kernel_report(run, ending, why), run.texts)
    return RecordEvent(target=run.target, run=run.run_id, event=ev.RunEnded(
        ending=ending, report=report, cites=cited, by=by,
        reason=one_line(why, MAX_REASON_CHARS)))


def ended_report(run: RunRecord, ended: ev.RunEnded) -> str:
    """The whole report of ``ended`` (``end_run`` records it without the paragraphs the
    run's texts hold: ``ledger/cites.py``)."""
    return book.whole(ended.report, ended.cites, run.texts)


def end_or_publish_blocked(run: RunRecord, ending: Ending, why: str, by: str) -> RecordEvent:
    """End ``run``, unless it was revising a candidate the review blocked
    (``RunRecord.revising``): then that candidate's draft, recorded with the ask, is
    published instead, so what the gate credited is not lost to a revision that could
    not finish."""
    if run.revising and run.revision is not None:
        return RecordEvent(target=run.target, run=run.run_id, event=run.revision.draft)
    return end_run(run, ending, why, by)


def benchmarks_named(names: list[str], text: str) -> list[str]:
    """Which benchmark names appear in ``text`` as whole words (case-insensitive)."""
    found = []
    for name in names:
        pattern = (r"(?<![A-Za-z0-9_.-])" + re.escape(name)
                   + r"(?![A-Za-z0-9_-])(?!\.[A-Za-z0-9_])")
        if re.search(pattern, text, flags=re.IGNORECASE):
            found.append(name)
    return found


def kernel_report(run: RunRecord, ending: str, why: str) -> str:
    """The report of a run the tick ends, from what the ledger holds (pure)."""
    from outerloop.run.render import ReportInputs, recorded_view, render_report

    publish = run.publish
    verdicts = [recorded_view(v) for v in run.verdicts]
    return render_report(ReportInputs(
        run_id=run.run_id, ending=ending, benchmark=run.benchmark, hypothesis=run.hypothesis,
        agent_report=publish.agent_report if publish else "", verdicts=verdicts,
        pr_number=run.pr_number,
        experiments=list(publish.experiments) if publish else [],
        note=why))
