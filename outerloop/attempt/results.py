"""What came back from a park's jobs, in the shapes the renderers take."""

from __future__ import annotations

from pathlib import Path

from outerloop.attempt.context import RunContext
from outerloop.attempt.gate import read_exit_code
from outerloop.compute.base import JobObservation, JobState
from outerloop.errors import OuterloopError
from outerloop.infra import INFRASTRUCTURE_STATES, INTERRUPTED_NOTE
from outerloop.ledger.events import ExperimentRow, Launched
from outerloop.ledger.state import JobRecord
from outerloop.run.render import LaunchResult
from outerloop.text import cap

TAIL_CHARS = 8000
TAIL_READ_BYTES = 64 * 1024


def tail(path: Path, limit: int = TAIL_CHARS) -> str:
    try:
        with path.open("rb") as handle:
            size = path.stat().st_size
            handle.seek(max(0, size - TAIL_READ_BYTES))
            text = handle.read().decode("utf-8", "replace")
    except OSError:
        return ""
    return cap(text, limit, keep="tail")


def last_line(path: Path) -> str:
    return last_line_of(tail(path, 4000))


def last_line_of(text: str) -> str:
    """The last non-blank line of ``text``, at most 200 characters."""
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1][:200] if lines else ""


def _task_state(seen: JobObservation | None, task: int | None, log_dir: Path) -> JobState:
    if seen is None:
        return JobState.UNKNOWN
    state = seen.tasks[task] if task is not None and task in seen.tasks else seen.state
    if state == JobState.GONE and (log_dir / "finished").exists():
        return JobState.COMPLETED if read_exit_code(log_dir) == 0 else JobState.FAILED
    return state


def launch_results(ctx: RunContext, launches: list[Launched],
                   seen: dict[str, JobObservation]) -> list[LaunchResult]:
    """One result per launch (per task for arrays), with artifacts copied into the
    channel's ``results/<launch>/[<i>/]``."""
    from outerloop.attempt.artifacts import copy_artifacts, results_rel

    results: list[LaunchResult] = []
    for launch in launches:
        job_id = launch.job_id
        job_name = launch.job_name or launch.name
        array = launch.array
        tasks: list[int | None] = list(range(array)) if array else [None]
        for task in tasks:
            log_dir = ctx.paths.job_dir(job_name)
            log_dir = log_dir if task is None else log_dir / str(task)
            tree = ctx.paths.tree(job_name, task)
            notes = copy_artifacts(tree, list(launch.artifacts), ctx.paths.ws,
                                   results_rel(launch.name, task))
            state = _task_state(seen.get(job_id), task, log_dir)
            interrupted = state in INFRASTRUCTURE_STATES
            if interrupted:
                notes.append(INTERRUPTED_NOTE)
            results.append(LaunchResult(
                sleep=launch.sleep, name=launch.name, task=task,
                why=launch.why, job_id=job_id, state=state,
                exit_code=read_exit_code(log_dir),
                elapsed_s=_elapsed(seen.get(job_id), ctx.state.jobs.get(job_id), task),
                stdout_tail=tail(log_dir / "stdout"), stderr_tail=tail(log_dir / "stderr"),
                artifacts=list(launch.artifacts), notes=notes,
                interrupted=interrupted,
            ))
    return results


def _elapsed(seen: JobObservation | None, job: JobRecord | None, task: int | None) -> int:
    """The launch's (or, for an array, the task's own) elapsed seconds: from the
    observation, else from the ledger's record of the job's end; 0 when neither has it.
    Never the array's sum for one task (that is the compute the array used)."""
    if task is None:
        return seen.elapsed_s if seen is not None else (job.elapsed_s if job else 0)
    if seen is not None and task in seen.task_elapsed_s:
        return seen.task_elapsed_s[task]
    return job.task_elapsed_s.get(task, 0) if job is not None else 0


def _elapsed_cell(total: int, tasks: dict[int, int]) -> str:
    """The experiments table's elapsed: one figure, or an array's, task by task."""
    if not tasks:
        return f"{total}s"
    return "per task: " + ", ".join(f"{tasks[k]}s" for k in sorted(tasks))


def experiment_rows(ctx: RunContext) -> list[ExperimentRow]:
    """The PR's experiments table: every launch of the run, with how it ended.

    Launch jobs the ledger does not yet know as ended are observed (one bulk call)."""
    unknown = [x.job_id for x in ctx.run.launches
               if not (j := ctx.state.jobs.get(x.job_id)) or not j.terminal]
    seen: dict[str, JobObservation] = {}
    if unknown:
        try:
            seen = ctx.executor.effects.compute().observe(unknown)
        except OuterloopError:
            seen = {}
    rows: list[ExperimentRow] = []
    for launch in ctx.run.launches:
        job_id = launch.job_id
        job = ctx.state.jobs.get(job_id)
        log_dir = ctx.paths.job_dir(launch.job_name or launch.name)
        if launch.array:
            log_dir = log_dir / "0"
        if job_id in seen:
            ended, elapsed = seen[job_id].state, seen[job_id].elapsed_s
            tasks = seen[job_id].task_elapsed_s
        elif job is not None:
            ended, elapsed, tasks = job.state, job.elapsed_s, job.task_elapsed_s
        else:
            ended, elapsed, tasks = JobState.UNKNOWN, 0, {}
        rows.append(ExperimentRow(
            sleep=launch.sleep, launch=launch.name, why=launch.why, job=job_id, ended=ended,
            elapsed=_elapsed_cell(elapsed, tasks if launch.array else {}),
            last_line=last_line(log_dir / "stdout"),
        ))
    return rows
