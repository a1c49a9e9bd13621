"""The dependency cache through real ticks and real pip, from a local index (no
network): doctor's view of it (cold, warm, stale, failed with pip's error), runs
waiting for it, a new lock a new key, and the old one pruned once unused."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from outerloop.config import Settings
from outerloop.deps import lock, store
from outerloop.doctor.base import Check
from outerloop.doctor.deps import check_deps
from outerloop.kernel.tick import run_tick
from tests.deps_support import DIST, LOCK, build_wheel, dep_target, pip_from
from tests.support import TARGET, forge, make_home, open_issue, state_of


def _doctor_until(settings: Settings, done: Callable[[Check], bool],
                  timeout_s: float = 60) -> Check:
    deadline = time.monotonic() + timeout_s
    while True:
        (line,) = check_deps(settings)
        if done(line):
            return line
        if time.monotonic() > deadline:
            raise AssertionError(f"doctor still says: {line.line()}")
        time.sleep(0.2)


def _relock(settings: Settings, text: str) -> str:
    local = forge(settings)
    branch = local.default_branch(TARGET)
    local.commit_files(TARGET, branch, {LOCK: text.encode()}, "relock",
                       local.branch_head(TARGET, branch))
    return lock.cache_key(text.encode())


@pytest.fixture
def home(tmp_path: Path) -> Settings:
    index = tmp_path / "index"
    build_wheel(index)
    return make_home(tmp_path, target_dir=dep_target(tmp_path, index),
                     extra_toml=pip_from(index))


def test_doctor_shows_the_cache_cold_warm_stale_then_failed_with_pips_error(
        home: Settings) -> None:
    first = lock.cache_key(f"{DIST}==1.0\n".encode())
    line = check_deps(home)[0]
    assert line.status == "warn" and f"(key {first}) cold: not built yet" in line.detail
    issue = open_issue(home, "Shorter tours", "Please try local search on tour.")
    run_tick(home)
    state = state_of(home)
    assert state.runs == {}  # nothing starts before its packages are there
    assert "dependency cache" in state.waiting[(TARGET, issue)][0]
    line = _doctor_until(home, lambda c: c.status == "ok")
    assert f"(key {first}) warm: 1 package(s), built " in line.detail

    second = _relock(home, "nosuch-pkg==1.0\n")
    line = check_deps(home)[0]
    assert line.status == "warn" and f"(key {second}) stale: built for an older lock " \
        f"({first})" in line.detail
    run_tick(home)
    line = _doctor_until(home, lambda c: c.status == "fail")
    assert f"(key {second}) failed (1 attempt(s)" in line.detail
    assert "No matching distribution found for nosuch-pkg==1.0" in line.detail
    assert "[deps] pip_args" in line.fix


def test_a_new_lock_is_a_new_key_and_the_old_cache_is_pruned_once_unused(
        home: Settings) -> None:
    first = lock.cache_key(f"{DIST}==1.0\n".encode())
    run_tick(home)
    _doctor_until(home, lambda c: c.status == "ok")
    index = home.home.parent / "index"
    build_wheel(index, version="2.0", source="VALUE = 8\n")
    second = _relock(home, f"{DIST}==2.0\n")
    run_tick(home)
    line = _doctor_until(home, lambda c: c.status == "ok" and second in c.detail)
    assert "warm: 1 package(s)" in line.detail
    site = store.key_dir(home.home, TARGET, second) / store.SITE
    assert (site / "oldep_probe" / "__init__.py").read_text() == "VALUE = 8\n"
    old = store.key_dir(home.home, TARGET, first)
    run_tick(home)
    assert old.is_dir()  # used within [deps] keep_days: kept
    long_ago = time.time() - 15 * 86400  # beyond the default keep_days (14)
    manifest = json.loads((old / store.MANIFEST).read_text())
    (old / store.MANIFEST).write_text(json.dumps({**manifest, "built_at": long_ago}))
    if (old / store.USED).exists():
        os.utime(old / store.USED, (long_ago, long_ago))
    run_tick(home)
    assert not old.exists()
    assert site.is_dir()


def test_a_started_warm_reads_warming_at_once_and_a_second_start_does_nothing(
        home: Settings) -> None:
    from outerloop.deps import warm

    text = f"{DIST}==1.0\n".encode()
    key = lock.cache_key(text)
    assert warm.start(home, TARGET, key, LOCK, text)
    assert store.key_state(home.home, TARGET, key).state in ("warming", "warm")
    assert not warm.start(home, TARGET, key, LOCK, text)  # it holds the key's lock
    _doctor_until(home, lambda c: c.status == "ok")
    assert not warm.start(home, TARGET, key, LOCK, text)  # warm: nothing to do
    with pytest.raises(Exception, match="no longer has key"):
        warm.start(home, TARGET, key, LOCK, text + b"# changed\n")
