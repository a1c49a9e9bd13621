"""The dependency cache's pure parts: the lock's rules and key, the deps lane, what a
key's files say, the read-only grant, the settings."""

from __future__ import annotations

import fcntl
import json
import os
from datetime import UTC, datetime
from pathlib import Path

import pytest

from outerloop.config import DepsSettings, Settings, TargetSettings
from outerloop.contract import contract_errors, load_contract_text
from outerloop.contract_scope import path_violation
from outerloop.deps import lock, store
from outerloop.forge.base import Association, Issue
from outerloop.kernel.actions import PrepareWorkspace, PruneDeps, RecordEvent, WarmDeps
from outerloop.kernel.lanes import admission, deps, intake
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations, TargetObservation
from outerloop.ledger import events as ev
from outerloop.ledger.state import State
from outerloop.sandbox import policy
from outerloop.sandbox.base import SandboxError

TARGET = "o/n"
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
CONTRACT_TEXT = """
benchmarks:
  - {name: tour, command: python e.py, metric: m, direction: min}
budgets: {gpu_hours_per_run: 0, runs_per_week: 2}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
dependencies: {requirements: locks/requirements.lock}
"""
CONTRACT = load_contract_text(CONTRACT_TEXT)
KEY = lock.cache_key(b"numpy==2.1.0\n")


# ---------------------------------------------------------------- the lock


def test_a_lock_of_pinned_names_with_hashes_markers_and_comments_may_be_built() -> None:
    text = (b"# via pip-compile\n"
            b"numpy==2.1.0 \\\n    --hash=sha256:" + b"a" * 64 + b"\n"
            b"Torch[cuda, extra]>=2.0,<3 ; python_version >= '3.10'  # pinned\n"
            b"\n"
            b"six===1.16.0\n")
    assert lock.lock_problems(text, "req.lock") == []


@pytest.mark.parametrize(("line", "said"), [
    ("-r other.txt", "'-r' is a pip option"),
    ("--index-url https://evil.example/simple", "'--index-url' is a pip option"),
    ("--extra-index-url=https://evil.example/simple", "is a pip option"),
    ("-e .", "'-e' is a pip option"),
    ("--find-links ./wheels", "is a pip option"),
    ("numpy==1.0 --trusted-host evil.example", "'--trusted-host' is a pip option"),
    ("evil @ https://evil.example/evil-1.0-py3-none-any.whl", "URLs and paths are refused"),
    ("git+https://evil.example/evil.git", "URLs and paths are refused"),
    ("./vendor/evil-1.0-py3-none-any.whl", "URLs and paths are refused"),
])
def test_a_lock_line_that_says_where_packages_come_from_is_refused_naming_the_line(
        line: str, said: str) -> None:
    (problem,) = lock.lock_problems(f"six==1.16.0\n{line}\n".encode(), "req.lock")
    assert problem.startswith("req.lock line 2: ") and said in problem


def test_a_lock_that_is_not_utf8_or_too_big_is_refused() -> None:
    assert "not UTF-8" in lock.lock_problems(b"six==1\xff\n", "r")[0]
    assert "at most" in lock.lock_problems(b"#" * (lock.MAX_LOCK_BYTES + 1), "r")[0]


def test_the_key_is_the_locks_bytes_and_the_interpreter_so_any_change_is_a_new_key() -> None:
    assert lock.cache_key(b"six==1.16.0\n") == lock.cache_key(b"six==1.16.0\n")
    assert lock.cache_key(b"six==1.16.0\n") != lock.cache_key(b"six==1.16.0 \n")
    assert lock.cache_key(b"six==1.16.0\n").endswith("-" + lock.python_tag())


def test_no_run_may_write_the_lock_whatever_the_scope_says() -> None:
    assert path_violation(CONTRACT, "locks/requirements.lock") == (
        "forbidden: the dependency lock locks/requirements.lock (jobs use what the kernel "
        "built from the base's)")
    assert path_violation(CONTRACT, "Locks/Requirements.LOCK").startswith("forbidden")
    assert path_violation(CONTRACT, "locks/other.lock") == "outside scope.allowed"


