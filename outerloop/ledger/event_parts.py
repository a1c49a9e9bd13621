"""The parts a run's events carry (``ledger/events.py`` names them too, as ``ev.X``):
an experiments-table row, a review finding, an eval pair, a cite, an effect's result.
Each is written field by field in a fixed order, so a line holds the same object older
versions wrote."""

from __future__ import annotations

from typing import Literal

import msgspec


class ExperimentRow(msgspec.Struct, frozen=True, kw_only=True):
    """One row of the experiments table (PR body and report), as ``publish_ready``
    keeps it: the renderers read these rows (``run/render.py``), the tick's report
    of a run it ends reads them back from the ledger. Every field is written, in this
    order: the line holds the same object older versions wrote."""

    sleep: int
    launch: str
    why: str
    job: str
    ended: str
    elapsed: str
    last_line: str


Severity = Literal["blocking", "advisory"]


class ReviewFinding(msgspec.Struct, frozen=True, kw_only=True):
    """A review finding as ``publish_ready`` keeps it: the fields of
    ``run.findings.Finding`` (which validates a judge's file and builds these),
    in its order, every one written (a test keeps the two in step)."""

    severity: Severity
    file: str = ""
    line: int | None = None
    summary: str
    detail: str = ""
    source: str = ""


EvalSide = Literal["base", "cand"]


class SuiteNeed(msgspec.Struct, frozen=True, kw_only=True):
    """A sibling the suite gate found worse by more than its free allowance but within
    its ``max`` (``contract_reference.RegressionAllowance``): the climbed benchmark's
    gain must reach ``gain`` (a decimal string; times its |baseline| when
    ``relative``) for the submission to be credited, at whichever look credits it.
    ``worse`` says what the sibling showed, for the verdict that refuses."""

    sibling: str
    gain: str
    relative: bool
    worse: str


class EvalPair(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """One baseline/candidate pair of eval jobs a parked run waits on: ``base`` and
    ``cand`` are their job ids; ``bench`` names a sibling benchmark's pair (the suite
    gate), unset for the run's own benchmark (and then not written). Written in this
    order, as older versions wrote the plain object."""

    bench: str | None = None
    base: str
    cand: str
    first: EvalSide | None = None
    """Set when both sides run in one job (``base == cand``), one after the other:
    which side ran first. Unset: two jobs (earlier versions)."""
    couple: int | None = None
    """Set when the pair is one half of an order-balanced couple (``attempt/pairs.py``):
    the couple's index in its submission, whose hidden seed both halves ran under; the
    other half ran the sides in the other order. Unset: a pair alone (earlier versions)."""

    def job(self, side: EvalSide) -> str:
        return self.base if side == "base" else self.cand

    def with_job(self, side: EvalSide, job_id: str) -> EvalPair:
        """This pair with ``side``'s job replaced (a re-run eval)."""
        if side == "base":
            return msgspec.structs.replace(self, base=job_id)
        return msgspec.structs.replace(self, cand=job_id)


class Cite(msgspec.Struct, frozen=True, array_like=True):
    """Where one paragraph cut out of a long text is (``ledger/cites.py``): ``text``
    (the hash of a text of the run) holds it at ``[start:end]``. Written as
    ``[text, start, end]``."""

    text: str
    start: int
    end: int


class EffectResult(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """What an effect returned (``done``'s ``result``): each performer sets its own
    fields, the rest stay unset and are not written, so the line holds the same plain
    object older versions wrote (and those lines decode into this)."""

    job_id: str | None = None
    """``submit_job``: the scheduler's id."""
    accepted: bool | None = None
    """``cancel_job``: the scheduler accepted the cancel."""
    comment_id: int | None = None
    """``post_comment``."""
    number: int | None = None
    """``open_issue``, ``open_pr``: the issue's or PR's number."""
    closed: bool | None = None
    """``close_issue``."""
    ws: str | None = None
    """``prepare_workspace``: the workspace path."""
    base: str | None = None
    """``prepare_workspace``: the commit checked out."""
    line_start: str | None = None
    """``prepare_workspace`` of a run on a research line: the commit the agent's clone
    starts at (the line with the base merged in, instruction files reset)."""
    conflicts: list[str] | None = None
    """``prepare_workspace``: the paths where merging the base into the line conflicted
    (their conflict markers are in ``line_start``: the session's first task)."""
    sha: str | None = None
    """``publish_record``: the research-log commit."""
    reports: list[str] | None = None
    """``publish_record``: the runs whose reports it added."""
    summary: str | None = None
    """``publish_record``: digest of leader.json + BENCHMARKS.md."""
    board: str | None = None
    """``publish_record``: digest of the board files published."""
    freed_bytes: int | None = None
    """``clean_workspace``, ``prune_jobs``."""

    def __reduce__(self) -> tuple[object, tuple[bytes]]:
        """Pickled (in the fold's cache) as its JSON, the set fields only: a settled
        history keeps thousands of these, and twelve mostly-empty fields each would
        make the cache, and a quiet tick's load of it, larger."""
        return (_effect_result, (_RESULT_ENCODER.encode(self),))


_RESULT_ENCODER = msgspec.json.Encoder()
_RESULT_DECODER = msgspec.json.Decoder(EffectResult)


def _effect_result(data: bytes) -> EffectResult:
    return _RESULT_DECODER.decode(data)


class EnvelopeAsFound(msgspec.Struct, frozen=True, kw_only=True):
    """A line's envelope with its ``kind`` as plain text: what is read of a line whose
    kind or fields this version cannot decode into its own event."""

    kind: str
    seq: int
    at: str
    lc: int = 0
    v: int = 1
    run: str | None = None


class UnknownEvent(EnvelopeAsFound, frozen=True, kw_only=True):
    """A kind this version does not know: kept, ignored."""


def as_dict(event: msgspec.Struct) -> dict[str, object]:
    """An event's own fields (no envelope), e.g. to keep a launch or a verdict."""
    skip = ("v", "seq", "at", "lc", "run")
    return {k: v for k, v in msgspec.structs.asdict(event).items() if k not in skip}


class _Event(msgspec.Struct, frozen=True, kw_only=True, tag_field="kind", omit_defaults=True):
    """Written without the fields at their defaults (``omit_defaults``): a field left out
    decodes as its default, so old lines (every field written) read the same; a default
    is part of the ledger's format, never changed."""

    v: int = 1
    seq: int = 0
    """Stamped by the writer (``LedgerWriter.append``): build events without it."""
    at: str = ""
    """Stamped by the writer."""
    lc: int = 0
    """Logical clock (Lamport): above every ``lc`` its writer had folded, so an event
    sorts after everything it could have known of whatever the writers' wall clocks
    say. 0 on lines written before it existed."""
    run: str | None = None

    @property
    def kind(self) -> str:
        return str(self.__struct_config__.tag)
