"""What ``sinfo`` says of the partitions: each one's nodes, their GPUs by type, and its
time limit (used by the placement checks, ``doctor/slurm.py`` and ``benchmarks.py``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from outerloop.doctor.base import run

GRES_GPU_RE = re.compile(r"gpu(?::([A-Za-z0-9_.-]+))?:(\d+)")


@dataclass
class Partition:
    """What ``sinfo`` says of one partition: its nodes' GPUs (by type) and limit."""

    name: str
    nodes: set[str] = field(default_factory=set)
    gpus: list[dict[str, int]] = field(default_factory=list)
    """Per node: GPU type (``""`` untyped) -> count."""
    max_minutes: int | None = None

    def most_gpus(self, gpu_type: str | None) -> int:
        counts = [node.get(gpu_type, 0) if gpu_type else sum(node.values())
                  for node in self.gpus]
        return max(counts, default=0)


def partitions() -> tuple[dict[str, Partition], str | None]:
    """Every partition ``sinfo`` lists, and the default one (marked ``*``)."""
    from outerloop.compute.slurm_parse import parse_limit_minutes

    done = run(["sinfo", "-h", "-N", "-o", "%N|%P|%G|%l"])
    found: dict[str, Partition] = {}
    default = None
    if done is None or done.returncode != 0:
        return found, default
    for line in done.stdout.splitlines():
        parts = line.strip().split("|")
        if len(parts) != 4:
            continue
        node, name, gres, limit = parts
        if name.endswith("*"):
            name = name.rstrip("*")
            default = name
        part = found.setdefault(name, Partition(name, max_minutes=parse_limit_minutes(limit)))
        if node not in part.nodes:
            part.nodes.add(node)
            counts: dict[str, int] = {}
            for match in GRES_GPU_RE.finditer(gres):
                kind = match.group(1) or ""
                counts[kind] = counts.get(kind, 0) + int(match.group(2))
            part.gpus.append(counts)
    return found, default
