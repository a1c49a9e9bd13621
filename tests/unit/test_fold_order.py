"""The fold's order does not depend on wall clocks: a cold rebuild equals the warm
(incremental, cached) state, however skewed the writers' clocks are."""

from __future__ import annotations

import dataclasses
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from outerloop.compute.base import JobSpec
from outerloop.kernel.actions import SubmitJob, intent_for
from outerloop.ledger import events as ev
from outerloop.ledger.book import (
    LedgerWriter,
    LogicalClock,
    rebuild,
    run_file,
    run_files,
    tick_file,
)
from outerloop.ledger.events import EffectResult
from outerloop.ledger.state import State

TARGET = "owner/name"
RUN = "tour-20261130T000000-agent-01"
T0 = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)


def _stamp(when: datetime) -> str:
    return when.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _comparable(state: State) -> dict[str, Any]:
    data = dataclasses.asdict(state)
    data.pop("fresh")
    data.pop("heads")  # what this rebuild read, like ``fresh``
    return data


def _queue(writer: LedgerWriter) -> None:
    writer.append(ev.RunQueued(run=RUN, target=TARGET, benchmark="tour", agent="agent-01",
                               issue=1, hypothesis="h"))


def test_cold_rebuild_keeps_a_runs_events_when_its_host_clock_is_an_hour_behind(
        tmp_path: Path) -> None:
    """Lines as a compute node an hour behind the login node writes them (dated before
    the ``run_queued`` the tick wrote): the warm fold saw the run first; so must a cold
    fold (``cache/`` is documented as safe to delete)."""
    _queue(LedgerWriter(tick_file(tmp_path, TARGET)))
    rebuild(tmp_path)
    behind = T0 - timedelta(hours=1)
    lines = [{"v": 1, "seq": 1, "at": _stamp(behind), "kind": "leg_started", "run": RUN,
              "leg": 1, "role": "climb"},
             {"v": 1, "seq": 2, "at": _stamp(behind + timedelta(seconds=5)),
              "kind": "publish_ready", "run": RUN, "seal_sha": "a" * 40, "branch": "b",
              "title": "t", "body": "b"}]
    path = run_file(tmp_path, TARGET, RUN)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    warm = rebuild(tmp_path)
    cold = rebuild(tmp_path, use_cache=False, save_cache=False)
    assert warm.runs[RUN].legs == 1 and warm.runs[RUN].park_reason == "publish"
    assert _comparable(cold) == _comparable(warm)


def test_writers_stamp_above_what_they_folded_when_their_clock_is_behind(
        tmp_path: Path) -> None:
    tick = LedgerWriter(tick_file(tmp_path, TARGET))
    _queue(tick)
    state = rebuild(tmp_path, files=run_files(tmp_path, TARGET, RUN))
    job = LedgerWriter(run_file(tmp_path, TARGET, RUN), LogicalClock(state.clock),
                       now=lambda: _stamp(T0 - timedelta(hours=1)))
    written = job.append(ev.LegStarted(run=RUN, leg=1, role="climb"))
    assert written.lc > state.clock >= 1


# -- property: any interleaving, any skew ----------------------------------------------

TICK_ACTIONS = ("feedback", "job_ended", "note", "run_ended", "submit", "refold")
JOB_ACTIONS = ("leg_started", "leg_ended", "parked", "publish_ready", "outbox",
               "delivered", "submit", "run_ended", "refold")


