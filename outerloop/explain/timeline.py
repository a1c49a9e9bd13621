"""A run's decisions, replayed: its facts folded one at a time by the fold itself.

Each fact is folded into a fresh ``State`` with ``fold.apply_event`` (the function
every rebuild uses), and what the fold made of it (the run's record before and after)
is said as one ``TimelineStep`` (a decision) naming the facts that caused it. Nothing here decides
anything: an intent says what the tick or the run's job did, a run event what the run's
job recorded, and the record what the fold concluded, so the explanation cannot say
something the kernel did not do. A write-ahead intent and its ``done`` or ``failed``
are one decision (what was done, and how it came out); an intent that failed or is not
settled yet is named ``<action>-failed`` or ``<action>-pending``: it was not an action
taken.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from outerloop import effects as eff
from outerloop.explain.facts import Fact
from outerloop.ledger import events as ev
from outerloop.ledger.book import apply_event
from outerloop.ledger.state import RunRecord, State
from outerloop.numfmt import format_number
from outerloop.vocabulary import JobPurpose

MAX_REASON_CHARS = 400


@dataclass(frozen=True, slots=True)
class Cited:
    """A ledger line a decision names: its file (under ``ledger/``) and ``seq``."""

    file: str
    seq: int


@dataclass(slots=True)
class TimelineStep:
    at: str
    decision: str
    """A short stable name (``claimed``, ``admitted``, ``leg``, ``verdict``...)."""
    reason: str
    facts: list[Cited] = field(default_factory=list)


def effect_decision(action: eff.Effect | eff.Unreadable) -> str:
    """The decision an effect is: what the tick (or the run's job) did."""
    match action:
        case eff.PrepareWorkspace():
            return "admitted"
        case eff.SubmitJob():
            return f"submit-{action.purpose}"
        case eff.PostComment():
            return f"post-{action.marker_kind}"
        case eff.OpenPR():
            return "pr-draft" if action.draft else "pr-ready"
        case eff.CloseIssue():
            return "close-pr" if action.pull else "close-issue"
        case eff.Unreadable():
            return "unreadable-intent"
        case _:
            return action.kind.replace("_", "-")


_LEG_WHY: dict[str, str] = {
    JobPurpose.CLIMB: "the first leg, with the brief",
    JobPurpose.WAKE: "a wake",
    JobPurpose.RECOVER: "a recovery (the job before it died)",
    JobPurpose.RETRY: "a retry (the machine or an endpoint stopped the one before)",
}
"""What a leg job's purpose says of the leg."""


def _cut(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= MAX_REASON_CHARS else line[: MAX_REASON_CHARS - 3] + "..."


def _cite(fact: Fact) -> Cited:
    return Cited(fact.file, fact.seq)


class _Replay:
    """The fold of one run's facts, with what each fact decided."""

    def __init__(self, run_id: str, facts: list[Fact]) -> None:
        self.run_id = run_id
        self.state = State()
        self.facts = facts
        self.out: list[TimelineStep] = []
        self.outcomes: dict[tuple[str, str], Fact] = {}
        for fact in facts:
            if isinstance(fact.event, ev.Done | ev.Failed):
                self.outcomes.setdefault((fact.file, fact.event.key), fact)

    @property
    def run(self) -> RunRecord | None:
        return self.state.runs.get(self.run_id)

    def add(self, fact: Fact, decision: str, reason: str, *more: Fact) -> None:
        self.out.append(TimelineStep(at=fact.event.at, decision=decision, reason=_cut(reason),
                                 facts=[_cite(fact), *(_cite(m) for m in more)]))

    def replay(self) -> list[TimelineStep]:
        for fact in self.facts:
            event = fact.event
            handler = _HANDLERS.get(type(event))
            before = self._snapshot()
            apply_event(self.state, fact.file, event)
            if handler is not None:
                handler(self, fact, before)
        return self.out

    def _snapshot(self) -> tuple[int, int, str]:
        run = self.run
        return (run.legs, run.submissions, str(run.state)) if run else (0, 0, "")

    # intents: what was done ------------------------------------------------------

    def intent(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        assert isinstance(event, ev.Intent)
        outcome = self.outcomes.get((fact.file, event.effect_key))
        action = event.action
        how, settled = "pending (not settled yet)", "-pending"
        if outcome is not None and isinstance(outcome.event, ev.Done):
            settled = ""
            how = "done" + (f" ({_result(outcome.event.result)})"
                            if _result(outcome.event.result) else "")
        elif outcome is not None and isinstance(outcome.event, ev.Failed):
            how, settled = f"failed: {outcome.event.error}", "-failed"
        who = "the tick" if fact.file.endswith("tick.jsonl") else "the run's job"
        more = [outcome] if outcome is not None else []
        self.add(fact, effect_decision(action) + settled,
                 f"{who}: {_effect_words(action, self)}; {how}", *more)

    # run events: what the run's job (or the tick for it) recorded -----------------

    def queued(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        assert isinstance(event, ev.RunQueued)
        on = f"issue #{event.issue} ({event.issue_title})" if event.issue is not None \
            else "the kernel's choice"
        self.add(fact, "claimed", f"intake claimed {on} for benchmark `{event.benchmark}` as "
                                  f"{event.agent}, claim {event.claim_no}")

    def leg_started(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        assert isinstance(event, ev.LegStarted)
        job = self.state.jobs.get(event.job_id or "")
        purpose = job.purpose if job is not None else "?"
        why = _LEG_WHY.get(purpose, f"a {purpose} job")
        if event.role == JobPurpose.CLIMB and purpose != JobPurpose.CLIMB:
            why += ", with the brief (no session had ended yet)"
        run = self.run
        parts = [f"leg {event.leg} ({event.role}) in job {event.job_id}: {why}"]
        if run is not None and event.role == JobPurpose.WAKE:
            results = [f"{j.job_id} {j.state}" for j in (self.state.jobs.get(i)
                       for i in run.park_jobs) if j is not None]
            if results:
                parts.append("with the results of " + ", ".join(results))
        delivered = self._delivered(fact, event.leg)
        if delivered:
            parts.append("carrying feedback " + ", ".join(delivered))
        if event.refused:
            parts.append(f"telling the agent: {event.refused}")
        self.add(fact, "leg", "; ".join(parts))
        if event.refused:
            self.add(fact, "refused", f"the kernel refused the agent's request: {event.refused}")

    def _delivered(self, fact: Fact, leg: int) -> list[str]:
        """The feedback the leg's prompt carried: its ``leg_ended``'s ``delivered``."""
        for later in self.facts:
            if later.order > fact.order and isinstance(later.event, ev.LegEnded) \
                    and later.event.leg == leg:
                return list(later.event.delivered)
        return []

    def leg_ended(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        assert isinstance(event, ev.LegEnded)
        asked = event.request.get("verb") if event.request else None
        what = f"asked to {asked}" if asked else "committed no request"
        self.add(fact, "leg-ended", f"leg {event.leg} ended ({event.stop_reason}, "
                                    f"{event.turns} turns, ${event.cost_usd:.2f}): {what}")
        if event.error:
            self.add(fact, "refused", f"the request was refused: {event.error}")

    def launched(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        assert isinstance(event, ev.Launched)
        array = f" x{event.array}" if event.array else ""
        self.add(fact, "launch", f"experiment `{event.name}`{array} as job {event.job_id} "
                                 f"({event.minutes} min, {event.gpus} GPU): {event.why}")

    def parked(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        assert isinstance(event, ev.Parked)
        on = {"jobs": "its experiments", "eval": "the gate's eval pairs",
              "review": "review"}[event.reason]
        look = f", look {event.look}" if event.look else ""
        retry = ", re-run" if event.retry else ""
        self.add(fact, f"parked-{event.reason}",
                 f"the run waits on {on} ({', '.join(event.job_ids) or 'no jobs'}{look}{retry})"
                 f"; wake job {event.wake_job or '-'}, deadline {event.deadline or '-'}")

    def gate_look(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        assert isinstance(event, ev.GateLook)
        pairs = ", ".join(f"{format_number(b)}->{format_number(c)}" for b, c in event.pairs)
        self.add(fact, "gate-look",
                 f"submission {event.submission} look {event.look}: pairs {pairs}; "
                 f"t={event.t:.3g} against threshold {event.critical:.3g} "
                 f"(alpha {event.alpha:.3g}): {event.decision}"
                 + (f"; {event.detail}" if event.detail else ""))

    def verdict(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        assert isinstance(event, ev.Verdict)
        base, cand, delta = event.baseline, event.candidate, event.delta
        nums = (f"{format_number(base)} -> {format_number(cand)} (gain "
                f"{format_number(delta) if delta else '?'})" if base and cand else "no numbers")
        low, high = event.low, event.high
        interval = (f", interval [{format_number(low)}, {format_number(high)}]"
                    if low and high else "")
        looks = self.run.looks.get(event.submission, []) if self.run else []
        cites = [f for f in self.facts if isinstance(f.event, ev.GateLook)
                 and f.event.submission == event.submission and f.order < fact.order]
        conf = f", confidence {event.confidence:g}" if event.confidence else ""
        unit = "couple(s)" if event.order is not None else "pair(s)"
        order = (f"; order effect {format_number(event.order)} (a side running second "
                 f"measured that much better; interval [{format_number(event.order_low or '?')}, "
                 f"{format_number(event.order_high or '?')}], cancelled by the couples)"
                 if event.order is not None else "")
        self.add(fact, "verdict",
                 f"gate verdict on submission {event.submission}: {event.verdict}; {nums} "
                 f"over {event.seeds} {unit}{interval}{conf}{order}; {len(looks)} look(s)"
                 + (f"; {event.detail}" if event.detail else ""), *cites)

    def confirmation(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        assert isinstance(event, ev.Confirmation)
        self.add(fact, "confirmation", f"submission {event.submission} measured again: "
                                       f"{'reproduced' if event.reproduced else 'not reproduced'}")

    def revision(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        assert isinstance(event, ev.RevisionAsked)
        self.add(fact, "review", f"the review blocked submission {event.submission} "
                                 f"(round {event.round}): {_findings(event.findings)}; "
                                 f"the findings go back to the agent")

    def publish(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        assert isinstance(event, ev.PublishReady)
        self.add(fact, "review", f"the review panel: {_findings(event.findings)}"
                 + (f"; degraded: {event.degraded}" if event.degraded else ""))
        if event.draft:
            why = (f"the review was degraded ({event.degraded})" if event.degraded else
                   "the review found " + _findings([f for f in event.findings
                                                    if f.severity == "blocking"]))
            self.add(fact, "publish-draft", f"the PR is to open as a draft: {why}")
        else:
            self.add(fact, "publish-ready", "the PR is to open ready for review: credited, "
                                            "and the review found nothing blocking")

    def simple(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        words = _SIMPLE[type(event)]
        self.add(fact, words[0], words[1](event))

    def ended(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        assert isinstance(event, ev.RunEnded)
        run = self.run
        first = run is not None and run.ended_at == event.at and run.ending == event.ending
        by = "the tick" if fact.file.endswith("tick.jsonl") else "the run's job"
        self.add(fact, "ended" if first else "ended-again",
                 f"{by} ended the run `{event.ending}`"
                 + (f": {event.reason}" if event.reason else "")
                 + ("" if first else " (a later ending: the first one stands)"))

    def job_ended(self, fact: Fact, _before: tuple[int, int, str]) -> None:
        event = fact.event
        assert isinstance(event, ev.JobEnded)
        job = self.state.jobs.get(event.job_id)
        what = f"{job.purpose} job" if job is not None else "job"
        self.add(fact, "job-ended", f"{what} {event.job_id} ended {event.state}"
                                    + (f" (exit {event.exit_code})"
                                       if event.exit_code is not None else ""))


def _result(result: ev.EffectResult) -> str:
    if result.job_id is not None:
        return f"job {result.job_id}"
    if result.number is not None:
        return f"#{result.number}"
    if result.base is not None:
        line = (f"; the line starts at {result.line_start[:12]}" if result.line_start
                else "")
        if result.conflicts:
            line += f" (merging the base conflicted in {', '.join(result.conflicts)})"
        return f"at {result.base[:12]}{line}"
    return ""


def _effect_words(action: eff.Effect | eff.Unreadable, replay: _Replay) -> str:
    match action:
        case eff.PrepareWorkspace():
            return (f"admission started the run: workspace at {action.base[:12]} on branch "
                    f"{action.branch}" + (f", on the research line {action.line}"
                                          if action.line else ""))
        case eff.PushLine():
            return f"pushed the research line {action.branch} to {action.sha[:12]}"
        case eff.SubmitJob():
            return f"submitted {action.purpose} job {action.spec.name}"
        case eff.PostComment():
            return f"posted a {action.marker_kind} comment on #{action.number}"
        case eff.OpenPR():
            run = replay.run
            why = ""
            if run is not None and run.publish is not None:
                why = (" (draft: " + (run.publish.degraded or "the review blocked it") + ")"
                       if action.draft else " (ready)")
            return f"pushed {action.sha[:12]} to {action.head} and opened the PR{why}"
        case eff.CloseIssue():
            return f"closed {'PR' if action.pull else 'issue'} #{action.number}" + (
                f": {action.why}" if action.why else "")
        case eff.CancelJob():
            return f"cancelled job {action.job_id}" + (f": {action.why}" if action.why else "")
        case eff.Unreadable():
            return "an action this version cannot read"
        case _:
            return action.kind.replace("_", " ")


def _findings(findings: list[ev.ReviewFinding]) -> str:
    if not findings:
        return "no findings"
    return "; ".join(f"{f.severity}: {f.summary}" + (f" ({f.source})" if f.source else "")
                     for f in findings)


def _line_saved(event: ev.Decoded) -> str:
    """A hand-over saved on the run's research line, and what was kept off it."""
    assert isinstance(event, ev.LineSaved)
    words = (f"the hand-over of leg {event.leg} saved on the research line as "
             f"{event.sha[:12]}")
    if event.withheld:
        words += f"; kept off it (a known secret): {', '.join(event.withheld)}"
    if event.refused:
        words += f"; memory files refused (a link, or too big): {', '.join(event.refused)}"
    return words


_SIMPLE: dict[type, tuple[str, Callable[[ev.Decoded], str]]] = {
    ev.InfraWait: ("waiting-machine", lambda e: f"the leg job died of the machine: "
                   f"{getattr(e, 'message', '') or getattr(e, 'cause', '')}"),
    ev.EndpointWait: ("waiting-endpoint", lambda e: f"model endpoint "
                      f"{getattr(e, 'endpoint', '')} is down: {getattr(e, 'detail', '')}"),
    ev.DeadlineExtended: ("deadline-extended", lambda e: f"the park's jobs wait in the "
                          f"queue ({getattr(e, 'reason', '')}): deadline moved to "
                          f"{getattr(e, 'deadline', '')}"),
    ev.Feedback: ("feedback", lambda e: f"{getattr(e, 'author', '')} wrote on the "
                  f"{getattr(e, 'source_kind', '')} {getattr(e, 'where', '')}: waits for a "
                  f"wake ({getattr(e, 'source_id', '')})"),
    ev.Outbox: ("outbox", lambda e: "the agent asked to post on its thread"),
    ev.LineSaved: ("line-saved", lambda e: _line_saved(e)),
    ev.RunAlpha: ("alpha", lambda e: f"the run's share of its target's false-credit budget: "
                  f"alpha {getattr(e, 'alpha', 0):.3g} (run {getattr(e, 'index', 0)} holding "
                  f"one of {getattr(e, 'budget', 0):.3g}; the others held "
                  f"{getattr(e, 'held', 0):.3g})"),
    ev.Archived: ("archived", lambda e: f"the run's files went to {getattr(e, 'where', '')}"),
    ev.ArchiveFailed: ("archive-failed", lambda e: f"archiving the run's files failed "
                       f"(nothing local deleted; retried): {getattr(e, 'error', '')}"),
    ev.ArchiveRestored: ("archive-restored", lambda e: f"the run's archive was brought "
                         f"back from {getattr(e, 'where', '')}"),
}


_HANDLERS: dict[type, Callable[[_Replay, Fact, tuple[int, int, str]], None]] = {
    ev.Intent: _Replay.intent,
    ev.RunQueued: _Replay.queued,
    ev.LegStarted: _Replay.leg_started,
    ev.LegEnded: _Replay.leg_ended,
    ev.Launched: _Replay.launched,
    ev.Parked: _Replay.parked,
    ev.GateLook: _Replay.gate_look,
    ev.Verdict: _Replay.verdict,
    ev.Confirmation: _Replay.confirmation,
    ev.RevisionAsked: _Replay.revision,
    ev.PublishReady: _Replay.publish,
    ev.RunEnded: _Replay.ended,
    ev.JobEnded: _Replay.job_ended,
    **{kind: _Replay.simple for kind in _SIMPLE},
}


def explain_run(run_id: str, facts: list[Fact]) -> list[TimelineStep]:
    """The run's decisions, in the fold's order."""
    return _Replay(run_id, facts).replay()


def issue_steps(facts: list[Fact]) -> list[TimelineStep]:
    """An issue's decisions before it was claimed: its waits (intake's ``issue_waits``)
    and what the kernel told its author (``post-status``: "it names 2 benchmarks")."""
    outcomes = {f.event.key: f for f in facts if isinstance(f.event, ev.Done | ev.Failed)}
    out = []
    for fact in facts:
        event = fact.event
        if isinstance(event, ev.IssueWaits):
            out.append(TimelineStep(at=event.at, decision="issue-waits",
                                    reason=_cut(f"not claimed yet: {event.reason}"),
                                    facts=[_cite(fact)]))
        elif isinstance(event, ev.Intent) and isinstance(event.action, eff.PostComment):
            outcome = outcomes.get(event.effect_key)
            settled = "-pending" if outcome is None else (
                "-failed" if isinstance(outcome.event, ev.Failed) else "")
            cited = [_cite(fact), *([_cite(outcome)] if outcome is not None else [])]
            out.append(TimelineStep(at=event.at, decision=effect_decision(event.action)
                                    + settled, facts=cited, reason=_cut(
                                        f"not claimed; told the author: {event.action.body}")))
    return out
