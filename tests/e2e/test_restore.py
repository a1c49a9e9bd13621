"""A home restored from a backup taken at any point of a run's life repeats nothing the
forge already shows, on both forges: no second claim, pull request, reply or report,
and the forge ends as it was without the restore (issue 48 point 2).

One run goes from its issue to merged while backups of the home are taken (before the
first tick; just before its pull request; in review, before its reply). Then each
backup is put back in turn (every file a new inode, like a restore or a `cp -a`) and
the home is ticked until it is quiet: the forge's facts (pull requests in every state,
the kernel's markers, the default branch) must be what they were, and no tick may
print a false LEDGER DAMAGED.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from github import Auth, Github

from outerloop.config import Settings, load_settings
from outerloop.forge.markers import parse_markers
from outerloop.kernel.tick import run_tick
from tests.e2e.test_github_research_run import github_home
from tests.github.fake import FakeGitHub
from tests.github.fixtures import KERNEL, MAINTAINER
from tests.support import (
    TARGET,
    ended,
    forge,
    in_review,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    state_of,
    tick_until,
)

pytestmark = pytest.mark.e2e

QUIET_TICKS = 4


@dataclass
class World:
    """The forge as the test's humans and its assertions see it."""

    settings: Settings
    open_issue: Callable[[], int]
    comment: Callable[[int, str], None]
    merge: Callable[[int], None]
    prs: Callable[[], list[tuple[int, str, str, bool]]]
    """(number, head, state, merged) of every pull request."""
    bodies: Callable[[int], list[str]]
    """The kernel's comment bodies on an issue or pull request."""
    main: Callable[[], str | None]


def _local_world(tmp_path: Path, remote: Path | None = None) -> World:
    settings = make_home(tmp_path)
    if remote is not None:
        config = settings.home / "outerloop.toml"
        config.write_text(f'ledger_remote = "{remote}"\n' + config.read_text())
        settings = load_settings(settings.home)
    settings = jobs_import_this_checkout(settings)
    local = forge(settings)
    return World(
        settings,
        lambda: open_issue(settings, "Shorter tours", "Try local search on tour."),
        lambda n, text: local.comment_as(TARGET, n, text, "maintainer") and None,
        lambda n: local.merge_pr(TARGET, n) and None,
        lambda: [(p.number, p.head, p.state, p.merged)
                 for p in local.list_prs(TARGET, "all")],
        lambda n: [c.body for c in local.list_comments(TARGET, n)
                   if c.author == settings.forge.login],
        lambda: local.branch_head(TARGET, "main"))


def _github_world(tmp_path: Path, fake: FakeGitHub) -> World:
    settings = jobs_import_this_checkout(github_home(tmp_path, fake))
    gh = Github(base_url=fake.base_url, auth=Auth.Token(fake.token_for(MAINTAINER)),
                retry=None, seconds_between_requests=None, seconds_between_writes=None)
    repo: Any = gh.get_repo(TARGET)

    def prs() -> list[tuple[int, str, str, bool]]:
        return [(p.number, p.head.ref, p.state, p.merged)
                for p in repo.get_pulls(state="all")]

    return World(
        settings,
        lambda: repo.create_issue(title="Shorter tours",
                                  body="Please try local search on tour.").number,
        lambda n, text: repo.get_pull(n).create_issue_comment(text) and None,
        lambda n: repo.get_pull(n).merge(merge_method="merge") and None,
        prs,
        lambda n: [c["body"] for c in fake.comments_on(TARGET, n) if c["author"] == KERNEL],
        lambda: fake.branch_head(TARGET, "main"))


def _backup(home: Path, dest: Path) -> Path:
    """A copy of the home as a backup holds it (times kept, every file its own copy);
    the local forge (``<home>/forge``) is the outside world, not part of it."""
    _copy_live_tree(home, dest, leave_out={"forge"})
    return dest


def _copy_live_tree(src: Path, dst: Path, leave_out: frozenset[str] | set[str] = frozenset(),
                    ) -> None:
    """Jobs keep writing while the backup runs; an entry gone by the time it is read is
    left out, as rsync leaves out a vanished file."""
    dst.mkdir(parents=True)
    try:
        entries = list(os.scandir(src))
    except FileNotFoundError:
        return
    for entry in entries:
        if entry.name in leave_out:
            continue
        with contextlib.suppress(FileNotFoundError):
            if entry.is_symlink():
                os.symlink(os.readlink(entry.path), dst / entry.name)
            elif entry.is_dir():
                _copy_live_tree(Path(entry.path), dst / entry.name)
            else:
                shutil.copy2(entry.path, dst / entry.name)
    with contextlib.suppress(FileNotFoundError):
        shutil.copystat(src, dst)


