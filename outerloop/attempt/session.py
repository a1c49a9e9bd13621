"""The leg cycle: what a climb or wake job does for its run.

``continue_run`` is the single entry point of both ``attempt start`` and ``attempt
wake``. It reads the run's record and does the one next thing, so a job that died
anywhere can be followed by another that picks up where it stopped:

- a leg whose request was recorded but not acted on -> act on it (scope, budgets,
  seal, submit launches or evals, submit the wake, park);
- a leg started but never ended -> the session died: resume it with a note;
- parked on launches -> gather results, wake the agent;
- parked on evals -> the verdict; credited -> ready to publish (the tick pushes and
  opens the PR); not credited -> wake the agent with the numbers;
- parked in review with reviewer words waiting -> wake the agent with them;
- admitted, no leg yet -> install the channel, render the brief, first leg.
"""

from __future__ import annotations

import fcntl
import os
import secrets
from typing import Any

from outerloop import budgets, money
from outerloop.attempt import endpoint_gate, jobs, pairs, prompts
from outerloop.attempt.candidate import (
    left_out_note,
)
from outerloop.attempt.channel import (
    ChannelError,
    CommittedRequest,
    install_channel,
)
from outerloop.attempt.context import RunContext
from outerloop.attempt.credit import publish_blocked, publish_credited
from outerloop.attempt.exits import end, park_on, park_review
from outerloop.attempt.gate import Judgement
from outerloop.attempt.gpu_use import gpu_problem, holding_gpus, launch_gpus, observe_jobs
from outerloop.attempt.looks import first_look_size, take_look
from outerloop.attempt.pair_flow import (
    measured_pairs,
    replace_bench,
    rerun_evals,
    submission_salt,
    submit_pair,
    wait_for_space,
)
from outerloop.attempt.paths import RunPaths
from outerloop.attempt.refusals import refusal_gist
from outerloop.attempt.render import (
    FeedbackView,
    OperatorView,
    VerdictView,
)
from outerloop.attempt.results import launch_results
from outerloop.attempt.scope_check import scope_problem
from outerloop.attempt.suite import siblings_to_measure
from outerloop.attempt.verdict_view import baseline_failure, told_view, verdict_record
from outerloop.attempt.workspace import (
    changed_paths,
    checkout,
    seal,
    tree_of,
)
from outerloop.clock import now, parse_stamp, shown
from outerloop.config import Settings
from outerloop.contract import Benchmark
from outerloop.errors import ConfigError, DeploymentError
from outerloop.fleet import seat_of
from outerloop.harness.base import SessionLimits
from outerloop.harness.evidence import save_evidence, save_prompt
from outerloop.harness.factory import make_harness
from outerloop.harness.needs import broken_environment
from outerloop.ledger import events as ev
from outerloop.ledger.records import Ending, ParkReason, RunRecord, RunState
from outerloop.sandbox import reaper
from outerloop.sandbox.secrets import known_secrets, refusal_note, secrets_in
from outerloop.text import redact
from outerloop.vocabulary import SETTLED_VERDICTS, GateVerdict, JobPurpose

LEASE_FILE = "lease"
MAX_IMMEDIATE_RESUMES = 2


