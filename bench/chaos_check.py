"""What chaos counts afterwards: duplicates, losses and the stages each run reached.

Stages are read from the ledger files themselves (a settled run's record keeps only
part of its history): a run *launched* when its file holds a ``launched`` event; it
*woke with results* when the first wake leg after a park on its launches started (in
the park's wake job, or a recovery job when that one died) and one of those launch
jobs ended ``completed``;
its *verdicts* are its ``verdict`` events; its *delivered* comments are the source ids
its ended legs carried.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from pathlib import Path

from outerloop.compute.local_records import SPEC_FILE
from outerloop.ledger import events as ev
from outerloop.ledger.records import RunRecord
from outerloop.ledger.state import State
from outerloop.ledger.store import run_file, tick_file

IMPROVED = "improved"
EXPECTED_STAGES = {
    "gain": ("launched", "results", "verdict"),
    "merge": ("launched", "results", "verdict", "comment"),
    "nogain": ("launched", "results", "verdict"),
    "outside": ("launched", "results"),
}
"""The stages each kind's script must reach (outside's first launch is refused; the
one after it runs)."""


@dataclass
class Stages:
    launched: bool = False
    results: bool = False
    verdicts: list[str] = field(default_factory=list)
    delivered: set[str] = field(default_factory=set)
    legs: int = 0

    def reached(self, stage: str) -> bool:
        return {"launched": self.launched, "results": self.results,
                "verdict": bool(self.verdicts), "comment": bool(self.delivered)}[stage]


def _events(path: Path) -> list[ev.Decoded]:
    try:
        events, _ = ev.decode_lines(path.read_bytes().splitlines())
    except FileNotFoundError:
        return []
    return events


def completed_jobs(home: Path, repo: str) -> dict[str, int]:
    """Job id -> the ``lc`` of its ``job_ended`` as completed."""
    out: dict[str, int] = {}
    for event in _events(tick_file(home, repo)):
        if isinstance(event, ev.JobEnded) and event.state == "completed":
            out.setdefault(event.job_id, event.lc)
    return out


def stages(home: Path, repo: str, run_id: str, completed: dict[str, int]) -> Stages:
    found = Stages()
    launch_jobs: set[str] = set()
    parked_on: list[str] = []
    """The jobs of the last park on launches no wake leg has started after yet."""
    for event in _events(run_file(home, repo, run_id)):
        if isinstance(event, ev.Launched):
            found.launched = True
            launch_jobs.add(event.job_id)
        elif isinstance(event, ev.Parked) and event.reason == "jobs":
            parked_on = list(event.job_ids)
        elif isinstance(event, ev.LegStarted):
            found.legs += 1
            if event.role == "wake" and parked_on:
                found.results |= any(j in launch_jobs and j in completed for j in parked_on)
                parked_on = []
        elif isinstance(event, ev.Verdict):
            found.verdicts.append(event.verdict)
        elif isinstance(event, ev.LegEnded):
            found.delivered.update(event.delivered)
    return found


def duplicate_job_names(jobs_dir: Path, state: State) -> list[str]:
    """Job names submitted more than once: by the local compute's name index, by the
    specs of its job directories (a job created but never indexed), and by the ledger."""
    found: list[str] = []
    names = jobs_dir / "names"
    for folder in sorted(names.iterdir()) if names.exists() else []:
        ids = [p for p in folder.iterdir() if p.name.isdigit()]  # not `latest`, a .tmp
        if len(ids) > 1:
            found.append(f"job name {folder.name} indexed {len(ids)} times")
    specs: collections.Counter[str] = collections.Counter()
    for job_dir in sorted(jobs_dir.iterdir()) if jobs_dir.exists() else []:
        spec = job_dir / SPEC_FILE
        if job_dir.name.isdigit() and spec.exists():
            import json

            specs[str(json.loads(spec.read_text()).get("name", ""))] += 1
    found += [f"job name {name} has {count} job directories"
              for name, count in sorted(specs.items()) if count > 1]
    ledger = collections.Counter(job.name for job in state.jobs.values())
    found += [f"job name {name} recorded for {count} jobs in the ledger"
              for name, count in sorted(ledger.items()) if count > 1]
    return found


def undelivered_comments(posted: list[tuple[str, int]], runs: dict[str, RunRecord],
                         delivered: dict[str, set[str]]) -> list[str]:
    """Comments (run id, comment id) that no ended leg of their run carried, for runs
    that are still in review or ended after the comment (merge: the question precedes
    the reply the maintainer merges on)."""
    lost = []
    for run_id, comment_id in posted:
        if f"c{comment_id}" not in delivered.get(run_id, set()):
            run = runs.get(run_id)
            where = "" if run is None else f" ({run.state}/{run.park_reason or run.ending})"
            lost.append(f"comment {comment_id} on run {run_id}{where} never reached the agent")
    return lost