@pytest.mark.parametrize("scope", ["[locks/]", "[solver/, Locks/]", "[locks/requirements.lock/]"])
def test_a_contract_whose_scope_holds_its_lock_is_an_error_naming_the_field(scope: str) -> None:
    text = CONTRACT_TEXT.replace("scope: {allowed: [solver/]}", f"scope: {{allowed: {scope}}}")
    (error,) = contract_errors(text)
    assert error.startswith("dependencies.requirements: overlaps scope prefix ")
    assert "the dependency lock is never writable" in error


# ---------------------------------------------------------------- the lane


def _state(key: str, state: store.State, **fields: object) -> store.KeyState:
    return store.KeyState(key=key, state=state, **fields)  # type: ignore[arg-type]


def _view(current: store.KeyState | None, others: list[store.KeyState] | None = None,
          state: State | None = None, issues: list[Issue] | None = None) -> TickView:
    seen_deps = store.DepsObservation(lock="locks/requirements.lock",
                                      key=current.key if current else None,
                                      problem="" if current else "bad line",
                                      current=current, others=others or [])
    seen = TargetObservation(repo=TARGET, contract=CONTRACT, default_branch="main",
                             base_sha="a" * 40, issues=issues or [], deps=seen_deps)
    settings = Settings(home=Path("/nonexistent"), targets=[TargetSettings(repo=TARGET)])
    return TickView(state=state or State(), obs=Observations(now=NOW, targets={TARGET: seen}),
                    settings=settings)


def test_deps_plans_the_first_warm_when_the_current_key_is_cold() -> None:
    (warm,) = deps.plan(_view(_state(KEY, "cold")), [])
    assert warm == WarmDeps(target=TARGET, lock="locks/requirements.lock", base="a" * 40,
                            cache_key=KEY, attempt=1)
    assert warm.key == f"deps:{TARGET}:{KEY}:1"


def test_deps_plans_nothing_while_warm_or_warming_or_already_started() -> None:
    assert deps.plan(_view(_state(KEY, "warm")), []) == []
    assert deps.plan(_view(_state(KEY, "warming")), []) == []
    started = State()
    started.done_keys[f"deps:{TARGET}:{KEY}:1"] = ev.EffectResult(accepted=True)  # type: ignore[assignment]
    assert deps.plan(_view(_state(KEY, "cold"), state=started), []) == []


def test_deps_tries_a_failed_warm_again_only_after_its_backoff_as_the_next_attempt() -> None:
    now = NOW.timestamp()
    recent = _state(KEY, "failed", failures=2, failed_at=now - 60)
    assert deps.plan(_view(recent), []) == []  # the second failure waits 2 minutes
    due = _state(KEY, "failed", failures=2, failed_at=now - 121)
    (warm,) = deps.plan(_view(due), [])
    assert isinstance(warm, WarmDeps) and warm.attempt == 3
    assert deps.retry_after_s(20) == deps.RETRY_MAX_S


def test_deps_prunes_an_older_key_only_when_unused_for_keep_days() -> None:
    now = NOW.timestamp()
    fresh = _state("old1", "warm", last_used=now - 13 * 86400)
    stale = _state("old2", "warm", last_used=now - 15 * 86400)
    busy = _state("old3", "warming", last_used=now - 30 * 86400)
    actions = deps.plan(_view(_state(KEY, "warm"), [fresh, stale, busy]), [])
    assert actions == [PruneDeps(target=TARGET, cache_key="old2", since=int(now - 15 * 86400))]


def test_a_changed_lock_reads_stale_while_an_older_key_is_warm() -> None:
    view = _view(_state(KEY, "cold"), [_state("old1", "warm")])
    seen = view.obs.targets[TARGET].deps
    assert seen is not None and seen.state == "stale"
    assert "not built yet for the changed lock" in seen.why_not_warm()