def continue_run(settings: Settings, run_id: str, job_id: str | None = None) -> str:
    """Do the run's next step under the run's lease; returns a one-line account.

    The lease (an ``flock`` on ``runs/<id>/lease``) makes the run's jobs take turns:
    a recovery wake and a late wake never write the run's ledger file at once; the
    second re-reads the record and does only what is still left."""
    paths = RunPaths.of(settings.home, run_id)
    paths.root.mkdir(parents=True, exist_ok=True)
    fd = os.open(paths.root / LEASE_FILE, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        return _continue(settings, run_id, job_id)
    finally:
        os.close(fd)


def _parked_jobs_done(ctx: RunContext) -> bool:
    """Every job the park waits on has ended: as the ledger concluded it (``gone``
    included: the sweep records a forgotten job past its bound), else as observed."""
    recorded = ctx.state.jobs
    waiting = [j for j in ctx.run.park_jobs if j not in recorded or not recorded[j].terminal]
    seen = observe_jobs(ctx, waiting)
    return all(job in seen and seen[job].state.terminal for job in waiting)


def _continue(settings: Settings, run_id: str, job_id: str | None) -> str:
    ctx = RunContext.load(settings, run_id)
    ctx.reconcile()
    run = ctx.run
    if run.ended:
        return f"{run_id} already ended ({run.ending})"
    if run.leg_refused:
        return agent_leg(ctx, job_id, again=_again_prompt(ctx))
    if run.pending_request is not None:
        return act_on_request(ctx, job_id)
    if run.leg_open:
        return agent_leg(ctx, job_id, verdict=_untold_verdict(ctx), notes=[
            "Your previous session was interrupted before it ended. Continue from the "
            "state of the workspace; re-stage anything you had staged."])
    if run.state == RunState.PARKED and run.park_reason in (ParkReason.JOBS, ParkReason.EVAL) \
            and not _parked_jobs_done(ctx):
        return f"{run_id} still waits on its jobs"
    if run.state == RunState.PARKED and run.park_reason == ParkReason.JOBS:
        return wake_from_launches(ctx, job_id)
    if run.state == RunState.PARKED and run.park_reason == ParkReason.EVAL:
        return wake_from_evals(ctx, job_id)
    if run.state == RunState.PARKED and run.park_reason == ParkReason.REVIEW:
        if run.undelivered:
            return wake_from_feedback(ctx, job_id)
        return f"{run_id} is in review with nothing new to deliver"
    if run.state == RunState.PARKED:
        return f"{run_id} is parked ({run.park_reason}); nothing for a job to do"
    if run.legs == 0:
        _deployment_holds(settings, run)
        try:
            install_channel(ctx.paths.ws, prompts.channel_limits(ctx))
        except ChannelError as exc:
            return end(ctx, Ending.ABORTED,
                       f"the agent's channel could not be installed: {exc}")
        return agent_leg(ctx, job_id, first=True)
    return f"{run_id}: nothing to do in state {run.state}"


def _again_prompt(ctx: RunContext) -> str:
    """The refused leg's prompt (as saved, secrets redacted) with the note saying why it
    comes again; the brief when it cannot be read (a fresh session needs one)."""
    saved = ctx.paths.legs / f"{ctx.run.legs:03d}-prompt.md"
    try:
        text = saved.read_text(encoding="utf-8")
    except OSError:
        text = prompts.brief(ctx)
    if endpoint_gate.AGAIN_NOTE in text:
        return text  # refused again: the note is there already
    return f"{text}\n\n## Note from outerloop\n\n{endpoint_gate.AGAIN_NOTE}\n"


def _deployment_holds(settings: Settings, run: RunRecord) -> None:
    """Before a run's first leg: the harness the settings name can be made and every
    command a session needs starts confined on this node. Either failing is the
    deployment's (the operator's settings, the node's install), not the run's nor the
    issue's: ``DeploymentError``, and the run waits for the fix (``infra.DEPLOY_EXIT``)
    instead of ending as a failed start that spends a claim."""
    try:
        make_harness(settings, seat_of(settings, run.target, run.agent))
    except ConfigError as exc:
        raise DeploymentError(f"the agents' harness cannot start: {exc}") from None
    broken = broken_environment(settings)
    if broken:  # every session would fail as if the agent gave up: say why instead
        raise DeploymentError(broken)


# legs -------------------------------------------------------------------------


def agent_leg(ctx: RunContext, job_id: str | None, *, first: bool = False,
              notes: list[str] | None = None, results: list[Any] | None = None,
              verdict: VerdictView | None = None, again: str | None = None) -> str:
    """One session leg: render the prompt, run the harness, record what it committed,
    then act on it. The prompt of a wake carries the reviewer feedback not yet
    delivered; its leg's ``LegEnded`` marks it delivered (see ``ev.LegEnded.delivered``)."""
    from outerloop.attempt.channel import read_committed

    run = ctx.run
    site = ctx.deps_site()  # before the leg is recorded: a cold cache makes the run wait
    seat = seat_of(ctx.settings, run.target, run.agent)
    why = endpoint_gate.held(ctx, seat.endpoint, job_id)
    if why is not None and seat.endpoint is not None:
        return endpoint_gate.wait(ctx, job_id, seat.endpoint, why)
    spent = money.refusal(ctx.state, run, money.money_caps(ctx.limits, ctx.settings), now())
    if spent is not None:  # before the leg: its cost is known only once it has run
        return end(ctx, Ending.BUDGET_EXHAUSTED, f"no further leg was started: {spent}")
    leg = run.legs + 1
    waiting = run.undelivered
    feedback = [FeedbackView(author=item.author, kind=item.kind, text=item.text,
                             where=item.where)
                for item in waiting.values() if not item.from_operator]
    told = {key: item for key, item in waiting.items() if item.from_operator}
    operator = [OperatorView(text=item.text, at=shown(parse_stamp(item.at)) + " UTC")
                for item in told.values()]
    delivered: list[str] = []
    prompts.write_views(ctx)
    if again is not None:
        # the refused leg's prompt, shown again with a note; nothing is marked delivered:
        # feedback or an operator's message that came after it is not in it (shown at
        # the next wake; what it does hold may show twice, never not at all)
        prompt = again
    elif first or run.session_id is None:
        # No leg has ended with a session yet (the first leg's job died, or its harness
        # never started): a fresh session knows nothing, so it gets the brief, with
        # what happened in between as a note (and the operator's messages: only those
        # are delivered by a brief, since no reviewer has a PR to comment on yet).
        prompt = prompts.brief(ctx, operator)
        if notes:
            prompt += "\n\n## Note from outerloop\n\n" + "\n\n".join(notes) + "\n"
        first = True
        delivered = sorted(told)
    else:
        prompt = prompts.wake(ctx, leg, results or [], verdict, feedback, notes or [],
                              operator)
        delivered = sorted(waiting)
    save_prompt(ctx.paths.legs, leg, prompt, known_secrets(ctx.settings))
    ctx.append(ev.LegStarted(leg=leg, role="climb" if first else "wake", job_id=job_id,
                             refused=refusal_gist(notes or []), endpoint=seat.endpoint or ""))
    harness = make_harness(ctx.settings, seat, deps=site)
    limits = SessionLimits(max_turns=ctx.limits.session_max_turns,
                           minutes=ctx.limits.session_minutes)
    from outerloop.attempt.live import watcher_for

    only = None if ctx.contract.channels.siblings else run.run_id
    # Leaving tree_ends kills what the session left (after the watcher stopped): the
    # channel, the evidence and the seal are read only once the leg's tree is dead.
    with reaper.tree_ends(), watcher_for(ctx.settings, ctx.paths.ws, run.target, only):
        result = harness.run(prompt, ctx.paths.ws, ctx.paths.home, run.session_id, limits)
    secrets = known_secrets(ctx.settings)  # read again: a key may have changed meanwhile
    save_evidence(ctx.paths.legs, leg, result, secrets, ctx.paths.home)
    request: CommittedRequest | None = None
    error: str | None = None
    try:
        request = read_committed(ctx.paths.ws, limits=prompts.channel_limits(ctx),
                                 used_names=[x.name for x in run.launches])
    except ChannelError as exc:
        error = str(exc)
    if request is not None and secrets_in(request.model_dump(mode="json"), secrets):
        request, error = None, refusal_note(["your staged request (its report, messages or "
                                             "launches)"])
        ctx.append(ev.Note(level="warning", text="the agent's staged request carried a "
                           "secret value; refused, nothing of it recorded"))
    ctx.append(ev.LegEnded(leg=leg, stop_reason=result.stop_reason,
                           is_error=result.is_error, session_id=result.session_id,
                           cost_usd=result.cost_usd, turns=result.turns,
                           progress=request is not None,
                           request=request.model_dump(mode="json") if request is not None else None,
                           error=redact(error or result.error_detail or "", secrets) or None,
                           delivered=delivered))
    if result.outage and seat.endpoint is not None:
        return endpoint_gate.refused(ctx, job_id, seat.endpoint, result)
    if result.outage:
        return give_up(ctx, Ending.STUCK,
                       f"the model API refused the session ({result.refusal}): "
                       f"{result.error_detail}", by="outage", refusal=result.refusal)
    if result.stop_reason == "max_turns" and request is None:
        return give_up(ctx, Ending.BUDGET_EXHAUSTED, "the session ran out of turns before "
                       "it handed over with `sleep` or `stop`")
    ctx.refresh()
    return act_on_request(ctx, job_id)


def act_on_request(ctx: RunContext, job_id: str | None) -> str:
    """Act on the last leg's committed request (idempotent: re-running it after a
    crash submits nothing twice)."""
    run = ctx.run
    raw = run.pending_request or None
    error = run.pending_error
    if not raw:
        # In review, a leg that ended cleanly without a request means "nothing to add":
        # park. One that failed (its session killed, a request the tool refused) is
        # resumed with a note first, so a reviewer's words are not left unanswered.
        resume = error is not None and run.empty_legs <= MAX_IMMEDIATE_RESUMES - 1
        if run.pr_number is not None and run.empty_legs <= MAX_IMMEDIATE_RESUMES \
                and not resume:
            return park_review(ctx)
        if run.empty_legs > MAX_IMMEDIATE_RESUMES - 1:
            broken = broken_environment(ctx.settings)
            if broken:
                return end(ctx, Ending.ABORTED, broken)
            return give_up(ctx, Ending.NEGATIVE_RESULT,
                           "the agent ended its sessions without handing over (`sleep` or "
                           "`stop`)"
                           + (f", after outerloop's last refusal ({run.refused})"
                              if run.refused else "")
                           + (f"; last problem: {error}" if error else ""))
        note = error or ("You ended the session without `sleep` or `stop`. Stage your next "
                         "step with the tool and hand over with `sleep`, or `stop`.")
        return agent_leg(ctx, job_id, notes=[note])
    request = CommittedRequest.model_validate(raw)
    _record_messages(ctx, request)
    if request.verb == "stop" and request.withdraw is not None:
        return _withdraw(ctx, job_id, request)
    if request.verb == "stop":
        if run.pr_number is not None:
            return park_review(ctx)
        return give_up(ctx, Ending.NEGATIVE_RESULT, "the agent stopped",
                       agent_note=request.stop_report or "")
    if request.submit is not None:
        return submit_candidate(ctx, job_id, request)
    if request.launches:
        return launch_experiments(ctx, job_id, request)
    if run.pr_number is not None:
        return park_review(ctx)
    return agent_leg(ctx, job_id, notes=[
        "You called `sleep` with nothing staged. Stage launches or a submission first."])


def _withdraw(ctx: RunContext, job_id: str | None, request: CommittedRequest) -> str:
    """``stop --withdraw REASON``: the run ends ``withdrawn``; the tick posts the reason
    (fenced, as the agent's) on the pull request and closes it (``lanes/followup``)."""
    assert request.withdraw is not None
    number = ctx.run.pr_number
    if number is None:
        return agent_leg(ctx, job_id, notes=[
            "Refused: `stop --withdraw` closes the run's pull request, and this run has "
            "none. End the attempt with `stop` instead; nothing was ended."])
    return end(ctx, Ending.WITHDRAWN, f"the agent withdrew pull request #{number}",
               agent_note=request.stop_report or request.withdraw,
               withdrawn=request.withdraw)


def _record_messages(ctx: RunContext, request: CommittedRequest) -> None:
    for index, message in enumerate(request.messages):
        key = f"{ctx.run.run_id}-leg{ctx.run.legs}-m{index}"
        if message.to == "thread" and not ctx.contract.channels.messages:
            ctx.append(ev.Note(level="info", text=f"agent message not posted "
                               f"(channels.messages is off): {message.text[:2000]}"))
        elif message.to == "thread":
            if key not in ctx.run.outbox:
                ctx.append(ev.Outbox(key=key, text=message.text))
        else:
            ctx.append(ev.Note(level="info", text=f"agent note: {message.text[:2000]}"))
    if request.messages:
        ctx.refresh()


def _seal(ctx: RunContext, tree: str) -> str:
    assert ctx.run.base_sha is not None and ctx.run.branch is not None
    return seal(ctx.paths, ctx.run.branch, ctx.run.base_sha, tree,
                f"outerloop seal: {ctx.run.run_id} sleep {ctx.run.sleeps + 1}\n")


def launch_experiments(ctx: RunContext, job_id: str | None, request: CommittedRequest) -> str:
    run = ctx.run
    if ctx.sleeps_left() <= 0:
        return give_up(ctx, Ending.BUDGET_EXHAUSTED, "the run used all its sleeps")
    if len(request.launches) > ctx.launches_left():
        return agent_leg(ctx, job_id, notes=[
            f"Refused: {len(request.launches)} launches staged but only "
            f"{ctx.launches_left()} left in this run's budget. Nothing was charged."])
    problem, shot = scope_problem(ctx)
    if problem:
        return agent_leg(ctx, job_id, notes=[problem])
    problem = gpu_problem(ctx, request)
    if problem:
        return agent_leg(ctx, job_id, notes=[problem])
    sealed = _seal(ctx, shot.tree)
    site = ctx.deps_site()
    sleep = run.sleeps + 1
    job_ids: list[str] = []
    recorded = {(x.sleep, x.name) for x in run.launches}
    cap = ctx.limits.max_concurrent_gpus
    waves = budgets.GpuWaves(cap, holding_gpus(ctx))
    for launch in request.launches:
        name = jobs.job_name(run.run_id, f"s{sleep}", launch.name)
        array = launch.array if launch.array > 1 else None
        tasks: list[int | None] = list(range(array)) if array else [None]
        for task in tasks:
            checkout(ctx.paths, sealed, ctx.paths.tree(name, task), ctx.contract.eval_only)
        gpus, nodes = launch_gpus(ctx, launch)
        concurrency = budgets.array_concurrency(launch.concurrency, gpus * nodes, cap)
        held = gpus * nodes * (concurrency if array else 1)
        waits = waves.wait_for(held)
        spec = jobs.launch_spec(ctx.settings, run.run_id, name, launch.command,
                                launch.minutes, array, concurrency, gpus=gpus, nodes=nodes,
                                after_any=waits, deps=site)
        submitted = ctx.submit(spec, JobPurpose.LAUNCH, launch=launch.name)
        if submitted is None:
            continue
        waves.add(submitted, held, waits)
        job_ids.append(submitted)
        if (sleep, launch.name) not in recorded:
            ctx.append(ev.Launched(
                sleep=sleep, name=launch.name, job_id=submitted, minutes=launch.minutes,
                why=launch.why, command=launch.command, array=array,
                concurrency=launch.concurrency if array else None,
                artifacts=launch.artifacts, seal=sealed, job_name=name, gpus=gpus))
    if not job_ids:
        return agent_leg(ctx, job_id, notes=["No launch could be submitted (see the "
                                             "queue); try again or stop."])
    longest = max(x.minutes for x in request.launches)
    return park_on(ctx, "jobs", job_ids, sleep, seal_sha=sealed, minutes=longest,
                   left_out=shot.left_out)


# the gate ----------------------------------------------------------------------


def submit_candidate(ctx: RunContext, job_id: str | None, request: CommittedRequest) -> str:
    run = ctx.run
    assert request.submit is not None and run.base_sha is not None
    if ctx.sleeps_left() <= 0:
        return give_up(ctx, Ending.BUDGET_EXHAUSTED, "the run used all its sleeps")
    problem, shot = scope_problem(ctx, request.submit.report)
    if problem:
        return agent_leg(ctx, job_id, notes=[problem])
    if shot.tree == tree_of(ctx.paths, run.base_sha):
        return agent_leg(ctx, job_id, notes=[
            "Refused: no code change. The working tree equals the base; there is "
            "nothing to measure."])
    earlier = _same_tree_verdict(run, shot.tree)
    if earlier is not None:
        return agent_leg(ctx, job_id, notes=[earlier])
    sealed = _seal(ctx, shot.tree)
    submission = run.submissions + 1
    prompts.save_report(ctx, request.submit.report)
    seeds = run.seeds.get(submission)
    if seeds is None:
        seeds = [secrets.randbelow(pairs.MAX_SEED) + 1
                 for _ in range(first_look_size(ctx.benchmark))]
        ctx.append(ev.SeedsDrawn(submission=submission, seeds=seeds,
                                 salt=secrets.token_hex(16), tree=shot.tree))
        ctx.refresh()
    salt = submission_salt(ctx.run, submission)
    # `submit --minutes M` shortens the eval jobs' limit; it never lengthens it.
    minutes = min(ctx.bench_limits.eval_minutes,
                  request.submit.minutes or ctx.bench_limits.eval_minutes)
    measured: list[tuple[str, Benchmark, int]] = [("", ctx.benchmark, minutes)]
    for number, sibling in siblings_to_measure(
            ctx.contract, ctx.benchmark, changed_paths(ctx.paths, run.base_sha, shot.tree)):
        measured.append((f"x{number}", sibling,
                         ctx.limits.for_benchmark(sibling.name).eval_minutes))
    evals: list[ev.EvalPair] = []
    for label, benchmark, bench_minutes in measured:
        for index, seed in enumerate(seeds):
            pair = submit_pair(ctx, pairs.pair_name(run.run_id, salt, label, index),
                               benchmark, seed, bench_minutes,
                               pairs.base_first(salt, label, index), run.base_sha, sealed,
                               after=evals[-1].base if evals else None)
            if pair is None:
                return end(ctx, Ending.ABORTED, "an eval job could not be submitted")
            evals.append(replace_bench(pair, benchmark.name if label else None))
    longest = sum(m for _, _, m in measured) * 2 * len(seeds)
    return park_on(ctx, "eval", [p.base for p in evals], run.sleeps + 1, seal_sha=sealed,
                   minutes=longest, evals=evals, left_out=shot.left_out)


def _same_tree_verdict(run: RunRecord, tree: str) -> str | None:
    """What the agent is told when ``tree`` is exactly an earlier submission's (one the
    gate settled): its verdict, and that nothing was measured; else None."""
    for submission, earlier in sorted(run.trees.items()):
        if earlier != tree or submission > len(run.verdicts):
            continue
        told = run.verdicts[submission - 1]
        if told.verdict in SETTLED_VERDICTS:
            return (f"Not measured: this tree is exactly submission {submission}'s, which "
                    f"the gate judged {told.verdict} ({told.detail}). Submitting it again "
                    "measures nothing new and spends nothing; change the code first.")
    return None


def _untold_verdict(ctx: RunContext) -> VerdictView | None:
    """The latest verdict, when the leg that was to tell it died before ending (a
    recovery leg resumes the session of the last ended leg, which never saw it)."""
    run = ctx.run
    if not run.verdict_untold or not run.verdicts:
        return None
    return told_view(ctx.benchmark, run, len(run.verdicts))


def wake_from_evals(ctx: RunContext, job_id: str | None) -> str:
    run = ctx.run
    if run.park_confirm:  # parked by an earlier version on a confirmation pair: the
        return publish_or_revise(ctx, job_id)  # submission's verdict is on record, credited
    pairs_, suite, rerun = measured_pairs(ctx)
    if rerun:
        wait_for_space(ctx, job_id, rerun)
        return rerun_evals(ctx, rerun)
    looked = take_look(ctx, pairs_, suite)
    if isinstance(looked, str):
        return looked  # more pairs submitted, parked on them
    judged: Judgement = looked
    if len(run.verdicts) < run.submissions:  # once per submission, even if this job
        # died after recording it (during the review) and a recovery wake judges again
        ctx.append(verdict_record(ctx.benchmark, judged, run))
    ctx.refresh()
    run = ctx.run
    view = told_view(ctx.benchmark, run, run.submissions)
    broken = baseline_failure(pairs_) if judged.verdict == GateVerdict.EVAL_ERROR else None
    if broken is not None:
        return end(ctx, Ending.ABORTED, broken)
    if judged.verdict != GateVerdict.IMPROVED:
        if ctx.sleeps_left() <= 0:
            return give_up(ctx, Ending.NEGATIVE_RESULT if run.pr_number is None
                           else Ending.BUDGET_EXHAUSTED,
                           f"the last submission was {judged.verdict}: {judged.detail}")
        return agent_leg(ctx, job_id, verdict=view, notes=_left_out_notes(run))
    return publish_or_revise(ctx, job_id)


def publish_or_revise(ctx: RunContext, job_id: str | None) -> str:
    """The current submission is credited: review it and have it published, or, when
    the review sends it back (``revision_asked``), wake the agent with the findings. A
    recovery wake finds the ask on record and only wakes the agent (no second review)."""
    run = ctx.run
    asked = run.revision
    if not (run.revising and asked is not None and asked.submission == run.submissions):
        done = publish_credited(ctx, job_id)
        if isinstance(done, str):
            return done
        ctx.refresh()
    return agent_leg(ctx, job_id, verdict=told_view(ctx.benchmark, ctx.run,
                                                    ctx.run.submissions))


def give_up(ctx: RunContext, ending: Ending, why: str, *, by: str = "kernel",
            refusal: str | None = None, agent_note: str = "") -> str:
    """The run cannot go on (``why``): it ends, unless it was revising a candidate the
    review blocked; then that candidate opens as a draft PR carrying the findings (the
    work measured and credited is not lost), and the run waits in review."""
    if ctx.run.revising:
        key = f"{ctx.run.run_id}-leg{ctx.run.legs}-gave-up"
        if agent_note.strip() and key not in ctx.run.outbox:  # its words on why: posted
            ctx.append(ev.Outbox(key=key, text=agent_note))  # (quoted as the agent's)
        return publish_blocked(ctx, why)
    return end(ctx, ending, why, by=by, refusal=refusal, agent_note=agent_note)


def wake_from_launches(ctx: RunContext, job_id: str | None) -> str:
    run = ctx.run
    current = [x for x in run.launches if x.sleep == run.sleeps]
    seen = observe_jobs(ctx, run.park_jobs)
    results = launch_results(ctx, current, seen)
    return agent_leg(ctx, job_id, results=results, notes=_left_out_notes(run))


def _left_out_notes(run: RunRecord) -> list[str]:
    note = left_out_note(list(run.park_left_out))
    return [note] if note else []


def wake_from_feedback(ctx: RunContext, job_id: str | None) -> str:
    """A wake for reviewer feedback: the leg's prompt carries what is undelivered."""
    return agent_leg(ctx, job_id)
