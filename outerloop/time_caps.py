"""The operator's time caps against what a target's jobs need (issue 51): one rule,
decided from the settings and the contract alone, before any job is submitted.

A ``time_minutes`` cap in ``[compute.session]`` or ``[compute.eval]`` (or ``[compute]``,
which both fall back to) lowers every job of that kind to it. A cap below what the job
needs does not make the benchmark slow or the agent wrong: every such job would end
``TIMEOUT``, and the run would be recorded as a research outcome (an ``aborted`` base,
a ``negative-result``) it never earned. So a cap below need is a *deployment problem*:
the run's job refuses to go on (``errors.DeploymentError``, before the first leg and
before each eval pair is submitted), and the kernel makes the run wait for the
operator's fix with one line naming the setting and the figure it needs
(``kernel/lanes/machine.py``); ``doctor`` says the same line before any run starts.

- an eval pair job needs ``pair_minutes`` of its benchmark's (clamped) ``eval_minutes``:
  both sides, doubled with a trusted scorer, plus slack;
- a climb or wake job needs at least ``SESSION_JOB_FLOOR_MINUTES`` (the contract's own
  floor for those jobs, ``limits.ATTEMPT_JOB_MINUTES_FLOOR``): a cap between that floor
  and the contract's ``attempt_job_minutes`` shortens the session instead
  (``limits.operator_ceilings``), as a contract asking for less would.

A benchmark genuinely too slow for the time it asks (its ``eval_minutes``) is not this:
its pair job got what the contract asked for and still ran out, which is the
benchmark's to fix. Pure.
"""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.contract import Contract
from outerloop.kinds import JobKind
from outerloop.limits import ATTEMPT_JOB_MINUTES_FLOOR, target_limits

SESSION_JOB_FLOOR_MINUTES = ATTEMPT_JOB_MINUTES_FLOOR
"""The least a climb or wake job may be capped to: a session and its recording."""


def pair_minutes(eval_minutes: int, scored: bool, sides: int = 2) -> int:
    """A pair job's time limit for sides of ``eval_minutes`` each (doubled when a
    trusted scorer runs after the command): what ``doctor`` asks ``sbatch`` for too."""
    return eval_minutes * (2 if scored else 1) * sides + 2


def cap_setting(settings: Settings, kind: JobKind) -> tuple[str, int] | None:
    """The setting that caps ``kind``'s jobs and its value (``[compute.<kind>]``'s own,
    else ``[compute]``'s), or None when nothing caps them."""
    own = settings.compute.time_cap(kind)
    if own is None:
        return None
    section = kind if getattr(settings.compute, kind).time_minutes is not None else ""
    return (f"[compute.{section}] time_minutes" if section else "[compute] time_minutes",
            own)


def session_shortfall(settings: Settings) -> str | None:
    """Why the session cap is below the floor of a climb or wake job, with the fix; None
    when it is not."""
    cap = cap_setting(settings, "session")
    if cap is None or cap[1] >= SESSION_JOB_FLOOR_MINUTES:
        return None
    name, minutes = cap
    return (f"{name} = {minutes} is below the {SESSION_JOB_FLOOR_MINUTES}-minute floor of "
            f"a climb or wake job (an agent session and its recording): every such job "
            f"would time out; fix: raise {name} to at least {SESSION_JOB_FLOOR_MINUTES} "
            f"in outerloop.toml, or remove it")


def eval_shortfall(settings: Settings, repo: str, index: int, benchmark: str,
                   eval_minutes: int, need: int) -> str | None:
    """Why the eval cap is below what benchmark ``benchmark`` (``benchmarks[index]`` of
    ``repo``'s contract, ``eval_minutes`` a side) needs for its pair job (``need``
    minutes), with the fix; None when it is not."""
    cap = cap_setting(settings, "eval")
    if cap is None or cap[1] >= need:
        return None
    name, minutes = cap
    return (f"{name} = {minutes} is below the {need} minutes benchmark {benchmark}'s eval "
            f"pair job needs (eval_minutes {eval_minutes} a side in {repo}'s contract): "
            f"every pair would time out, which says nothing of the benchmark; fix: raise "
            f"{name} to at least {need} in outerloop.toml (or remove it), or lower "
            f"benchmarks[{index}].eval_minutes in {repo}'s .outerloop.yaml")


def shortfalls(settings: Settings, repo: str, contract: Contract) -> list[str]:
    """Every time cap of the settings below what ``repo``'s jobs need: the session's,
    then each benchmark's eval pair job."""
    found = [line for line in (session_shortfall(settings),) if line]
    limits = target_limits(contract, settings)
    for index, bench in enumerate(contract.benchmarks):
        minutes = limits.for_benchmark(bench.name).eval_minutes
        line = eval_shortfall(settings, repo, index, bench.name, minutes,
                              pair_minutes(minutes, bench.score is not None))
        if line:
            found.append(line)
    return found