def _restore(home: Path, backup: Path) -> None:
    """Put ``backup`` back in place of the home (the forge stays): new inodes all."""
    for entry in home.iterdir():
        if entry.name == "forge":
            continue
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry)
        else:
            entry.unlink()
    for entry in backup.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.copytree(entry, home / entry.name, symlinks=True)
        else:
            shutil.copy2(entry, home / entry.name, follow_symlinks=False)


def _facts(world: World, issue: int) -> tuple[object, ...]:
    """What the forge shows: every PR, every kernel marker on the issue and each PR
    (with how often), the default branch's head."""
    prs = sorted(world.prs())
    markers: Counter[str] = Counter()
    for number in [issue, *(p[0] for p in prs)]:
        for body in world.bodies(number):
            for marker in parse_markers(body):
                markers[f"#{number} {marker.kind} {marker.key}"] += 1
    return prs, sorted(markers.items()), world.main()


def _live_run(world: World, backups: Path) -> tuple[int, dict[str, Path]]:
    """One run from its issue to merged and reported, backups taken on the way."""
    home = world.settings.home
    issue = world.open_issue()
    taken = {"before the first tick": _backup(home, backups / "first")}
    deadline = time.monotonic() + 240
    while True:  # a backup just before the tick that opens the pull request
        pr_backup = backups / "pr"
        if pr_backup.exists():
            shutil.rmtree(pr_backup)
        _backup(home, pr_backup)
        run_tick(world.settings)
        if any(r.pr_number for r in state_of(world.settings).runs.values()):
            taken["before the pull request"] = pr_backup
            break
        assert time.monotonic() < deadline, "no pull request opened in 240 s"
    state = tick_until(world.settings, in_review, timeout_s=240)
    (run,) = state.runs.values()
    assert run.pr_number is not None
    taken["in review, before the reply"] = _backup(home, backups / "review")
    world.comment(run.pr_number, "Does 2-opt keep the runtime small?")
    tick_until(world.settings, lambda s: any(
        "outerloop:reply" in b for b in world.bodies(run.pr_number or 0)), timeout_s=240)
    world.merge(run.pr_number)
    tick_until(world.settings, lambda s: ended(s) and any(
        "outerloop:report" in b for b in world.bodies(issue)), timeout_s=240)
    for _ in range(QUIET_TICKS):
        run_tick(world.settings)
    return issue, taken


def _runs(settings: Settings) -> dict[str, tuple[object, ...]]:
    return {r.run_id: (r.ending, r.pr_number, r.issue)
            for r in state_of(settings).runs.values()}


def _check_restores(world: World, tmp_path: Path, *, remote: bool = False) -> None:
    """Each backup put back in turn ends with the forge as it was; the ledger holds
    what it held (with a ledger remote), or no run the forge does not show."""
    issue, taken = _live_run(world, tmp_path / "backups")
    final = _facts(world, issue)
    prs = world.prs()
    assert len(prs) == 1 and prs[0][3]
    runs = _runs(world.settings)
    for point, backup in taken.items():
        _restore(world.settings.home, backup)
        deadline = time.monotonic() + 240
        quiet = 0
        while quiet < QUIET_TICKS:  # a run the backup caught mid-gate measures again
            report = run_tick(world.settings)
            assert report.ledger_damage == [], f"restored {point}: {report.ledger_damage}"
            assert not report.failures, f"restored {point}: {report.failures}"
            quiet = quiet + 1 if _settled(_runs(world.settings), runs, remote) else 0
            assert time.monotonic() < deadline, (point, runs, _runs(world.settings))
        assert _facts(world, issue) == final, f"restored {point}"


def _settled(now: dict[str, tuple[object, ...]], runs: dict[str, tuple[object, ...]],
             remote: bool) -> bool:
    """The ledger holds what it held (a ledger remote gives every line back), or no
    run in a state other than the one it reached without the restore."""
    if remote:
        return now == runs
    return all(runs.get(run) == seen for run, seen in now.items())


def test_restores_repeat_nothing_and_a_ledger_remote_gives_the_lost_lines_back(
        tmp_path: Path) -> None:
    remote = tmp_path / "ledger-remote.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(remote)], check=True)
    _check_restores(_local_world(tmp_path, remote), tmp_path, remote=True)


def test_restores_repeat_nothing_on_the_local_forge(tmp_path: Path) -> None:
    _check_restores(_local_world(tmp_path), tmp_path)


@pytest.mark.github
def test_restores_repeat_nothing_on_github(tmp_path: Path, fake_github: FakeGitHub) -> None:
    _check_restores(_github_world(tmp_path, fake_github), tmp_path)
