"""Observe the outside world in bulk, once per tick.

Compute: one ``observe`` for every job the state knows as live. Forge: one pass per
target (open issues, the contract from the default branch, the PRs of runs in
review). The machine: free space on the home's filesystems, and the stderr tail of a
run's leg job that just failed (``observe_machine``). A failed query is recorded as an
error for that part: the lanes defer on it and conclude nothing.
"""

from __future__ import annotations

from contextlib import suppress
from datetime import datetime, timedelta
from pathlib import Path

from outerloop import clock, infra
from outerloop.clock import parse_stamp, stamp
from outerloop.errors import ComputeError, ForgeError, OuterloopError
from outerloop.forge.base import Forge, Issue
from outerloop.forge.width import width_labels
from outerloop.kernel.executor import Effects
from outerloop.kernel.observations import Observations, PullObservation, TargetObservation
from outerloop.ledger.state import RunRecord, State
from outerloop.limits import target_limits
from outerloop.vocabulary import JobState

CONTRACT_FILE = ".outerloop.yaml"
FORGE_WORKERS = 8
"""Targets observed at once: each waits on the forge's round trips; GitHub asks
integrators to keep concurrent requests few (its secondary rate limit)."""
FEEDBACK_OVERLAP_S = 600
"""How far before the cursor a PR's comments are read again: GitHub's ``since`` is to the
second and its listings may show a comment late (eventually consistent), so a comment
stamped before the newest one read may appear after it. The cost: the comments of the
last ten minutes before the cursor are listed again each tick."""


def observe_jobs(state: State, fx: Effects, obs: Observations) -> None:
    live = [j.job_id for j in state.live_jobs()]
    if not live:
        return
    try:
        obs.jobs = fx.compute().observe(live)
    except ComputeError as exc:
        obs.compute_error = str(exc)


def observe_machine(state: State, fx: Effects, obs: Observations) -> None:
    """Free space where the run's jobs write, and, for each active run whose latest leg
    job ended failed (this tick or before) and has no wait on the machine recorded
    yet, whether its stderr's tail names a full disk or quota: a process the kernel
    does not control (the agent's CLI, git, an eval) says so only there; else whether
    it (with its exit code) says the deployment stopped the job (``infra.says_deployment``:
    a failing setup line, a command that could not start, the job's own finding); and,
    for those and for a run in review whose latest wake failed, the name of the
    exception it crashed on (``infra.crash_name``: the reason a run given up after its
    recoveries names)."""
    from outerloop.ledger.state import ParkReason, RunState
    from outerloop.run.paths import RUNS_DIR, RunPaths
    from outerloop.sandbox import beneath

    home = fx.settings.home
    obs.space = [infra.measure(p) for p in infra.watched(home, (home / RUNS_DIR, home / "jobs"))]
    for run in state.active_runs():
        machine = not (run.state == RunState.PARKED and run.park_reason not in (
            ParkReason.JOBS, ParkReason.EVAL))
        if not machine and run.park_reason != ParkReason.REVIEW:
            continue
        last = state.latest_leg(run)
        if last is None or (run.infra_wait and run.infra_wait.job_id == last.job_id):
            continue
        seen = obs.jobs.get(last.job_id)
        ended = last.state if last.terminal else (
            seen.state if seen is not None and seen.state.terminal else None)
        if ended is None or ended == JobState.COMPLETED:
            continue
        root = RunPaths.of(home, run.run_id).root
        exit_code = last.exit_code if last.terminal else (
            seen.exit_code if seen is not None else None)
        try:
            tail = beneath.read_tail(root, f"jobs/{last.name}/stderr", infra.STDERR_TAIL_BYTES)
        except OSError:
            tail = b""  # no stderr (a full disk may have kept it from being written)
        text = tail.decode("utf-8", "replace")
        crashed = infra.crash_name(text)
        if crashed:
            obs.crashed[last.job_id] = crashed
        if not machine:
            continue  # a review wake: only what it crashed on (``followup``'s bound)
        words = infra.says_no_space(text)
        if words:
            obs.no_space[last.job_id] = words
            continue
        cause = infra.says_deployment(text, exit_code)
        if cause:
            obs.deployment[last.job_id] = cause


def _load_contract(raw: bytes | None, repo: str, seen: TargetObservation, home: Path) -> None:
    """The contract, or why it failed (the whole message, and each error alone); a
    contract validated before from the same bytes is read back (``validated.py``)."""
    if raw is None:
        seen.contract_error = f"{repo}: no {CONTRACT_FILE} on the default branch"
        seen.contract_problems = [f"(file): no {CONTRACT_FILE} on the default branch"]
        return
    from outerloop.contract import CONTRACT_MODULES, Contract, ContractInvalid, load_contract_text
    from outerloop.validated import kept

    try:
        seen.contract = kept(home, "contract", raw, CONTRACT_MODULES, Contract,
                             lambda: load_contract_text(raw.decode("utf-8", "replace"),
                                                        f"{repo}:{CONTRACT_FILE}"))
    except ContractInvalid as exc:
        seen.contract_error, seen.contract_problems = str(exc), list(exc.errors)
    except OuterloopError as exc:
        seen.contract_error, seen.contract_problems = str(exc), [str(exc)]


