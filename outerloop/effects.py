"""Effects: the actions with an outside effect, which the executor brackets with a
write-ahead ``intent`` that records them. Data only.

Each effect has an idempotency ``key`` that names its effect where the outside world
can be asked about it (the job name, the comment's marker, the PR's head branch), so
a crash between the write-ahead ``intent`` and its ``done`` is settled by looking the
key up, never by doing the effect twice.

**Why msgspec structs (tagged by ``kind``), not pydantic models**: an effect is written
into its ``intent`` and decoded with every ledger line in the fold's bulk decode
(hundreds of thousands on a cold start): msgspec decodes it typed for about the cost
of a plain dict, where pydantic validation would slow the cold fold several-fold. They
sit below the ledger (``ledger.events`` types ``Intent.action`` with them); the lanes'
full ``Action`` union, with ``RecordEvent``, is in ``actions.py``. See
docs/architecture.md ("Typed data path").
"""

from __future__ import annotations

import hashlib

import msgspec

from outerloop.compute.spec import JobSpec, spec_to_json
from outerloop.vocabulary import JobPurpose


def workspace_key(run: str) -> str:
    """The key of a run's ``PrepareWorkspace`` (what its climb job waits for)."""
    return f"workspace:{run}"


class _Action(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind",
              forbid_unknown_fields=True, omit_defaults=True):
    """Written without the fields that hold their defaults, like the events (see
    ``ledger/events.py``): an intent older versions wrote with every field reads the
    same."""

    target: str
    run: str | None = None

    @property
    def kind(self) -> str:
        return str(self.__struct_config__.tag)

    @property
    def key(self) -> str:
        raise NotImplementedError

    @property
    def after(self) -> str | None:
        """The key of the effect this one needs done first (None: none). The executor
        performs it only once that effect's ``done`` is recorded, this tick or earlier;
        until then it is not performed at all (no intent, nothing failed) and its lane
        plans it again. Derived from the effect, never written into its intent: an
        intent is only written once the prerequisite is done."""
        return None


class SubmitJob(_Action, tag="submit_job", frozen=True, kw_only=True,
                forbid_unknown_fields=True):
    """Submit ``spec``. Its intent records the spec's hash and what the fold reads of it
    (``recorded``), not the spec: the executor writes the whole spec under the home
    first and a replay reads it back from there, checked against the hash
    (``kernel/recorded.py``; a kernel job's spec is about 1 KB, a sandboxed launch's
    3 KB)."""

    purpose: JobPurpose
    launch: str | None = None
    spec: JobSpec
    spec_hash: str = ""
    """Set in the recorded form only: ``spec_hash`` of the whole spec. An intent from
    before it holds the whole spec, and replays from it."""

    @property
    def key(self) -> str:
        return f"job:{self.spec.name}"

    def recorded(self) -> SubmitJob:
        """The submit as its intent holds it: the spec's hash, its name and the fields
        the fold reads (its time and GPUs: ``fold.peak_gpus``, ``JobSpec.run_minutes``);
        the rest is empty."""
        if self.spec_hash:
            return self
        spec = self.spec
        kept = JobSpec(name=spec.name, time_minutes=spec.time_minutes, gpus=spec.gpus,
                       nodes=spec.nodes, array_size=spec.array_size,
                       array_concurrency=spec.array_concurrency)
        return msgspec.structs.replace(self, spec=kept, spec_hash=spec_hash(spec))

    @property
    def after(self) -> str | None:
        """A climb job runs in its run's workspace: it waits for ``PrepareWorkspace``
        (a job submitted without it finds nothing and ends the run as a failed start)."""
        return workspace_key(self.run) if self.purpose == JobPurpose.CLIMB and self.run else None


class CancelJob(_Action, tag="cancel_job", frozen=True, kw_only=True,
                forbid_unknown_fields=True):
    job_id: str
    why: str = ""

    @property
    def key(self) -> str:
        return f"cancel:{self.job_id}"


class PostComment(_Action, tag="post_comment", frozen=True, kw_only=True,
                  forbid_unknown_fields=True):
    """A kernel post on an issue or PR, carrying ``<!-- outerloop:kind key=... -->``."""

    number: int
    body: str
    marker_kind: str
    marker_key: str
    body_hash: str = ""
    """Set in the recorded form of a run's report (``recorded``): the body is the run's
    ``run_ended`` report, so its intent holds the hash and ``body`` is empty; a replay
    takes the report from the ledger (``kernel/recorded.py``), checked against it."""

    @property
    def key(self) -> str:
        return f"comment:{self.target}#{self.number}:{self.marker_kind}:{self.marker_key}"

    def recorded(self) -> PostComment:
        if self.marker_kind != REPORT_MARKER or self.body_hash:
            return self
        return msgspec.structs.replace(self, body="", body_hash=file_hash(self.body))


