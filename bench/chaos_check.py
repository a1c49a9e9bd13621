"""What chaos counts afterwards: duplicates, losses, stuck runs and the stages each run
reached.

**Decision** (issue 48, the ``moves`` fault): a duplicate is a second *open or merged*
pull request of one run (told apart by the run marker its body ends with), or a second
pull request from one head. A run whose branch a maintainer moved before its first
pull request publishes on a fresh branch (``<branch>-2``): one PR still, from another
head, not a duplicate; a closed, unmerged one beside it (a human closed it) is not
either. (A credited *revision* whose open PR's branch was moved opens a second PR by
design, the old one left to the maintainer: chaos's agents never submit again once
their PR is open, so the rule holds for them.) Every kernel marker must be posted once,
fresh branch or not (the ``moved`` notice has one marker per run and head).

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
import json
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from outerloop.compute.local_records import RUNNER_PID_FILE, SPEC_FILE
from outerloop.forge.base import PullRequest
from outerloop.forge.local import LocalForge
from outerloop.forge.markers import parse_markers
from outerloop.human_waits import human_waits
from outerloop.kernel.lanes.intake import released
from outerloop.ledger import events as ev
from outerloop.ledger.book import decode_lines, run_file, tick_file
from outerloop.ledger.state import RunRecord, State
from outerloop.run.render import RUN_MARKER_KIND

IMPROVED = "improved"
EXPECTED = {"gain": "review", "merge": "merged", "nogain": "negative-result",
            "outside": "negative-result"}
"""Where each kind's script leads its issue's last run."""
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
        events, _ = decode_lines(path.read_bytes().splitlines())
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


def duplicate_job_names(jobs_dir: Path, state: State) -> tuple[list[str], int]:
    """Job names submitted more than once: by the local compute's name index, by the
    specs of its job directories (a job created but never indexed), and by the ledger;
    and how many job directories are inert orphans (created by a submitter killed
    before it indexed the job or started its runner: never queued, never run)."""
    found: list[str] = []
    names = jobs_dir / "names"
    indexed: set[str] = set()
    for folder in sorted(names.iterdir()) if names.exists() else []:
        ids = [p for p in folder.iterdir() if p.name.isdigit()]  # not `latest`, a .tmp
        indexed.update(p.name for p in ids)
        if len(ids) > 1:
            found.append(f"job name {folder.name} indexed {len(ids)} times")
    specs: collections.Counter[str] = collections.Counter()
    orphans = 0
    for job_dir in sorted(jobs_dir.iterdir()) if jobs_dir.exists() else []:
        spec = job_dir / SPEC_FILE
        if not (job_dir.name.isdigit() and spec.exists()):
            continue
        if job_dir.name not in indexed and not (job_dir / RUNNER_PID_FILE).exists():
            orphans += 1
            continue
        specs[str(json.loads(spec.read_text()).get("name", ""))] += 1
    found += [f"job name {name} has {count} job directories that were queued"
              for name, count in sorted(specs.items()) if count > 1]
    ledger = collections.Counter(job.name for job in state.jobs.values())
    found += [f"job name {name} recorded for {count} jobs in the ledger"
              for name, count in sorted(ledger.items()) if count > 1]
    return found, orphans


def undelivered_comments(posted: list[tuple[str, int]], runs: Mapping[str, RunRecord],
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


def runs_by_issue(state: State) -> dict[int, list[RunRecord]]:
    out: dict[int, list[RunRecord]] = collections.defaultdict(list)
    for run in sorted(state.runs.values(), key=lambda r: (r.queued_at, r.run_id)):
        if run.issue is not None:
            out[run.issue].append(run)
    return out


def finished(run: RunRecord, kind: str) -> bool:
    """Ended with its report posted, or (a ``gain`` run) parked in review. A released
    run (failed to start) is not: its issue is claimed again."""
    if run.ended:
        return run.report_posted and not released(run)
    return kind == "gain" and run.state == "parked" and run.park_reason == "review"


def markers(local: LocalForge, repo: str, numbers: list[int]) -> collections.Counter[str]:
    seen: collections.Counter[str] = collections.Counter()
    for number in numbers:
        for comment in local.list_comments(repo, number):
            for line in comment.body.splitlines():
                if line.startswith("<!-- outerloop:"):
                    seen[line] += 1
    return seen


@dataclass
class Outcome:
    duplicates: int = 0
    lost: list[str] = field(default_factory=list)
    ended: int = 0
    parked: int = 0
    orphans: int = 0
    stuck: int = 0
    refusals: int = 0
    """The kernel's publish steps the forge refused for rights (its ``failed`` lines)."""
    stages: dict[str, tuple[str, Stages]] = field(default_factory=dict)
    """Run id -> (its issue's kind, the stages it reached)."""


