"""The one place effects happen, each bracketed by a write-ahead intent.

For every action: append ``intent`` (with the action and its idempotency key),
perform, append ``done`` (with the result). What the world keeps (``LOOKED_UP_FIRST``) is
looked up first, so a ledger restored from a backup records it instead of repeating
it. After a crash, an intent without its ``done`` is *reconciled* before anything new
is decided: the key is looked up (the job by name, the comment by its marker, the PR
by its head, in any state) and ``done`` is
recorded if the effect happened, or the effect is performed now if it did not.
Effects therefore happen exactly once across crashes at any point.

A failing action is recorded (``failed``) and does not stop the others. An action
that needs an earlier effect (``Effect.after``: the climb job needs its workspace) is
performed only once that effect is ``done``; while it is not (it failed, or its outcome
is unknown this tick), the dependent action is not performed and nothing is recorded
for it: the prerequisite is retried or reconciled first, and the lane plans the
dependent again.
"""

from __future__ import annotations

import fnmatch
import os
import time
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from pathlib import Path
from typing import assert_never

import msgspec

from outerloop.compute.base import Compute
from outerloop.config import Settings
from outerloop.errors import ComputeUnavailable, ForgeUnavailable, OuterloopError
from outerloop.forge.base import Forge
from outerloop.kernel import actions as act
from outerloop.kernel import recorded
from outerloop.ledger import events as ev
from outerloop.ledger.book import LedgerWriter
from outerloop.ledger.events import EffectResult
from outerloop.ledger.state import PendingIntent
from outerloop.retry_rule import Cause, cause_of
from outerloop.settings_snapshot import SNAPSHOT_VAR, write_snapshot
from outerloop.text import redact, scrubbed

CRASH_EXIT_CODE = 86
SETTLE_UNANSWERED_MAX = 2
"""``Executor.settle`` gives up after this many lookups that could not be asked."""


CRASH_FILE = "CRASH_AT"


def maybe_crash(home: Path, point: str) -> None:
    """Fault injection for tests: die hard at ``point`` (``after-intent:<key>`` or
    ``after-effect:<key>``) when a line of ``<home>/CRASH_AT`` matches it (fnmatch).

    The matching line is removed first, so each listed point crashes exactly once,
    whichever process (a tick or a run's job) reaches it. No file: no cost but a stat.
    """
    path = home / CRASH_FILE
    if not path.exists():
        return
    lines = path.read_text(encoding="utf-8").splitlines()
    for index, pattern in enumerate(lines):
        if pattern.strip() and fnmatch.fnmatchcase(point, pattern.strip()):
            rest = lines[:index] + lines[index + 1:]
            tmp = path.with_suffix(f".tmp{os.getpid()}")
            tmp.write_text("".join(line + "\n" for line in rest), encoding="utf-8")
            os.replace(tmp, path)
            os._exit(CRASH_EXIT_CODE)


@dataclass
class Effects:
    """Lazily built handles on the outside world, plus secrets to keep out of the ledger."""

    settings: Settings
    secrets: list[str] = field(default_factory=list)
    _compute: Compute | None = None
    _forge: Forge | None = None
    _known: list[str] | None = None

    def compute(self) -> Compute:
        if self._compute is None:
            from outerloop.compute.factory import make_compute

            self._compute = make_compute(self.settings)
        return self._compute

    def forge(self) -> Forge:
        if self._forge is None:
            from outerloop.forge.factory import make_forge

            self._forge = make_forge(self.settings, self.secrets)
        return self._forge

    def known_secrets(self) -> list[str]:
        """The forge's tokens (an App's installation tokens are minted at run time) plus
        ``sandbox.secrets.known_secrets``, the one list, read once per tick."""
        if self._known is None:
            from outerloop.sandbox.secrets import known_secrets

            self._known = known_secrets(self.settings)
        return sorted({*self.secrets, *self._known}, key=len, reverse=True)