def _observe_deps(seen: TargetObservation, fx: Effects) -> None:
    """The dependency cache of the contract's lock at the base (read from the forge
    only when the default branch moved: ``deps.store.observe`` keeps a memo)."""
    needs = seen.contract.dependencies if seen.contract is not None else None
    if needs is None or seen.base_sha is None:
        return
    from outerloop.deps import store

    base, forge = seen.base_sha, fx.forge()
    seen.deps = store.observe(fx.settings.home, seen.repo, needs.requirements, base,
                              lambda: forge.read_file(seen.repo, needs.requirements, base))


def observe_target(repo: str, state: State, fx: Effects) -> TargetObservation:
    seen = TargetObservation(repo=repo)
    from outerloop.selfrepo import check_target_is_not_the_kernel

    try:
        check_target_is_not_the_kernel(repo)
    except OuterloopError as exc:  # never read, never claimed from: not even an alarm
        seen.error = str(exc)
        return seen
    try:
        forge = fx.forge()
        seen.default_branch = forge.default_branch(repo)
        seen.base_sha = forge.branch_head(repo, seen.default_branch)
        if seen.base_sha is not None:
            raw = forge.read_file(repo, CONTRACT_FILE, seen.base_sha)
            _load_contract(raw, repo, seen, fx.settings.home)
            _observe_deps(seen, fx)
        seen.issues = forge.list_issues(repo)
        for issue in seen.issues:
            if "outerloop:approved" in issue.labels or width_labels(issue):
                seen.label_events[issue.number] = forge.label_events(repo, issue.number)
        if _has_room(state, seen, fx):
            for issue in seen.issues:
                if _may_be_claimed(state, seen, issue, fx):
                    claims = _claims_on(fx, repo, issue.number)
                    seen.claim_markers[issue.number] = len(claims)
                    seen.claimed_by[issue.number] = claims
        _observe_issue_threads(forge, repo, state, seen)
        for run in state.active_runs(repo):
            if run.pr_number is None:
                _observe_published(forge, repo, run, seen, fx.settings.forge.kernel_logins)
                continue
            pull = PullObservation(pr=forge.get_pr(repo, run.pr_number))
            pull.comments = forge.list_comments(repo, run.pr_number,
                                                read_since(run.comments_cursor))
            pull.reviews = forge.list_reviews(repo, run.pr_number)
            pull.review_comments = forge.list_review_comments(
                repo, run.pr_number, read_since(run.review_comments_cursor))
            seen.pulls[run.pr_number] = pull
    except ForgeError as exc:
        seen.error = str(exc)
    return seen


def _observe_published(forge: Forge, repo: str, run: RunRecord, seen: TargetObservation,
                       kernel: list[str]) -> None:
    """A run waiting to publish while the base moved: the kernel's PR the forge already
    shows for its candidate (one lookup; only then, so a quiet tick asks nothing)."""
    publish = run.publish
    if publish is None or seen.base_sha in (None, run.base_sha):
        return
    head = run.pr_head or publish.branch
    found = [pr.number for pr in forge.find_prs(repo, head)
             if pr.head_sha == publish.seal_sha and pr.author in kernel]
    if found:
        seen.published[run.run_id] = found[-1]


def _observe_issue_threads(forge: Forge, repo: str, state: State,
                           seen: TargetObservation) -> None:
    """The comments of each active run's issue whose thread changed since the run last
    read it (the issue's ``updated_at`` past its cursor: one read, only then, so a quiet
    tick asks nothing more than the issue list it already read). The runs of one issue
    (its width, ``forge/width.py``) share one read, from the oldest of their cursors;
    steering drops what a run already had by id."""
    updated = {issue.number: stamp(issue.updated_at) for issue in seen.issues}
    since: dict[int, str] = {}  # per issue, the oldest cursor of a run that must read it
    for run in state.active_runs(repo):
        if run.issue is None:
            continue
        stamp_now = updated.get(run.issue, "")
        if stamp_now < run.issue_comments_cursor or (
                stamp_now == run.issue_comments_cursor and run.issue_thread_settled):
            continue
        since[run.issue] = min(since.get(run.issue, run.issue_comments_cursor),
                               run.issue_comments_cursor)
    for number, cursor in since.items():  # one read for the runs an issue's width shares
        seen.issue_comments[number] = forge.list_comments(repo, number, read_since(cursor))