def _issue() -> Issue:
    return Issue(number=1, title="idea", body="tour please", author="maintainer",
                 author_association=Association.OWNER, state="open", created_at=NOW,
                 updated_at=NOW)


@pytest.mark.parametrize("state", ["cold", "warming", "failed", "invalid"])
def test_no_issue_is_claimed_nor_run_admitted_until_the_cache_is_warm(state: str) -> None:
    current = None if state == "invalid" else _state(KEY, state)  # type: ignore[arg-type]
    view = _view(current, issues=[_issue()])
    planned = intake.plan(view, [])
    assert not any(isinstance(a, RecordEvent) and isinstance(a.event, ev.RunQueued)
                   for a in planned)
    (waits,) = [a.event for a in planned if isinstance(a, RecordEvent)]
    assert isinstance(waits, ev.IssueWaits) and "dependenc" in waits.reason
    queued = RecordEvent(target=TARGET, run="tour-1-agent-01", event=ev.RunQueued(
        target=TARGET, benchmark="tour", agent="agent-01", issue=1))
    assert not [a for a in admission.plan(view, [queued]) if isinstance(a, PrepareWorkspace)]


def test_an_issue_is_claimed_and_its_run_admitted_once_the_cache_is_warm() -> None:
    view = _view(_state(KEY, "warm"), issues=[_issue()])
    planned = intake.plan(view, [])
    assert any(isinstance(a, RecordEvent) and isinstance(a.event, ev.RunQueued)
               for a in planned)
    assert [a for a in admission.plan(view, planned) if isinstance(a, PrepareWorkspace)]


# ---------------------------------------------------------------- a key's files


def test_a_key_reads_warming_with_its_last_line_of_output_while_its_lock_is_held(
        tmp_path: Path) -> None:
    where = store.key_dir(tmp_path, TARGET, KEY)
    where.mkdir(parents=True)
    (where / store.WARM_LOG).write_text("Looking in links: /x\nProcessing ./numpy.whl\n")
    fd = os.open(where / store.WARM_LOCK, os.O_RDWR | os.O_CREAT)
    fcntl.flock(fd, fcntl.LOCK_EX)
    try:
        seen = store.key_state(tmp_path, TARGET, KEY)
        assert (seen.state, seen.detail) == ("warming", "Processing ./numpy.whl")
    finally:
        os.close(fd)
    assert store.key_state(tmp_path, TARGET, KEY).state == "cold"  # the warm died
    (where / store.FAILED).write_text(json.dumps({"at": 5.0, "failures": 2, "error": "E"}))
    seen = store.key_state(tmp_path, TARGET, KEY)
    assert (seen.state, seen.failures, seen.detail) == ("failed", 2, "E")
    assert store.site_if_warm(tmp_path, TARGET, KEY) is None
    (where / store.SITE).mkdir()
    (where / store.MANIFEST).write_text(json.dumps({"built_at": 9.0, "packages": ["a"]}))
    assert store.key_state(tmp_path, TARGET, KEY).state == "warm"
    assert store.site_if_warm(tmp_path, TARGET, KEY) == where / store.SITE
    assert (where / store.USED).exists()


def test_the_cache_grant_is_read_only_and_never_the_home_or_an_ancestor(tmp_path: Path) -> None:
    home = tmp_path / "home"
    site = home / "deps" / "o__n" / KEY / "site"
    site.mkdir(parents=True)
    grants = policy.grants([], [], [home / "ws"], home, own_read_only=[site])
    assert str(site) in grants.read_only and str(site) not in grants.read_write
    for wrong in (home, tmp_path):
        with pytest.raises(SandboxError, match="is the home"):
            policy.grants([], [], [], home, own_read_only=[wrong])


def test_pip_args_that_would_change_how_the_cache_is_built_are_refused() -> None:
    assert DepsSettings(pip_args=["--no-index", "--find-links", "/srv/wheels"])
    for arg in ("--target=/tmp/x", "--no-binary", "-r", "--user", "-e"):
        with pytest.raises(ValueError, match="is set by outerloop"):
            DepsSettings(pip_args=[arg])