def _submit_job(action: act.SubmitJob, fx: Effects) -> EffectResult:
    """Submit (a replay: the spec written ahead of its intent, ``kernel/recorded.py``);
    a kernel job named a settings snapshot (``run/jobs.py``): write it first, from this
    process's effective settings."""
    spec = recorded.submitted_spec(action, fx.settings.home)
    if SNAPSHOT_VAR in spec.env:
        written = write_snapshot(fx.settings)
        if str(written) != spec.env[SNAPSHOT_VAR]:
            raise OuterloopError(f"job {spec.name} names the settings snapshot "
                                 f"{spec.env[SNAPSHOT_VAR]} but this process's "
                                 f"settings are {written}; it is planned again next tick")
    return EffectResult(job_id=fx.compute().submit(spec))


def _find_job(action: act.SubmitJob, fx: Effects, live_only: bool = False,
              ) -> EffectResult | None:
    job_id = fx.compute().find_by_name(action.spec.name, live_only=live_only,
                                       home=fx.settings.home)
    return EffectResult(job_id=job_id) if job_id else None


def _cancel_job(action: act.CancelJob, fx: Effects) -> EffectResult:
    return EffectResult(accepted=fx.compute().cancel(action.job_id))


def comment_body(action: act.PostComment) -> str:
    from outerloop.forge.markers import render_marker
    from outerloop.sandbox.secrets import neutralise_markers

    body = neutralise_markers(action.body.rstrip())
    return f"{body}\n\n{render_marker(action.marker_kind, action.marker_key)}\n"


def _post_comment(action: act.PostComment, fx: Effects) -> EffectResult:
    recorded.require_body(action)
    comment = fx.forge().post_comment(action.target, action.number, comment_body(action))
    return EffectResult(comment_id=comment.id)


def _find_comment(action: act.PostComment, fx: Effects) -> EffectResult | None:
    from outerloop.forge.markers import find_marker

    comments = fx.forge().list_comments(action.target, action.number)
    found = find_marker(comments, action.marker_kind, action.marker_key,
                        fx.settings.forge.kernel_logins)
    return EffectResult(comment_id=found.id) if found is not None else None


def _open_issue(action: act.OpenIssue, fx: Effects) -> EffectResult:
    from outerloop.forge.markers import with_marker
    from outerloop.sandbox.secrets import neutralise_markers

    body = with_marker(neutralise_markers(action.body), action.marker_kind, action.marker_key)
    return EffectResult(number=fx.forge().create_issue(action.target, action.title, body).number)


def _find_issue(action: act.OpenIssue, fx: Effects) -> EffectResult | None:
    """The kernel's open issue carrying the marker (only one alarm of a kind is open
    at a time, so the open one is this occasion's)."""
    from outerloop.forge.markers import find_marker

    issues = fx.forge().list_issues(action.target)
    found = find_marker(issues, action.marker_kind, action.marker_key,
                        fx.settings.forge.kernel_logins)
    return EffectResult(number=found.number) if found is not None else None


def _close_issue(action: act.CloseIssue, fx: Effects) -> EffectResult:
    if action.pull:
        fx.forge().close_pr(action.target, action.number)
    else:
        fx.forge().close_issue(action.target, action.number)
    return EffectResult(closed=True)


def _find_closed(action: act.CloseIssue, fx: Effects) -> EffectResult | None:
    forge = fx.forge()
    state = (forge.get_pr(action.target, action.number).state if action.pull
             else forge.get_issue(action.target, action.number).state)
    return EffectResult(closed=True) if state == "closed" else None


def pr_body(action: act.OpenPR) -> str:
    """The pull request's body as posted: every marker in it neutralised like a
    comment's, but the run's own marker the body ends with (``render_pr_body``), which
    stays last and alone on its line. A body quotes agent text (its report, a judge's
    findings); a marker-looking line in it never reads back as the kernel's."""
    from outerloop.forge.markers import render_marker
    from outerloop.run.render import RUN_MARKER_KIND
    from outerloop.sandbox.secrets import neutralise_markers

    body = action.body.rstrip()
    marker = render_marker(RUN_MARKER_KIND, action.run) if action.run else ""
    if marker and body.endswith(marker):
        return f"{neutralise_markers(body.removesuffix(marker).rstrip())}\n\n{marker}\n"
    return f"{neutralise_markers(body)}\n"