class EditComment(_Action, tag="edit_comment", frozen=True, kw_only=True,
                  forbid_unknown_fields=True):
    """The one kernel comment on issue ``number`` carrying the marker holds ``body``:
    edited when it holds another, posted when there is none (a summary kept current,
    such as a wide issue's status, ``lanes/width_status.py``). Its key names the body's
    hash, so each new body is one effect, done once; performing it again sets the same
    body (safe to retry)."""

    number: int
    body: str
    marker_kind: str
    marker_key: str

    @property
    def key(self) -> str:
        return (f"edit:{self.target}#{self.number}:{self.marker_kind}:{self.marker_key}:"
                f"{file_hash(self.body)}")


class OpenIssue(_Action, tag="open_issue", frozen=True, kw_only=True,
                forbid_unknown_fields=True):
    """A kernel issue on the target (an alarm), carrying its marker in the body; ``n``
    numbers the occasion, so a later, separate alarm is a new issue."""

    title: str
    body: str
    marker_kind: str
    marker_key: str
    n: int

    @property
    def key(self) -> str:
        return f"issue:{self.target}:{self.marker_kind}-{self.marker_key}-{self.n}"


class CloseIssue(_Action, tag="close_issue", frozen=True, kw_only=True,
                 forbid_unknown_fields=True):
    """Close an issue, or (``pull``) a pull request unmerged: a run's own, withdrawn."""

    number: int
    why: str = ""
    pull: bool = False

    @property
    def key(self) -> str:
        return f"close:{self.target}#{self.number}"


class OpenPR(_Action, tag="open_pr", frozen=True, kw_only=True,
             forbid_unknown_fields=True):
    """Push ``sha`` to ``head`` (fast-forward only) and open or update its PR."""

    head: str
    base: str
    sha: str
    source: str
    """The local repository holding ``sha``."""
    title: str
    body: str
    draft: bool = False
    body_hash: str = ""
    """Set in the recorded form (``recorded``): the body is the run's ``publish_ready``
    body, so its intent holds the hash and ``body`` is empty; a replay takes the body
    from the ledger (``kernel/recorded.py``), checked against it."""

    @property
    def key(self) -> str:
        return f"pr:{self.target}:{self.head}:{self.sha}"

    def recorded(self) -> OpenPR:
        if self.body_hash:
            return self
        return msgspec.structs.replace(self, body="", body_hash=file_hash(self.body))


class PrepareWorkspace(_Action, tag="prepare_workspace", frozen=True, kw_only=True,
                       forbid_unknown_fields=True):
    """Clone the target at ``base_sha`` into the run's workspace (local effect)."""

    base: str
    branch: str
    withhold: tuple[str, ...] = ()
    """The base contract's ``eval_only`` paths: left out of the agent's clone, files and
    objects. An intent recorded before this field reads as none; none is not written
    (``omit_defaults``), so a version before it still reads such an intent."""
    line: str = ""
    """The run's research line (``agents/<agent>``), when its benchmark has ``lines``
    on: the agent's clone starts on that branch with the base merged in
    (``run/lines.py``); empty: on the base, as before lines."""
    wins: tuple[int, ...] = ()
    """The pull requests a combination run combines (``lanes/integrate.py``): each is
    fetched into the kernel's clone and written into the agent's home as a patch
    against its base, eval-only paths left out (``run/wins.py``)."""

    @property
    def key(self) -> str:
        return workspace_key(str(self.run))


class PushLine(_Action, tag="push_line", frozen=True, kw_only=True,
               forbid_unknown_fields=True):
    """Move the agent slot's research line ``branch`` to ``sha`` on the forge, from the
    run's kernel clone ``source`` (fast-forward only: a line only grows). Pushing the
    head the branch holds is a no-op, so a replay is safe without a lookup."""

    branch: str
    sha: str
    source: str

    @property
    def key(self) -> str:
        return f"line:{self.target}:{self.branch}:{self.sha}"


class FetchBase(_Action, tag="fetch_base", frozen=True, kw_only=True,
                forbid_unknown_fields=True):
    """Fetch the target's moved base ``base`` into the run's kernel clone, so its job can
    merge the credited candidate ``seal`` onto it (local effect: a fetch again is safe)."""

    base: str
    seal: str

    @property
    def key(self) -> str:
        return f"base:{self.run}:{self.base}:{self.seal}"


