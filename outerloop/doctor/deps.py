"""Each target's dependency cache (``outerloop/deps/``): warm, warming, cold, stale, or
failed with pip's error. Read for the lock on the default branch now, as the next tick
would; doctor builds nothing (the tick does, on its host)."""

from __future__ import annotations

from outerloop.clock import stamp_seconds
from outerloop.config import Settings
from outerloop.deps.store import DepsObservation
from outerloop.doctor.base import Check, fail, ok, warn

NAME = "deps"
WAIT = "runs of this target start once it is warm"


def check_deps(settings: Settings) -> list[Check]:
    from outerloop.doctor.contracts import read_contracts

    wanted = [r for r in read_contracts(settings)
              if r.contract is not None and r.contract.dependencies is not None]
    if not wanted:
        return [ok(NAME, "no target's contract names a dependency lock")]
    checks = []
    for read in wanted:
        assert read.contract is not None and read.contract.dependencies is not None
        checks.append(_check_target(settings, read.repo, read.head or "",
                                    read.contract.dependencies.requirements))
    return checks


def _check_target(settings: Settings, repo: str, head: str, lock_path: str) -> Check:
    from outerloop.deps import lock, store
    from outerloop.errors import OuterloopError
    from outerloop.forge.factory import make_forge

    try:
        raw = make_forge(settings).read_file(repo, lock_path, head)
    except OuterloopError as exc:
        return fail(NAME, f"{repo}: {lock_path} not read ({exc})", "check the forge above")
    if raw is None:
        return fail(NAME, f"{repo}: {lock_path} is not on the default branch",
                    f"commit the lock, or remove dependencies from the contract; {WAIT}")
    problems = lock.lock_problems(raw, lock_path)
    if problems:
        return fail(NAME, f"{repo}: {'; '.join(problems)}", f"fix the lock on the default "
                    f"branch; {WAIT}")
    seen = store.observation(settings.home, repo, lock_path, lock.cache_key(raw))
    return _state_line(repo, seen)


def _state_line(repo: str, seen: DepsObservation) -> Check:
    current = seen.current
    assert current is not None
    what = f"{repo}: {seen.lock} (key {seen.key})"
    build = ("the next tick builds it on the tick host, whose pip must reach the package "
             "index ([deps] pip_args, pip.conf)")
    match seen.state:
        case "warm":
            return ok(NAME, f"{what} warm: {current.detail}, built "
                            f"{stamp_seconds(current.built_at)}")
        case "warming":
            return warn(NAME, f"{what} warming: {current.detail}", f"wait; {WAIT}")
        case "stale":
            older = ", ".join(o.key for o in seen.others if o.state == "warm")
            return warn(NAME, f"{what} stale: built for an older lock ({older}), not for "
                              f"this one", f"{build}; {WAIT}")
        case "failed":
            return fail(NAME, f"{what} failed ({current.failures} attempt(s), last "
                              f"{stamp_seconds(current.failed_at)}): {current.detail}",
                        "correct the lock or [deps] pip_args; the tick tries again with a "
                        f"backoff of up to an hour; {WAIT}")
        case _:
            return warn(NAME, f"{what} cold: not built yet", f"{build}; {WAIT}")