def _open_pr(action: act.OpenPR, fx: Effects) -> EffectResult:
    recorded.require_body(action)
    forge = fx.forge()
    forge.push(action.target, Path(action.source), action.sha, action.head)
    existing = forge.find_open_pr(action.target, action.head)
    body = pr_body(action)
    if existing is not None:
        pr = forge.update_pr(action.target, existing.number, title=action.title, body=body)
    else:
        pr = forge.open_pr(action.target, action.head, action.base, action.title, body,
                           draft=action.draft)
    return EffectResult(number=pr.number)


def _find_pr(action: act.OpenPR, fx: Effects) -> EffectResult | None:
    """The pull request from the head at this sha, in any state: one a maintainer merged
    or closed is as much this effect as an open one (a ledger restored from before it
    must not open a second). At this sha or built on it: a maintainer who pushed a
    commit onto the PR's branch before the kernel recorded the PR (its tick died, its
    ledger was restored) moved its head past the candidate, and the PR is still this
    effect (issue 48: else the push is refused as a moved branch and the candidate
    opens a second PR from a fresh branch). Only the kernel's own (current or former
    login): a PR someone else opened from its branch is not its effect. An open one
    first, else the newest."""
    from outerloop.forge.markers import is_kernel_post

    logins = fx.settings.forge.kernel_logins
    forge = fx.forge()
    prs = [pr for pr in forge.find_prs(action.target, action.head)
           if is_kernel_post(pr, logins) and (
               pr.head_sha == action.sha or _built_on(forge, action, pr.head_sha))]
    if not prs:
        return None
    pr = next((p for p in prs if p.state == "open"), prs[-1])
    return EffectResult(number=pr.number)


def _built_on(forge: Forge, action: act.OpenPR, head_sha: str) -> bool:
    """Whether the forge's commit ``head_sha`` contains the candidate ``action.sha`` (asked
    in the run's kernel repository, which holds the candidate, after fetching the
    head; only for a kernel PR from this head whose head is not the candidate). A head
    the forge no longer has contains nothing."""
    from outerloop.errors import NotFound
    from outerloop.forge import localgit as g

    source = Path(action.source)
    try:
        forge.fetch(action.target, source, head_sha)
    except NotFound:
        return False
    return g.is_ancestor(action.sha, head_sha, cwd=source)


def _prepare_workspace(action: act.PrepareWorkspace, fx: Effects) -> EffectResult:
    """A local effect: without its ``ready`` marker the workspace is known not to be
    made, so a forge that could not be reached is a failure (counted; the start is
    retried with backoff, ``lanes/starting.py``), never an unknown outcome."""
    from outerloop.run.workspace import prepare_workspace

    try:
        return prepare_workspace(fx.settings, fx.forge(), action)
    except ForgeUnavailable as exc:
        raise OuterloopError(f"the workspace of run {action.run} was not prepared: {exc}; "
                             f"its start is retried") from None


def _push_line(action: act.PushLine, fx: Effects) -> EffectResult:
    """Move the slot's research line on the forge (fast-forward only; the head it holds
    is a no-op, so a replay is safe). A line that moved elsewhere (``BranchMoved``) waits
    on a human: the retry rule reads its cause."""
    fx.forge().push(action.target, Path(action.source), action.sha, action.branch)
    return EffectResult(sha=action.sha)


def _fetch_base(action: act.FetchBase, fx: Effects) -> EffectResult:
    """Fetch the moved base into the run's kernel clone (``forge.fetch``: objects and
    ``origin/*`` refs only, its work tree left alone); a forge not reached fails, and the
    followup lane plans it again (the retry rule)."""
    from outerloop.run.paths import RunPaths

    assert action.run is not None
    kernel = RunPaths.of(fx.settings.home, action.run).kernel
    return EffectResult(base=fx.forge().fetch(action.target, kernel, action.base))