class PublishRecord(_Action, tag="publish_record", frozen=True, kw_only=True,
                    forbid_unknown_fields=True):
    """One commit on the target's research-log branch writing ``files`` (repo path ->
    text), guarded by the head read just before; ``reports`` names the runs whose
    reports it adds and ``summary`` hashes leader.json + BENCHMARKS.md."""

    branch: str
    files: dict[str, str] = msgspec.field(default_factory=dict)
    """The rendered files, in memory only: its intent records ``hashes`` instead (a
    target's board is some 180 KB at 200 runs, and was copied into the ledger by every
    record). An intent from before ``hashes`` holds them here, and still folds."""
    hashes: dict[str, str] = msgspec.field(default_factory=dict)
    """Path -> content hash of each file: what intents recorded before issue 27's
    slimming (they still fold); now none is recorded, ``digest`` hashes them all."""
    reports: list[str] = msgspec.field(default_factory=list)
    summary: str
    board: str = ""
    """The digest of the board files published."""
    digest: str

    @property
    def key(self) -> str:
        return f"record:{self.target}:{self.digest}"

    def recorded(self) -> PublishRecord:
        """The record as its intent holds it: neither its files nor their hashes
        (``digest`` names their content), so a replay finds no files and refuses
        (``executor._publish_record``); its lane renders it again."""
        return msgspec.structs.replace(self, files={}, hashes={})


def file_hash(text: str) -> str:
    """A text's content hash: a research-log file's (``PublishRecord.hashes``), a
    recorded body's (``OpenPR.body_hash``, ``PostComment.body_hash``)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def spec_hash(spec: JobSpec) -> str:
    """A job spec's hash (``SubmitJob.spec_hash``): of its JSON as ``spec_to_json``
    writes it, which ``SUBMIT_FILE`` holds."""
    return hashlib.sha256(spec_to_json(spec)).hexdigest()[:16]


REPORT_MARKER = "report"
"""The marker kind of a run's report comment (its body is the run's ``run_ended``
report)."""


class CleanWorkspace(_Action, tag="clean_workspace", frozen=True, kw_only=True,
                     forbid_unknown_fields=True):
    """Remove an ended run's ``ws/``, ``home/``, ``kernel/`` and ``trees/`` (local)."""


    @property
    def key(self) -> str:
        return f"clean:{self.run}"


class PruneJobs(_Action, tag="prune_jobs", frozen=True, kw_only=True,
                forbid_unknown_fields=True):
    """Remove a settled run's ``jobs/`` dirs: ``runs/<run>/jobs/`` and local compute's
    ``jobs/<id>/`` records of its jobs (local; no archive configured)."""


    @property
    def key(self) -> str:
        return f"prune:{self.run}"


class WarmDeps(_Action, tag="warm_deps", frozen=True, kw_only=True,
               forbid_unknown_fields=True):
    """Start building the target's dependency cache for the lock ``lock`` at ``base``
    (key ``cache_key``) on the tick host (``deps/warm.py``); ``attempt`` numbers the
    warms of that key (a failed one is retried with a backoff as the next)."""

    lock: str
    base: str
    cache_key: str
    attempt: int

    @property
    def key(self) -> str:
        return f"deps:{self.target}:{self.cache_key}:{self.attempt}"


class PruneDeps(_Action, tag="prune_deps", frozen=True, kw_only=True,
                forbid_unknown_fields=True):
    """Remove an older lock's dependency cache no job used for ``[deps] keep_days``;
    ``since`` (its last use, epoch seconds) tells a later cache of the same key apart."""

    cache_key: str
    since: int

    @property
    def key(self) -> str:
        return f"deps-prune:{self.target}:{self.cache_key}:{self.since}"


class Unreadable(msgspec.Struct, tag="unreadable", tag_field="kind", frozen=True, kw_only=True):
    """Stands for an intent's action this version cannot read (a newer version's kind
    or field, or damage): never written, only made by the fold's decode, so the intent
    stays pending and ``Executor.reconcile`` marks it failed instead of guessing."""

    text: str
    """The action's JSON as found."""
    error: str
    """Why it could not be read."""


Effect = (SubmitJob | CancelJob | PostComment | EditComment | OpenIssue | CloseIssue | OpenPR
          | PrepareWorkspace | PushLine | FetchBase | PublishRecord | CleanWorkspace | PruneJobs
          | WarmDeps | PruneDeps)
"""An action with an outside effect: bracketed by an intent, written into it."""


_EFFECT_DECODER = msgspec.json.Decoder(Effect)
_ENCODER = msgspec.json.Encoder()


def encode_effect(action: Effect) -> bytes:
    """The effect as its intent records it (JSON)."""
    return _ENCODER.encode(action)


def decode_effect(data: bytes | str) -> Effect:
    """An effect from its JSON; raises ``msgspec.ValidationError`` (or
    ``msgspec.DecodeError``) for one this version cannot read."""
    return _EFFECT_DECODER.decode(data)
