"""Stand-in GPUs for ``LocalCompute``: device ids ``0..N-1`` handed to local jobs.

``[compute] local_gpus = N`` gives the machine N devices. A task asking for ``g``
GPUs starts only when ``g`` ids are free, and sees them in ``CUDA_VISIBLE_DEVICES``
(``0,1``), as a Slurm job does; a task that cannot get them waits with the pending
reason ``Resources``, like Slurm's. An id is held by an ``flock`` on
``jobs/gpus/<id>.lock`` that the task's runner keeps open while the task runs, so
ids are shared fairly across every runner of the home and a runner that dies frees
its ids with it (the kernel drops the lock when the process ends).
"""

from __future__ import annotations

import fcntl
import os
from dataclasses import dataclass, field
from pathlib import Path

GPU_DIR = "gpus"


@dataclass
class Devices:
    """Ids held by one task, with the open lock files that hold them."""

    ids: list[int]
    fds: list[int] = field(default_factory=list)

    @property
    def visible(self) -> str:
        return ",".join(str(i) for i in self.ids)


class DevicePool:
    def __init__(self, jobs_dir: Path, count: int) -> None:
        self.folder = jobs_dir / GPU_DIR
        self.count = count

    def acquire(self, wanted: int) -> Devices | None:
        """``wanted`` free ids (lowest first), or None when fewer are free now."""
        if wanted <= 0:
            return Devices([])
        if wanted > self.count:
            return None
        self.folder.mkdir(parents=True, exist_ok=True)
        held = Devices([])
        for device in range(self.count):
            fd = os.open(self.folder / f"{device}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                         0o600)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            held.ids.append(device)
            held.fds.append(fd)
            if len(held.ids) == wanted:
                return held
        release(held)
        return None


def lock_keys(jobs_dir: Path, count: int) -> list[str]:
    """Each id's lock file as ``/proc/locks`` names it (``MAJOR:MINOR:INODE``, the
    first two in hex), the files made if need be: a waiting job's bash gate counts the
    free ids from it without taking a lock (``local_gate``). Ids whose file cannot be
    made are left out (the gate then thinks fewer are busy and hands over early: the
    runner's own ``acquire`` decides)."""
    folder = jobs_dir / GPU_DIR
    keys: list[str] = []
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for device in range(count):
            fd = os.open(folder / f"{device}.lock", os.O_RDWR | os.O_CREAT | os.O_CLOEXEC,
                         0o600)
            try:
                st = os.fstat(fd)
            finally:
                os.close(fd)
            keys.append(f"{os.major(st.st_dev):02x}:{os.minor(st.st_dev):02x}:{st.st_ino}")
    except OSError:
        pass
    return keys


def release(devices: Devices | None) -> None:
    """Give the ids back (closing the lock files drops the locks)."""
    if devices is None:
        return
    for fd in devices.fds:
        os.close(fd)
    devices.fds.clear()