def _publish_record(action: act.PublishRecord, fx: Effects) -> EffectResult:
    """Write the research-log files as one commit on top of the head read now; a head
    that moves in between is refused by ``commit_files`` (retried next tick). A record
    reconciled from its intent has its files' hashes only: it fails, and the record
    lane renders it again from the ledger (the failure makes the next state fresh)."""
    if not action.files:
        raise OuterloopError(f"research-log record {action.key}: its intent holds its "
                             f"files' digest, not the files; it is rendered again next tick")
    forge = fx.forge()
    head = forge.branch_head(action.target, action.branch)
    files = {path: text.encode("utf-8") for path, text in action.files.items()}
    sha = forge.commit_files(action.target, action.branch, files,
                             f"research-log: {len(action.reports)} new reports", head)
    return EffectResult(sha=sha, reports=action.reports)  # digests: its intent's


def _clean_workspace(action: act.CleanWorkspace, fx: Effects) -> EffectResult:
    from outerloop.run.workspace import clean_workspace

    assert action.run is not None
    return EffectResult(freed_bytes=clean_workspace(fx.settings.home, action.run))


def _prune_jobs(action: act.PruneJobs, fx: Effects) -> EffectResult:
    from outerloop.archive.prune import prune_job_dirs

    assert action.run is not None
    return EffectResult(freed_bytes=prune_job_dirs(fx.settings.home, action.run))


def _warm_deps(action: act.WarmDeps, fx: Effects) -> EffectResult:
    """Read the lock at the base again (the intent holds its key, not its bytes) and
    start the warm: a local effect, safe to perform again (a warm that holds the key's
    lock, or a warm key, makes it do nothing)."""
    from outerloop.deps.warm import start

    lock = fx.forge().read_file(action.target, action.lock, action.base)
    if lock is None:
        raise OuterloopError(f"{action.lock} is not in {action.target} at {action.base[:12]}")
    return EffectResult(accepted=start(fx.settings, action.target, action.cache_key,
                                       action.lock, lock))


def _prune_deps(action: act.PruneDeps, fx: Effects) -> EffectResult:
    from outerloop.deps.store import prune

    return EffectResult(freed_bytes=prune(fx.settings.home, action.target, action.cache_key))


def perform(action: act.Effect, fx: Effects) -> EffectResult:
    """Do the effect ``action`` names (each kind its performer; mypy checks every kind
    of ``Effect`` has one)."""
    match action:
        case act.SubmitJob():
            return _submit_job(action, fx)
        case act.CancelJob():
            return _cancel_job(action, fx)
        case act.PostComment():
            return _post_comment(action, fx)
        case act.EditComment():
            from outerloop.kernel.kept_comment import edit_comment

            return edit_comment(action, fx.forge(), fx.settings.forge.kernel_logins)
        case act.OpenIssue():
            return _open_issue(action, fx)
        case act.CloseIssue():
            return _close_issue(action, fx)
        case act.OpenPR():
            return _open_pr(action, fx)
        case act.PrepareWorkspace():
            return _prepare_workspace(action, fx)
        case act.PushLine():
            return _push_line(action, fx)
        case act.FetchBase():
            return _fetch_base(action, fx)
        case act.PublishRecord():
            return _publish_record(action, fx)
        case act.CleanWorkspace():
            return _clean_workspace(action, fx)
        case act.PruneJobs():
            return _prune_jobs(action, fx)
        case act.WarmDeps():
            return _warm_deps(action, fx)
        case act.PruneDeps():
            return _prune_deps(action, fx)
        case _:
            assert_never(action)


LOOKED_UP_FIRST = (act.SubmitJob, act.PostComment, act.OpenIssue, act.OpenPR)
"""The effects the world keeps a fact of under their key (a job under its name, a
comment's marker, an alarm issue, a pull request in any state): looked up before they
are performed, not only when their intent was left unsettled. A ledger restored from a
backup, or one that lost lines, lacks their intents altogether; the scheduler and the
forge do not forget, so what they show is recorded (``done``, ``reconciled``) instead
of being done again. A submit's look-up before it is performed asks for a job the
scheduler still lists (``live_only``: one read of the local name index, or ``squeue``
by name on Slurm), so a lost submit never runs twice at once; Slurm's accounting is
asked only when an intent of ours is reconciled, since the account's accounting may
hold an older job of the same name that is not this home's (another home, a test).
A job the ledger lost that has already ended is submitted again: a restore costs that
job once more, never two at a time."""


