"""Pick the compute backend the settings name (``kinds.ComputeKind``)."""

from __future__ import annotations

from outerloop.compute.base import Compute
from outerloop.config import Settings
from outerloop.kinds import ComputeKind, unknown

LOCAL_JOBS_DIR = "jobs"


def make_compute(settings: Settings) -> Compute:
    """The backend ``[compute] kind`` names; the settings already refused any other
    name, and mypy checks every name of ``ComputeKind`` has a branch here."""
    kind = settings.compute.kind
    match kind:
        case "local":
            from outerloop.compute.local import LocalCompute

            return LocalCompute(settings.home / LOCAL_JOBS_DIR, settings=settings.compute)
        case "slurm":
            from outerloop.compute.slurm import SlurmCompute

            return SlurmCompute(settings.compute)
        case _:
            unknown("[compute] kind", kind, ComputeKind)
