"""Live answers to the agent's ``queue`` and ``history``, while its session runs.

The agent's tool writes a request, ``.outerloop/ask/<verb>.json`` holding a fresh
nonce, and waits (``--wait``, bounded) for ``.outerloop/answers/<verb>.json`` carrying
the same nonce. A watcher thread in the leg's own job answers within a second with
current data: the ledger folded now and the scheduler asked now.

The request is untrusted: only its name (the verb, from a fixed set) and a nonce of
hex digits are read from it, at most ``MAX_REQUEST_BYTES``; the answer is written by
the kernel through a fresh temp file. The agent owns ``.outerloop/`` all the while the
watcher polls (four times a second), so every read, removal and write goes through
``sandbox/beneath.py``: an ``ask/`` or ``answers/`` swapped for a symlink mid-session
is removed, never followed. Nothing the agent
writes becomes a fact: the answer is computed from the ledger and the scheduler.

- ``queue``: every live kernel job of the run's target (all runs), with its run,
  agent, launch, state, the scheduler's pending reason, elapsed time, limit and
  GPUs; plus the lane load (nodes per state from ``sinfo``) under Slurm, and the
  target's live runs with the issue each is trying (so a slot on a wide issue sees what
  its siblings are at).
- ``history``: the target's ended runs, newest first: ending, verdicts, PR, and what
  each tried (its report's title line, as the brief's "What earlier runs tried").

A contract that keeps sibling runs out of sight (``channels.siblings: false``) gets
answers about its own run only.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any

from outerloop.agent_tool import layout
from outerloop.attempt import channel
from outerloop.clock import now_stamp
from outerloop.config import Settings
from outerloop.ledger.book import rebuild
from outerloop.ledger.state import State
from outerloop.text import one_line

VERBS = ("queue", "history")
MAX_REQUEST_BYTES = 4096
NONCE_RE = re.compile(r"^[0-9a-f]{8,64}$")
POLL_S = 0.25
MAX_HISTORY_RUNS = 20


def _reason(text: str | None) -> str:
    """The scheduler's pending reason; squeue's "None" (running jobs) says nothing."""
    return "" if text in (None, "None", "(null)") else str(text)


def _job_row(state: State, job_id: str, seen: dict[str, Any]) -> dict[str, Any]:
    job = state.jobs[job_id]
    run = state.runs.get(job.run or "")
    row = seen.get(job_id)
    return {
        "job": job_id, "name": job.name, "purpose": job.purpose, "launch": job.launch,
        "run": job.run, "agent": run.agent if run else None,
        "benchmark": run.benchmark if run else None,
        "state": row.state.value if row is not None else job.state,
        "reason": _reason(row.reason) if row is not None else "",
        "elapsed": row.elapsed if row is not None else "",
        "limit": row.limit if row is not None else "",
        "gpus": job.gpus, "submitted": job.submitted_at,
    }


def queue_answer(settings: Settings, target: str, only_run: str | None = None) -> dict[str, Any]:
    """The target's whole queue now (see the module doc); only ``only_run``'s jobs when
    the contract keeps sibling runs out of sight (``channels.siblings: false``)."""
    from outerloop.compute.factory import make_compute
    from outerloop.errors import ComputeError

    state = rebuild(settings.home, save_cache=False)
    ours = [j.job_id for j in state.live_jobs() if j.target == target
            and (only_run is None or j.run == only_run)]
    compute = make_compute(settings)
    note = ""
    seen: dict[str, Any] = {}
    ended: dict[str, str] = {}
    try:
        for listed in compute.queue():
            seen[listed.job_id] = listed
            seen.setdefault(listed.job_id.split("_", 1)[0], listed)
        missing = [job_id for job_id in ours if job_id not in seen]
        if missing:  # left the queue since the ledger last looked: how did they end?
            ended = {k: v.state.value for k, v in compute.observe(missing).items()}
    except ComputeError as exc:
        note = f"the scheduler could not be asked ({exc}); states are the ledger's"
    jobs = []
    for job_id in ours:
        row = _job_row(state, job_id, seen)
        if job_id in ended:
            row["state"] = ended[job_id]
        jobs.append(row)
    jobs.sort(key=lambda r: (r["submitted"], r["job"]))
    lanes: list[dict[str, Any]] = []
    partitions = {settings.compute.partition} if settings.compute.partition else {
        row.partition for row in seen.values() if row.partition}
    for partition in sorted(p for p in partitions if p):
        try:
            nodes = compute.lane_load(partition)
        except ComputeError as exc:
            lanes.append({"partition": partition, "error": str(exc)[:300]})
            continue
        if nodes is not None:
            lanes.append({"partition": partition, "nodes": nodes})
    trying = [{"run": r.run_id, "agent": r.agent, "issue": r.issue,
               "trying": one_line(r.issue_title, 160), "state": r.state}
              for r in state.active_runs(target) if only_run is None or r.run_id == only_run]
    return {"jobs": jobs, "lanes": lanes, "note": note, "runs": trying[:MAX_HISTORY_RUNS]}


def history_answer(settings: Settings, target: str, only_run: str | None = None) \
        -> dict[str, Any]:
    """The target's ended runs, newest first (none of the others' with ``only_run``),
    from the runs' recent window (``History.recent``) and their count from the tally:
    never every past run."""
    from outerloop.ledger.history import History

    state = rebuild(settings.home, save_cache=False)
    if only_run is not None:
        one = state.runs.get(only_run)
        ended = [one] if one is not None and one.target == target and one.ended else []
        total = len(ended)
    else:
        history = History.of(state.runs, target)
        ended = history.newest_ended(MAX_HISTORY_RUNS)
        total = history.ended_total()
    runs = [{
        "run": r.run_id, "agent": r.agent, "benchmark": r.benchmark, "ending": r.ending,
        "ended": r.ended_at, "pr": r.pr_number, "legs": r.legs,
        "tried": r.takeaway or one_line(r.end_reason, 160),
        "verdicts": [{"verdict": v.verdict, "baseline": v.baseline,
                      "candidate": v.candidate, "delta": v.delta}
                     for v in r.verdicts][-3:],
    } for r in ended[:MAX_HISTORY_RUNS]]
    return {"runs": runs, "ended_total": total}


Answerer = Callable[[str], dict[str, Any]]


class Watcher:
    """Answers ``ask/`` requests in ``ws/.outerloop`` until stopped (a context manager
    around the session). Never raises into the leg: a failed answer says so."""

    def __init__(self, ws: Path, answer: Answerer) -> None:
        self.ws = ws
        self.answer = answer
        self.answered = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="outerloop-live",
                                        daemon=True)

    def __enter__(self) -> Watcher:
        for name in (layout.ASK_DIR, layout.ANSWERS_DIR):
            channel.ensure_dir(self.ws, name)
        self._thread.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(POLL_S):
            for verb in VERBS:
                try:
                    self.poll(verb)
                except Exception:  # a view is never worth the leg
                    continue

    def poll(self, verb: str) -> bool:
        """Answer ``verb`` if asked; True when an answer was written."""
        ask = layout.rel(layout.ask_name(verb))
        try:
            raw = channel._read_once(self.ws, ask, MAX_REQUEST_BYTES)
        except (channel.ChannelError, OSError):
            return False
        if raw is None:
            return False
        try:
            nonce = str(json.loads(raw.decode("utf-8")).get("nonce", ""))
        except (ValueError, UnicodeDecodeError, AttributeError):
            nonce = ""
        if not NONCE_RE.match(nonce):
            return False
        doc: dict[str, Any] = {"nonce": nonce, "verb": verb, "at": now_stamp()}
        try:
            doc["data"] = self.answer(verb)
        except Exception as exc:  # the agent hears that it failed, and why
            doc["error"] = f"the kernel could not answer {verb}: {type(exc).__name__}: {exc}"
        channel.ensure_dir(self.ws, layout.ANSWERS_DIR)
        channel.write_json(self.ws, layout.rel(layout.answer_name(verb)), doc)
        self.answered += 1
        return True


def watcher_for(settings: Settings, ws: Path, target: str,
                only_run: str | None = None) -> Watcher:
    """A watcher answering about ``target``'s runs (only ``only_run`` when given)."""
    def answer(verb: str) -> dict[str, Any]:
        if verb == "queue":
            return queue_answer(settings, target, only_run)
        return history_answer(settings, target, only_run)

    return Watcher(ws, answer)