def read_since(cursor: str) -> datetime | None:
    """Where to read a PR's comments from: the forge's own newest stamp already read
    (``RunRecord.comments_cursor``), less ``FEEDBACK_OVERLAP_S``; None (everything) when
    no cursor is recorded yet (a new PR, or a ledger from before cursors). Never the
    kernel's clock, so a tick host's clock set wrong hides nothing; what the overlap
    reads twice the followup lane drops by id."""
    if not cursor:
        return None
    return parse_stamp(cursor) - timedelta(seconds=FEEDBACK_OVERLAP_S)


def _has_room(state: State, seen: TargetObservation, fx: Effects) -> bool:
    """True when the target could start a run (below its active-run cap): only then can
    intake claim, so only then are claim markers worth a query."""
    if seen.contract is None:
        return False
    cap = target_limits(seen.contract, fx.settings).max_active_attempts
    return len(state.active_runs(seen.repo)) < cap


def _may_be_claimed(state: State, seen: TargetObservation, issue: Issue,
                     fx: Effects) -> bool:
    """An issue whose claims must be read from the forge: an open one with standing
    that the ledger holds fewer live runs of than its width (``forge/width.py``) and no
    ended, unreleased one (answered issues cost no query)."""
    from outerloop.forge.standing import issue_has_standing
    from outerloop.forge.width import issue_width

    if issue.is_pull_request or issue.state != "open" or seen.contract is None:
        return False
    from outerloop.kernel.lanes.integrate import combine_prs

    events = seen.label_events.get(issue.number, [])
    if not issue_has_standing(issue, events) \
            and not combine_prs(issue, fx.settings.forge.kernel_logins):
        return False
    answering = [r for r in state.runs_of_issue(seen.repo, issue.number) if not r.released]
    if any(r.ended for r in answering):
        return False
    width = issue_width(issue, events, seen.contract.budgets.issue_width,
                        target_limits(seen.contract, fx.settings).max_active_attempts,
                        state.widened.get((seen.repo, issue.number)))
    return len(answering) < width.runs


def _claims_on(fx: Effects, repo: str, number: int) -> tuple[str, ...]:
    """The run ids of the claim markers the kernel (current or former login) posted on
    the issue, in order."""
    from outerloop.forge.markers import trusted_markers

    comments = fx.forge().list_comments(repo, number)
    return tuple(marker.key for marker, _post in
                 trusted_markers(comments, fx.settings.forge.kernel_logins)
                 if marker.kind == "claim")


def observe_endpoints(state: State, fx: Effects, obs: Observations) -> None:
    """Probe each model endpoint that has a probe and that an active run's seat uses
    (queued runs included: admission asks before it starts one), or a seat of a target
    with open issues (intake may queue a run this tick), or that is down; at once, each
    within ``probe.PROBE_TIMEOUT_S``. No active run and no open issue: a quiet tick asks
    nothing."""
    from outerloop.fleet import agent_seats, endpoint, seat_of

    settings = fx.settings
    wanted: set[str] = {n for n, latch in state.endpoints.items() if latch.down}
    for repo, seen in obs.targets.items():
        if seen.issues:
            wanted.update(s.endpoint for s in agent_seats(settings, repo) if s.endpoint)
    active = state.active_runs()
    for run in active:
        try:
            name = seat_of(settings, run.target, run.agent).endpoint
        except OuterloopError:
            continue
        if name is not None:
            wanted.add(name)
    if any(r.admitted for r in active) and settings.review.judges:
        try:
            from outerloop.fleet import judge_seat

            judges = judge_seat(settings).endpoint
        except OuterloopError:
            judges = None
        if judges is not None:
            wanted.add(judges)
    ends = [endpoint(settings, n) for n in sorted(wanted)
            if n in settings.endpoints and settings.endpoints[n].probe]
    if ends:  # urllib and a thread pool: not imported by a tick that asks nothing
        from outerloop.harness.probe import probe_all

        obs.endpoints = probe_all(ends, settings.home)


def observe_forge(state: State, fx: Effects, obs: Observations,
                  workers: int = FORGE_WORKERS) -> None:
    """The forge pass: ``observe_target`` for each configured target, at most ``workers``
    at once (a target's requests wait on GitHub's round trips, not on this host), the
    results in config order, each target's error its own as when they ran in turn."""
    repos = [target.repo for target in fx.settings.targets]
    if not repos:
        return
    with suppress(ForgeError):  # each target records it, as in turn
        fx.forge()  # built once, before the threads share it
    if len(repos) == 1:  # no pool to wait on (nor concurrent.futures to import)
        obs.targets[repos[0]] = observe_target(repos[0], state, fx)
        return
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(workers, len(repos)),
                            thread_name_prefix="observe-forge") as pool:
        seen = list(pool.map(lambda repo: observe_target(repo, state, fx), repos))
    for repo, one in zip(repos, seen, strict=True):
        obs.targets[repo] = one


def observe(state: State, fx: Effects) -> Observations:
    obs = Observations(now=clock.now())
    observe_jobs(state, fx, obs)
    observe_machine(state, fx, obs)
    observe_forge(state, fx, obs)
    observe_endpoints(state, fx, obs)
    return obs
