"""Where a credited result stands: merged, open, blocked, not merged or superseded.

The board once drew every credited verdict into its best line, so a tamper-blocked
draft (a cheat's number) or a rejected pull request's candidate read as progress. One
rule here, for the tally (settled runs, folded once) and the board's live runs alike:

- a run's credited results are its ``improved`` verdicts; the latest is the one its pull
  request carries, the earlier ones were replaced by it (``superseded``), as the
  leaderboard's ``followup._leader`` takes the latest credited verdict of a merged run;
- the latest is ``merged`` when the run ended merged (a person merged it: even a draft,
  which is then their decision), else ``blocked`` while the review blocks it
  (``RunRecord.blocked``), else ``not-merged`` when the run ended otherwise, else
  ``open`` (published or about to be, not merged yet).

Only ``merged`` counts as progress (``ResultStanding.counts``).
"""

from __future__ import annotations

from collections.abc import Sequence

from outerloop.ledger import event_parts
from outerloop.ledger.records import Ending, RunRecord
from outerloop.text import one_line
from outerloop.vocabulary import GateVerdict, ResultStanding

MAX_WHY_CHARS = 200


def blocked_why(findings: Sequence[event_parts.ReviewFinding], degraded: str,
                asked: int = 0) -> str:
    """Why the review blocked a candidate, one line: its first blocking finding (and how
    many more), else the degraded review's words. ``asked``: the revision round that
    sent it back to the agent (0: it opens as a draft)."""
    blocking = [f for f in findings if f.severity == "blocking"]
    if blocking:
        first = blocking[0]
        who = f"{first.source}: " if first.source else ""
        more = f" (+{len(blocking) - 1} more)" if len(blocking) > 1 else ""
        why = f"{len(blocking)} blocking finding{'s' if len(blocking) > 1 else ''}: " \
              f"{who}{first.summary}{more}"
    elif degraded:
        why = f"review degraded: {degraded}"
    else:
        why = "the review made it a draft"
    if asked:
        why = f"sent back to revise (round {asked}); {why}"
    return one_line(why, MAX_WHY_CHARS)


def latest_credited(run: RunRecord) -> int | None:
    """The index of the run's latest credited verdict (None: none)."""
    for index in range(len(run.verdicts) - 1, -1, -1):
        if run.verdicts[index].verdict == GateVerdict.IMPROVED:
            return index
    return None


def credited_pr(run: RunRecord) -> bool:
    """The run opened a pull request for a credited result (an ``improved`` verdict) that
    the review did not block (ready, not a draft), or a person merged it."""
    return run.pr_number is not None and latest_credited(run) is not None and (
        not run.blocked or run.ending == Ending.MERGED)


def merged_pr(run: RunRecord) -> bool:
    """The run's pull request was merged (its ending is ``merged``)."""
    return run.ending == Ending.MERGED


def standing_of(run: RunRecord, index: int,
                latest: int | None = None) -> ResultStanding | None:
    """The standing of the run's verdict at ``index`` (None: it is not credited).
    ``latest``: ``latest_credited(run)``, when the caller has it."""
    if run.verdicts[index].verdict != GateVerdict.IMPROVED:
        return None
    if index != (latest_credited(run) if latest is None else latest):
        return ResultStanding.SUPERSEDED
    if run.ending == Ending.MERGED:
        return ResultStanding.MERGED
    if run.blocked:
        return ResultStanding.BLOCKED
    return ResultStanding.UNMERGED if run.ended else ResultStanding.OPEN


def standing_why(run: RunRecord, standing: ResultStanding | None) -> str:
    """The standing's reason in a few words: the review's (blocked), the run's ending
    (not merged), its pull request (open)."""
    if standing == ResultStanding.BLOCKED:
        return run.blocked
    if standing == ResultStanding.UNMERGED:
        return f"run ended {run.ending or 'ended'}" + (
            f": {one_line(run.end_reason, MAX_WHY_CHARS)}" if run.end_reason else "")
    if standing == ResultStanding.OPEN:
        return f"PR #{run.pr_number} not merged yet" if run.pr_number is not None \
            else "not published yet"
    if standing == ResultStanding.SUPERSEDED:
        return "a later credited submission of the run replaced it"
    return ""
