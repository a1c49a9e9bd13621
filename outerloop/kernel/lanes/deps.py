"""Deps: keep each target's dependency cache warm for the lock at its base, and prune
the caches of older locks.

A target whose contract names a lock (``dependencies.requirements``) gets a
``WarmDeps`` when the current key is cold (never built, or built only for an older
lock: stale); a failed warm is tried again after a backoff (1 min, doubling, at most
an hour), as the next attempt of that key; a warming key is left alone. Intake and
admission start no run of the target until its key is warm (``waits``). A key of an
older lock that no job used for ``[deps] keep_days`` is pruned.
"""

from __future__ import annotations

from outerloop.deps.store import DepsObservation
from outerloop.kernel.actions import Action, PruneDeps, WarmDeps
from outerloop.kernel.lanes.common import step_due
from outerloop.kernel.lanes.view import TickView
from outerloop.retry_rule import backoff_s

RETRY_FIRST_S = 60.0
RETRY_MAX_S = 3600.0
DAY_S = 86400.0


def retry_after_s(failures: int) -> float:
    """How long after its ``failures``-th failure a key's warm is tried again."""
    return backoff_s(max(1, failures), RETRY_FIRST_S, RETRY_MAX_S)


def waits(view: TickView, repo: str) -> str | None:
    """Why no run of ``repo`` may start for its dependency cache, or None."""
    seen = view.obs.targets.get(repo)
    deps = seen.deps if seen is not None else None
    if seen is None or seen.contract is None or seen.contract.dependencies is None:
        return None
    if deps is None:
        return "its dependency cache was not observed this tick"
    return None if deps.warm else deps.why_not_warm()


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    actions: list[Action] = []
    for target in view.settings.targets:
        seen = view.obs.targets.get(target.repo)
        if seen is None or seen.error or seen.deps is None or seen.base_sha is None:
            continue
        warm = _warm(view, target.repo, seen.deps, seen.base_sha)
        if warm is not None and step_due(view, warm):
            actions.append(warm)
        actions.extend(_prunes(view, target.repo, seen.deps))
    return actions


def _warm(view: TickView, repo: str, deps: DepsObservation, base: str) -> WarmDeps | None:
    current = deps.current
    if current is None or deps.key is None or current.state in ("warm", "warming"):
        return None
    if current.state == "failed":
        due = current.failed_at + retry_after_s(current.failures)
        if view.obs.now.timestamp() < due:
            return None
    return WarmDeps(target=repo, lock=deps.lock, base=base, cache_key=deps.key,
                    attempt=current.failures + 1)


def _prunes(view: TickView, repo: str, deps: DepsObservation) -> list[Action]:
    keep_s = view.settings.deps.keep_days * DAY_S
    now = view.obs.now.timestamp()
    out: list[Action] = []
    for old in deps.others:
        if old.state == "warming" or now - old.last_used < keep_s:
            continue
        prune = PruneDeps(target=repo, cache_key=old.key, since=int(old.last_used))
        if step_due(view, prune):
            out.append(prune)
    return out
