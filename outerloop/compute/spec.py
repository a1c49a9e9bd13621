"""A job's spec: what to run, as the kernel records it in its ``submit_job`` intents.

A msgspec struct, apart from the compute protocol (``base.py``, pydantic) so the ledger's
fold, which decodes every submit, imports msgspec only.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec

from outerloop.kinds import GpuRequest

JOB_ID_RE = re.compile(r"^\d+(_\d+)?$")
JOB_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")


def check_job_id(job_id: str) -> str:
    """Refuse anything that is not a plain job id before it reaches a command line."""
    if not JOB_ID_RE.match(job_id):
        raise ValueError(f"not a job id: {job_id!r} (expected digits, optionally _<task>)")
    return job_id


MAX_JOB_MINUTES = 60 * 24 * 14
MAX_GPUS_PER_NODE = 8
MAX_NODES = 64
MAX_ARRAY_SIZE = 1000
GPU_TYPE_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


class JobSpec(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True,
              omit_defaults=True):
    """What to run. Backends turn it into ``sbatch`` argv or a local runner.

    A msgspec struct (not pydantic): it travels inside the ``submit_job`` effect, which
    the fold decodes with every ledger line (see ``effects.py``). ``__post_init__`` checks
    it whether built in code or decoded from a ledger line or a job's ``spec.json``. The
    directories are kept as text (``work_path``/``log_path`` give them as paths): a
    ``Path`` field would cost the cold fold more than the rest of the action. Written
    without the fields that hold their defaults (a spec older versions wrote with
    every field reads the same)."""

    name: str
    command: str = ""
    """A shell command, run with ``bash -c`` in ``workdir``. Empty (and so left out of
    the line) only in a submit's recorded form (``SubmitJob.recorded``), as are
    ``workdir`` and ``log_dir``: each a run's ledger would carry in every submit."""
    workdir: str = ""
    log_dir: str = ""
    """stdout/stderr/exit_code/finished go here."""
    time_minutes: int
    cpus: int = 1
    mem_mb: int | None = None
    gpus: int = 0
    """GPUs per node (per array task)."""
    nodes: int = 1
    gpu_type: str | None = None
    gpu_request: GpuRequest | None = None
    """How sbatch is asked for GPUs; None: [compute]'s form."""
    partition: str | None = None
    account: str | None = None
    qos: str | None = None
    constraint: str | None = None
    extra_sbatch: tuple[str, ...] = ()
    setup: tuple[str, ...] = ()
    """Shell lines run before the command, in the job (the operator's [compute] setup)."""
    nice: int = 0
    array_size: int | None = None
    array_concurrency: int | None = None
    after_any: tuple[str, ...] = ()
    singleton: bool = False
    begin: str | None = None
    requeue: bool | None = None
    """True: --requeue; False: --no-requeue; None: the cluster's default."""
    env: dict[str, str] = msgspec.field(default_factory=dict)
    """The allowlisted environment."""

    def __post_init__(self) -> None:
        """One cheap pass in the common case (it runs for every decoded submit); the
        field at fault is named only when something is wrong."""
        if JOB_NAME_RE.match(self.name) and 1 <= self.time_minutes <= MAX_JOB_MINUTES \
                and self.cpus >= 1 and 0 <= self.gpus <= MAX_GPUS_PER_NODE \
                and 1 <= self.nodes <= MAX_NODES and self.nice >= 0 \
                and self.mem_mb is None and self.array_size is None \
                and self.array_concurrency is None and self.gpu_type is None \
                and not self.after_any:
            return
        if not JOB_NAME_RE.match(self.name):
            raise ValueError(f"job name {self.name!r} must match {JOB_NAME_RE.pattern}")
        _in_range("time_minutes", self.time_minutes, 1, MAX_JOB_MINUTES)
        _in_range("cpus", self.cpus, 1)
        _in_range("mem_mb", self.mem_mb, 1)
        _in_range("gpus", self.gpus, 0, MAX_GPUS_PER_NODE)
        _in_range("nodes", self.nodes, 1, MAX_NODES)
        _in_range("nice", self.nice, 0)
        _in_range("array_size", self.array_size, 1, MAX_ARRAY_SIZE)
        _in_range("array_concurrency", self.array_concurrency, 1)
        if self.gpu_type is not None and not GPU_TYPE_RE.match(self.gpu_type):
            raise ValueError(f"gpu_type {self.gpu_type!r} must match {GPU_TYPE_RE.pattern}")
        for job_id in self.after_any:
            check_job_id(job_id)

    @property
    def work_path(self) -> Path:
        return Path(self.workdir)

    @property
    def log_path(self) -> Path:
        return Path(self.log_dir)

    @property
    def run_minutes(self) -> int:
        """How long the job may take once it starts: its time limit, times the waves of
        an array that runs at most ``array_concurrency`` tasks at once."""
        if not self.array_size:
            return self.time_minutes
        at_once = self.array_concurrency or self.array_size
        return self.time_minutes * -(-self.array_size // at_once)

    def task_log_dir(self, task: int | None) -> Path:
        return self.log_path if task is None else self.log_path / str(task)


def _in_range(name: str, value: int | None, low: int, high: int | None = None) -> None:
    if value is None:
        return
    if value < low or (high is not None and value > high):
        upper = f" and at most {high}" if high is not None else ""
        raise ValueError(f"job spec {name}={value} must be at least {low}{upper}")


_SPEC_ENCODER = msgspec.json.Encoder()
_SPEC_DECODER = msgspec.json.Decoder(JobSpec)


def spec_to_json(spec: JobSpec) -> bytes:
    return _SPEC_ENCODER.encode(spec)


def spec_from_json(data: bytes | str) -> JobSpec:
    """Raises ``msgspec.ValidationError`` (a ``ValueError``) on a spec this version
    cannot read."""
    return _SPEC_DECODER.decode(data)
