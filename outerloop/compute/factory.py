"""Pick the compute backend the settings name."""

from __future__ import annotations

from outerloop.compute.base import Compute
from outerloop.config import Settings
from outerloop.errors import ConfigError

LOCAL_JOBS_DIR = "jobs"


def make_compute(settings: Settings) -> Compute:
    if settings.compute.kind == "local":
        from outerloop.compute.local import LocalCompute

        return LocalCompute(settings.home / LOCAL_JOBS_DIR, settings=settings.compute)
    if settings.compute.kind == "slurm":
        from outerloop.compute.slurm import SlurmCompute

        return SlurmCompute(settings.compute)
    raise ConfigError(f"compute.kind: unknown backend {settings.compute.kind!r}")
