"""What an intent names without holding it: written ahead of it, found again at replay.

An intent records its effect (``actions.intent_for``), but not the parts the ledger
already holds or that weigh most (issue 27: a run's ledger stays small):

- a job's spec: its intent holds the spec's hash and what the fold reads of it
  (``SubmitJob.recorded``); the whole spec is written under the home first
  (``write_ahead``: ``cache/submits/<name>.json``, fsynced before the intent is), a
  replay reads it from there, checked against the hash (``submitted_spec``), and it
  is removed once the submit's outcome is recorded (``settled``);
- a pull request's body (the run's ``publish_ready`` body) and a run's report comment
  (its ``run_ended`` report): the intent holds the text's hash; a replay takes the text
  from the run's record (``with_texts``), checked against it.

What cannot be found again (a spec file removed, a text no longer in the record) is
never guessed: the effect is refused (``failed``) and its lane plans it afresh, as a
research-log record whose intent holds its files' hashes is. A lookup by key always
comes first (``Executor.reconcile``), so an effect that happened is never done twice.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
from pathlib import Path

import msgspec

from outerloop.atomic import make_dirs, write_atomic
from outerloop.compute.spec import JobSpec, spec_from_json, spec_to_json
from outerloop.config import durable
from outerloop.effects import Effect, OpenPR, PostComment, SubmitJob, file_hash
from outerloop.errors import OuterloopError
from outerloop.ledger.state import PendingIntent, RunRecord, State

SUBMITS_DIR = "cache/submits"
"""Under the home: the specs written ahead of their intents, one file per job name
(``<name>.json``), removed once the submit is settled (done or failed)."""


def spec_file(home: Path, action: SubmitJob) -> Path:
    """Where ``action``'s whole spec is written ahead of its intent."""
    return home / SUBMITS_DIR / f"{action.spec.name}.json"


def write_ahead(action: Effect, home: Path) -> None:
    """Write what ``action``'s intent will name without holding (a job's spec), durably,
    before the intent is appended. Raises ``OSError``."""
    if isinstance(action, SubmitJob) and not action.spec_hash:
        path = spec_file(home, action)
        make_dirs(path.parent)
        write_atomic(path, spec_to_json(action.spec), fsync=durable())


def settled(action: Effect, home: Path) -> None:
    """``action``'s outcome is recorded: what was written ahead of its intent goes."""
    if isinstance(action, SubmitJob):
        with contextlib.suppress(OSError):
            spec_file(home, action).unlink(missing_ok=True)


def submitted_spec(action: SubmitJob, home: Path) -> JobSpec:
    """The whole spec of ``action``: its own, or (the recorded form a replay has) the one
    written ahead, when it matches the intent's hash. Raises ``OuterloopError``."""
    if not action.spec_hash:
        return action.spec
    path = spec_file(home, action)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise OuterloopError(f"job {action.spec.name}: its intent names its spec by hash "
                             f"and {path} cannot be read ({exc.strerror}); it is not "
                             f"submitted from a guess, and is planned again") from None
    if hashlib.sha256(data).hexdigest()[:16] != action.spec_hash:
        raise OuterloopError(f"job {action.spec.name}: {path} is not the spec its intent "
                             f"names (hash {action.spec_hash}); it is planned again")
    try:
        return spec_from_json(data)
    except (msgspec.DecodeError, msgspec.ValidationError) as exc:
        raise OuterloopError(f"job {action.spec.name}: {path} does not read as a spec "
                             f"({exc}); it is planned again") from None


def _texts(run: RunRecord | None) -> list[str]:
    """The texts of ``run``'s record an intent may name by hash."""
    if run is None:
        return []
    found = [run.report]
    if run.publish is not None:
        found.append(run.publish.body)
    if run.revision is not None:
        found.append(run.revision.draft.body)
    return [text for text in found if text]


def with_texts(pending: PendingIntent, state: State) -> PendingIntent:
    """``pending`` with the body its intent names by hash put back from the run's record
    (unchanged when it names none, or the record no longer holds it)."""
    action = pending.action
    if not isinstance(action, OpenPR | PostComment) or not action.body_hash or action.body:
        return pending
    run = state.runs.get(action.run) if action.run else None
    for text in _texts(run):
        if file_hash(text) == action.body_hash:
            return dataclasses.replace(pending, action=msgspec.structs.replace(
                action, body=text, body_hash=""))
    return pending


def require_body(action: OpenPR | PostComment) -> None:
    """Refuse to perform a post whose body its intent names by hash and a replay did not
    find again (``with_texts``). Raises ``OuterloopError``."""
    if action.body_hash and not action.body:
        raise OuterloopError(f"{action.key}: its intent holds its body's hash "
                             f"({action.body_hash}) and the run's record no longer holds "
                             f"that text; it is planned again")