def check(home: Path, local: LocalForge, repo: str, kinds: dict[int, str],
          posted: list[tuple[str, int]] | None, state: State) -> Outcome:
    """Duplicates, losses with reasons, endings, and the stages every run reached
    (``posted``: the comments posted, run id and comment id; None: none were)."""
    out = Outcome()
    found, out.orphans = duplicate_job_names(home / "jobs", state)
    for line in found:
        out.duplicates += 1
        print(f"  duplicate: {line}")
    if out.orphans:
        print(f"  note: {out.orphans} job directories left by a submitter killed before it "
              f"indexed the job (never queued, never run)")
    prs = local.list_prs(repo, "all")
    per_head = collections.Counter(pr.head for pr in prs)
    for head, count in per_head.items():
        if count > 1:
            out.duplicates += count - 1
            print(f"  duplicate: {count} PRs from {head}")
    for run_id, heads in sorted(prs_per_run(prs).items()):
        if len(heads) > 1:
            out.duplicates += len(heads) - 1
            print(f"  duplicate: run {run_id} has {len(heads)} open or merged PRs "
                  f"({', '.join(heads)})")
    out.refusals = publish_refusals(home)
    seen = markers(local, repo, sorted(kinds) + [pr.number for pr in prs])
    for line, count in seen.items():
        if count > 1:
            out.duplicates += count - 1
            print(f"  duplicate: {line} posted {count} times")
    completed = completed_jobs(home, repo)
    by_issue = runs_by_issue(state)
    for number, kind in sorted(kinds.items()):
        for run in by_issue.get(number, []):
            out.stages[run.run_id] = (kind, stages(home, repo, run.run_id,
                                                          completed))
    lost = out.lost
    for number, kind in sorted(kinds.items()):
        runs = by_issue.get(number, [])
        if not runs:
            lost.append(f"issue #{number} ({kind}): never claimed")
            continue
        if not any(out.stages[r.run_id][1].legs for r in runs):
            lost.append(f"issue #{number} ({kind}): no run of it ever started a leg")
        last = runs[-1]
        claims = sum(1 for line in seen if line.startswith("<!-- outerloop:claim ")
                     and any(r.run_id in line for r in runs))
        reports = [line for line in seen if line.startswith("<!-- outerloop:report ")
                   and last.run_id in line]
        for early in runs[:-1]:
            if not (early.ended and (early.outage or (early.ending == "aborted"
                                                      and early.legs == 0))):
                lost.append(f"issue #{number} ({kind}): run {early.run_id} ended "
                            f"{early.ending} after {early.legs} legs, yet was claimed again")
        outcome = last.ending if last.ended else (
            "review" if last.state == "parked" and last.park_reason == "review"
            else f"{last.state}/{last.park_reason}")
        if last.ended:
            out.ended += 1
        elif outcome == "review":
            out.parked += 1
        if outcome != EXPECTED[kind]:
            lost.append(f"issue #{number} ({kind}): ended {outcome}, its script leads to "
                        f"{EXPECTED[kind]} (run {last.run_id}; {describe(state, last)})")
        if claims != len(runs):
            lost.append(f"issue #{number} ({kind}): {claims} claim markers for "
                        f"{len(runs)} runs")
        if last.ended and len(reports) != 1:
            lost.append(f"issue #{number} ({kind}): {len(reports)} reports")
        why = stuck(state, last)
        if why:
            out.stuck += 1
            print(f"  stuck: issue #{number} ({kind}): run {last.run_id} {why}")
    if posted:
        delivered = {run_id: st.delivered for run_id, (_, st) in out.stages.items()}
        lost += undelivered_comments(posted, state.runs, delivered)
    lost += lines_lost(home, local, repo, state)
    return out


def lines_lost(home: Path, local: LocalForge, repo: str, state: State) -> list[str]:
    """Each hand-over a run saved on its research line (its last ``line_saved``) that
    the forge's line branches do not hold once the run ended (issue 49 point 6: a line
    only grows, and what a slot wrote is never lost to a kill)."""
    bare = local.repo_dir(repo)
    heads = [h for h in local_branches(bare) if h.startswith("agents/")]
    lost = []
    for run in state.runs.values():
        saved = [e.sha for e in _events(run_file(home, repo, run.run_id))
                 if isinstance(e, ev.LineSaved)]
        if not saved or not run.ended:
            continue
        if not any(_holds(bare, head, saved[-1]) for head in heads):
            lost.append(f"run {run.run_id}: its line's last hand-over {saved[-1][:12]} is "
                        f"on no line branch of the forge ({', '.join(heads) or 'none'})")
    return lost


