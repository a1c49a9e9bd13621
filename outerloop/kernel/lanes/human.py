"""Steps waiting on a human (``human_waits``, ``retry_rule``): the run's issue is told
once per cause, through the executor like every post (its marker keeps it to one
post across crashes). The step itself is planned by its own lane, which keeps trying
it every ``[limits] human_retry_minutes``; this lane only tells. A wait on a post of this lane tells
nothing more (it would only fail the same way)."""

from __future__ import annotations

from outerloop.human_waits import HumanWait, human_waits
from outerloop.kernel.actions import Action, PostComment
from outerloop.kernel.lanes.common import step_due
from outerloop.kernel.lanes.view import TickView
from outerloop.text import code_span

WAITING_KIND = "waiting"


def _body(wait: HumanWait, retry_s: float) -> str:
    minutes = max(1, round(retry_s / 60))
    return (f"outerloop cannot go on with run {code_span(wait.run or '')} without a "
            f"person: {wait.words}.\n\nFix: {wait.fix}.\n\nouterloop tries again every "
            f"{minutes} minutes and goes on by itself once it is fixed; `outerloop "
            f"status` and `outerloop doctor` show this wait too.")


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    actions: list[Action] = []
    told: set[str] = set()
    retry_s = view.settings.limits.human_retry_minutes * 60
    for wait in human_waits(view.state, view.obs.now, retry_s):
        run = view.state.runs.get(wait.run) if wait.run else None
        if run is None or run.issue is None or f":{WAITING_KIND}:" in wait.key:
            continue
        seen = view.obs.targets.get(run.target)
        if seen is None or seen.error:
            continue
        post = PostComment(target=run.target, run=run.run_id, number=run.issue,
                           body=_body(wait, retry_s), marker_kind=WAITING_KIND,
                           marker_key=f"{run.run_id}-{wait.cause}")
        if post.key not in told and step_due(view, post):
            told.add(post.key)
            actions.append(post)
    return actions