class _World:
    """A tick and a run's job writing one ledger, each with its own skewed wall clock
    and its own (possibly stale) view of what was written."""

    def __init__(self, home: Path, tick_skew: int, job_skew: int) -> None:
        self.home = home
        self.step = 0
        self.tick = LedgerWriter(tick_file(home, TARGET), LogicalClock(),
                                 now=lambda: self._now(tick_skew))
        self.job = LedgerWriter(run_file(home, TARGET, RUN), LogicalClock(),
                                now=lambda: self._now(job_skew))
        self.leg = 0
        self.jobs: list[str] = []

    def _now(self, skew_s: int) -> str:
        return _stamp(T0 + timedelta(seconds=self.step + skew_s))

    def refold_tick(self) -> None:
        self.tick.clock.observe(rebuild(self.home).clock)

    def refold_job(self) -> None:
        state = rebuild(self.home, files=run_files(self.home, TARGET, RUN))
        self.job.clock.observe(state.clock)

    def _submit(self, writer: LedgerWriter, purpose: str) -> None:
        job_id = str(10_000_000 + self.step)
        name = f"ol-{purpose}-{self.step}"
        spec = JobSpec(name=name, command="true", workdir=str(self.home), log_dir=str(self.home),
                       time_minutes=5)
        writer.append(intent_for(SubmitJob(target=TARGET, run=RUN, purpose=purpose, spec=spec)))
        writer.append(ev.Done(run=RUN, key=f"job:{name}", result=EffectResult(job_id=job_id)))
        self.jobs.append(job_id)

    def act(self, actor: str, action: str) -> None:
        self.step += 1
        n = self.step
        if actor == "tick":
            w = self.tick
            if action == "refold":
                self.refold_tick()
            elif action == "feedback":
                w.append(ev.Feedback(run=RUN, source_id=f"c{n}", author="m", text="why?"))
            elif action == "job_ended" and self.jobs:
                w.append(ev.JobEnded(run=RUN, job_id=self.jobs[n % len(self.jobs)],
                                     state="completed", exit_code=0, elapsed_s=n))
            elif action == "note":
                w.append(ev.Note(level="info", text=f"note {n}"))
            elif action == "run_ended":
                w.append(ev.RunEnded(run=RUN, ending="merged", by="followup"))
            elif action == "submit":
                self._submit(w, "wake")
            return
        w = self.job
        if action == "refold":
            self.refold_job()
        elif action == "leg_started":
            self.leg += 1
            w.append(ev.LegStarted(run=RUN, leg=self.leg, role="wake"))
        elif action == "leg_ended":
            w.append(ev.LegEnded(run=RUN, leg=self.leg, stop_reason="end_turn",
                                 cost_usd=0.25, session_id=f"s{n}", progress=n % 2 == 0,
                                 request={"verb": "sleep"} if n % 3 else None, error=f"e{n}"))
        elif action == "parked":
            w.append(ev.Parked(run=RUN, reason="jobs", job_ids=list(self.jobs[-2:]),
                               wake_job=self.jobs[-1] if self.jobs else None, retry=n % 4 == 0))
        elif action == "publish_ready":
            w.append(ev.PublishReady(run=RUN, seal_sha=f"{n:040d}", branch="b", title="t",
                                     body="b"))
        elif action == "outbox":
            w.append(ev.Outbox(run=RUN, key=f"m{n}", text="hello"))
        elif action == "delivered":
            w.append(ev.FeedbackDelivered(run=RUN, source_ids=[f"c{n - 1}"]))
        elif action == "submit":
            self._submit(w, "launch")
        elif action == "run_ended":
            w.append(ev.RunEnded(run=RUN, ending="negative-result", by="kernel"))


STEPS = st.lists(st.one_of(
    st.tuples(st.just("tick"), st.sampled_from(TICK_ACTIONS), st.booleans()),
    st.tuples(st.just("job"), st.sampled_from(JOB_ACTIONS), st.booleans()),
), min_size=1, max_size=40)
SKEW = st.integers(min_value=-3600, max_value=3600)


@settings(max_examples=100, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=STEPS, tick_skew=SKEW, job_skew=SKEW)
def test_cold_rebuild_equals_warm_state_when_writers_clocks_are_skewed(
        tmp_path_factory: Any, steps: list[tuple[str, str, bool]], tick_skew: int,
        job_skew: int) -> None:
    home = tmp_path_factory.mktemp("home")
    world = _World(home, tick_skew, job_skew)
    world.refold_tick()
    _queue(world.tick)
    world.refold_job()
    for actor, action, warm_rebuild in steps:
        world.act(actor, action)
        if warm_rebuild:
            rebuild(home)  # the tick's cache folds what is there now
    warm = rebuild(home)
    cold = rebuild(home, use_cache=False, save_cache=False)
    assert _comparable(cold) == _comparable(warm)