def find(action: act.Effect, fx: Effects, first: bool = False) -> EffectResult | None:
    """Whether the effect already happened, asked of the outside world by its key (the
    job's name, the comment's or issue's marker, the PR's head); None: it did not, or
    the kind cannot be looked up (local effects, which are safe to perform again).
    ``first``: asked before an effect with no intent on record (``LOOKED_UP_FIRST``)."""
    match action:
        case act.SubmitJob():
            return _find_job(action, fx, live_only=first)
        case act.PostComment():
            return _find_comment(action, fx)
        case act.EditComment():
            from outerloop.kernel.kept_comment import find_edited

            return find_edited(action, fx.forge(), fx.settings.forge.kernel_logins)
        case act.OpenIssue():
            return _find_issue(action, fx)
        case act.CloseIssue():
            return _find_closed(action, fx)
        case act.OpenPR():
            return _find_pr(action, fx)
        case _:
            return None


@dataclass
class Outcome:
    action: act.Action | None
    """None: an intent this version could not read (``Executor.reconcile``)."""
    ok: bool
    result: EffectResult
    error: str | None = None
    waited: bool = False
    """Not performed: its prerequisite (``Effect.after``) is not done (nothing recorded)."""
    unknown: bool = False
    """The effect may or may not have happened; its intent stays pending."""


