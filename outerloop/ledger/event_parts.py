"""The parts a run's events carry (``ledger/events.py`` names them too, as ``ev.X``):
an experiments-table row, a review finding, an eval pair. Each is written field by
field in a fixed order, so a line holds the same object older versions wrote."""

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

    def job(self, side: EvalSide) -> str:
        return self.base if side == "base" else self.cand

    def with_job(self, side: EvalSide, job_id: str) -> EvalPair:
        """This pair with ``side``'s job replaced (a re-run eval)."""
        if side == "base":
            return msgspec.structs.replace(self, base=job_id)
        return msgspec.structs.replace(self, cand=job_id)