def local_branches(bare: Path) -> list[str]:
    out = subprocess.run(["git", "--git-dir", str(bare), "for-each-ref", "--format",
                          "%(refname:short)", "refs/heads/"], capture_output=True,
                         text=True, check=True).stdout
    return out.split()


def _holds(bare: Path, head: str, sha: str) -> bool:
    return subprocess.run(["git", "--git-dir", str(bare), "merge-base", "--is-ancestor", sha,
                           head], capture_output=True, check=False).returncode == 0


def stage_lines(kinds: dict[int, str], out: Outcome) -> tuple[list[str], list[str]]:
    """(summary lines, the stages a kind present never reached)."""
    per_kind: dict[str, list[Stages]] = collections.defaultdict(list)
    for kind, st in out.stages.values():
        per_kind[kind].append(st)
    all_stages = [st for _, st in out.stages.values()]
    verdicts = {kind: dict(collections.Counter(v for st in sts for v in st.verdicts))
                for kind, sts in sorted(per_kind.items())}
    lines = [f"  stages: {sum(st.launched for st in all_stages)}/{len(all_stages)} runs "
             f"launched, {sum(st.results for st in all_stages)} woke with results, "
             f"verdicts by kind {verdicts}"]
    missing: list[str] = []
    for kind in sorted(set(kinds.values())):
        sts = per_kind.get(kind, [])
        reached = {stage: sum(st.reached(stage) for st in sts)
                   for stage in EXPECTED_STAGES[kind]}
        lines.append(f"  {kind}: {len(sts)} runs; " + ", ".join(
            f"{stage} {n}" for stage, n in reached.items()))
        missing += [f"{kind} never reached {stage}" for stage, n in reached.items() if n == 0]
        if "verdict" in reached and kind in ("gain", "merge") and not any(
                IMPROVED in st.verdicts for st in sts):
            missing.append(f"{kind} never got an improved verdict")
    return lines, missing


def describe(state: State, run: RunRecord) -> str:
    """What a lost run was left holding, for the CI log: enough to tell where it stopped."""
    jobs = ", ".join(f"{j.purpose} {j.job_id} {j.state}" for j in
                     (state.jobs[i] for i in run.job_ids if i in state.jobs))
    return (f"legs {run.legs}, leg open {run.leg_open}, feedback {sorted(run.feedback)}, "
            f"undelivered {sorted(run.undelivered)}, outbox {sorted(run.outbox)}, "
            f"posted {sorted(run.posted)}, pr {run.pr_number}, jobs: {jobs or 'none'}")


def prs_per_run(prs: list[PullRequest]) -> dict[str, list[str]]:
    """Run id -> the heads of its open or merged pull requests (by its body's run
    marker)."""
    found: dict[str, list[str]] = collections.defaultdict(list)
    for pr in prs:
        if pr.state == "open" or pr.merged:
            for marker in parse_markers(pr.body):
                if marker.kind == RUN_MARKER_KIND:
                    found[marker.key].append(f"#{pr.number} from {pr.head}")
    return found


def stuck(state: State, run: RunRecord) -> str:
    """Why ``run`` (neither ended nor parked in review) is held once every fault closed:
    a step waiting on a human, or a credited candidate never published; empty if not."""
    if run.ended or (run.state == "parked" and run.park_reason == "review"):
        return ""
    waits = [w for w in human_waits(state) if w.run == run.run_id]
    if waits:
        return f"waits on a human: {waits[0].words} ({waits[0].error[:120]})"
    if run.publish is not None and run.published_sha != run.publish.seal_sha:
        return f"waits to publish {run.publish.seal_sha[:12]} ({run.state}/{run.park_reason})"
    return ""


def publish_refusals(home: Path) -> int:
    """``failed`` lines of the kernel's publish steps (``pr:`` keys) refused for rights."""
    count = 0
    for path in (home / "ledger").rglob("*.jsonl"):
        for event in _events(path):
            if isinstance(event, ev.Failed) and event.key.startswith("pr:") \
                    and event.cause == "rights":
                count += 1
    return count