class Executor:
    """Performs actions with intents, appending to the writer chosen per target."""

    def __init__(self, effects: Effects, writer_for: Callable[[str], LedgerWriter]) -> None:
        self.effects = effects
        self.writer_for = writer_for
        self.outcomes: list[Outcome] = []
        self.settled: dict[str, bool] = {}
        """Each effect key this executor tried: whether it is done now (its latest
        outcome here); what a dependent action (``Effect.after``) follows."""

    def _secrets(self) -> list[str]:
        return self.effects.known_secrets()

    def run(self, action: act.Action, done: Collection[str] = ()) -> Outcome:
        """Perform ``action``; ``done``: the keys the ledger already holds done (a
        prerequisite done at an earlier tick)."""
        writer = self.writer_for(action.target)
        if isinstance(action, act.RecordEvent):
            event = msgspec.structs.replace(action.event, run=action.run)
            writer.append(scrubbed(event, self._secrets()))
            outcome = Outcome(action, True, EffectResult())
            self.outcomes.append(outcome)
            return outcome
        needs = action.after
        if needs is not None and not self.settled.get(needs, needs in done):
            outcome = Outcome(action, False, EffectResult(),
                              f"waits for {needs} (not done)", waited=True)
            self.outcomes.append(outcome)
            return outcome
        text = act.encode_effect(action).decode("utf-8")
        clean = redact(text, self._secrets())
        if clean == text:
            try:
                recorded.write_ahead(action, self.effects.settings.home)
            except OSError as exc:
                return self._failed(action, writer, f"not performed: what its intent names "
                                    f"could not be written ahead ({type(exc).__name__}: "
                                    f"{exc})")
            writer.append(act.intent_for(action))
        else:  # recorded redacted, so never performable: a reconcile marks it failed
            writer.append(ev.Intent(run=action.run, key=action.key, action=act.Unreadable(
                text=clean, error="it carried a secret value outerloop holds")))
        maybe_crash(self.effects.settings.home, f"after-intent:{action.key}")
        if clean != text:
            return self._failed(action, writer, f"refused: this {action.kind} carries a secret "
                                f"value outerloop holds; it was not performed (nothing "
                                f"secret is ever posted)")
        if isinstance(action, LOOKED_UP_FIRST):
            return self._look_up_then_perform(action, writer, first=True)
        return self._perform(action, writer)

    def _perform(self, action: act.Effect, writer: LedgerWriter) -> Outcome:
        try:
            result = perform(action, self.effects)
        except (ComputeUnavailable, ForgeUnavailable) as exc:
            return self._unknown(action, str(exc))
        except OuterloopError as exc:
            return self._failed(action, writer, str(exc), cause_of(exc))
        except OSError as exc:
            return self._failed(action, writer, f"{type(exc).__name__}: {exc}")
        maybe_crash(self.effects.settings.home, f"after-effect:{action.key}")
        writer.append(ev.Done(key=action.key, result=scrubbed(result, self._secrets())))
        recorded.settled(action, self.effects.settings.home)
        self.settled[action.key] = True
        outcome = Outcome(action, True, result)
        self.outcomes.append(outcome)
        return outcome

    def _unknown(self, action: act.Effect, error: str) -> Outcome:
        """The outside world could not be asked: the effect may or may not have
        happened. The intent stays pending; the next tick reconciles it (looks the key
        up first) before anything new is decided."""
        error = redact(error, self._secrets())
        self.settled[action.key] = False
        outcome = Outcome(action, False, EffectResult(),
                          f"outcome unknown, settled next tick: {error}", unknown=True)
        self.outcomes.append(outcome)
        return outcome

    def settle(self, action: act.Effect, waits_s: tuple[float, ...]) -> Outcome:
        """Settle an effect whose outcome is unknown by looking its key up (never by
        performing it again): after each wait in ``waits_s``, ask; ``done`` is recorded
        once found. Not found after the last: still unknown, the intent stays pending
        (whoever reconciles it next looks it up again before performing it).

        For a process that cannot wait for the next tick (a run's job needs the job id
        of what it just submitted); a scheduler that lost sbatch's answer usually lists
        the job at once. ``SETTLE_UNANSWERED_MAX`` lookups the world did not answer end
        it early (each may take a command timeout)."""
        writer = self.writer_for(action.target)
        error, unanswered = "not found", 0
        for wait in waits_s:
            time.sleep(wait)
            try:
                found = find(action, self.effects)
            except OuterloopError as exc:
                error, unanswered = str(exc), unanswered + 1
                if unanswered >= SETTLE_UNANSWERED_MAX:
                    break
                continue
            if found is not None:
                return self._found(action, writer, found)
        return self._unknown(action, f"{action.key} not found after "
                             f"{sum(waits_s):g} s of looking ({error})")

    def _failed(self, action: act.Effect, writer: LedgerWriter, error: str,
                cause: Cause = Cause.FAILED) -> Outcome:
        """A definite failure, with its cause (``retry_rule``: when the step is tried
        again, whether it waits on a human)."""
        error = redact(error, self._secrets())
        self.settled[action.key] = False
        writer.append(ev.Failed(run=action.run, key=action.key, error=error[:2000],
                                cause=cause))
        recorded.settled(action, self.effects.settings.home)
        outcome = Outcome(action, False, EffectResult(), error)
        self.outcomes.append(outcome)
        return outcome

    def reconcile(self, pending: PendingIntent) -> Outcome:
        """Settle an intent left without ``done``: look the key up, else perform.

        An intent this version cannot read (written by a newer one, or damaged) is
        marked failed so it stops blocking; the lanes decide afresh."""
        action = pending.action
        if isinstance(action, act.Unreadable):
            target = pending.file.split("/", 1)[0].replace("__", "/", 1)
            writer = self.writer_for(target)
            writer.append(ev.Failed(key=pending.key,
                                    error=f"unreadable intent: {action.error}"[:2000]))
            outcome = Outcome(None, False, EffectResult(), "unreadable intent")
            self.outcomes.append(outcome)
            return outcome
        return self._look_up_then_perform(action, self.writer_for(action.target))

    def _look_up_then_perform(self, action: act.Effect, writer: LedgerWriter,
                              first: bool = False) -> Outcome:
        """Record the effect as done when the world shows it (``find``), else perform
        it; a lookup the world did not answer leaves the intent pending (unknown)."""
        try:
            found = find(action, self.effects, first)
        except OuterloopError as exc:
            return self._unknown(action, f"could not look {action.key} up: {exc}")
        if found is not None:
            return self._found(action, writer, found)
        return self._perform(action, writer)

    def _found(self, action: act.Effect, writer: LedgerWriter, found: EffectResult) -> Outcome:
        """The effect had happened (looked up by its key): record its ``done``."""
        writer.append(ev.Done(key=action.key, result=found, reconciled=True))
        recorded.settled(action, self.effects.settings.home)
        self.settled[action.key] = True
        outcome = Outcome(action, True, found)
        self.outcomes.append(outcome)
        return outcome
