"""Sealing reads the agent's tree as data: nothing in it configures or runs a tool.

Seen on main (db44ebf), kernel as root: inside its scope the agent made a git
repository of its own, with ``[filter "x"] clean = <cmd>`` in that repository's
``.git/config`` and ``* filter=x`` in a ``.gitattributes``. The second seal's ``git add
-A`` over the work tree asked git for the nested repository's status, which read the
agent's config and ran the command as the kernel, unsandboxed. A ``process`` filter ran
the same way, and a ``.git`` *file* naming the home's ledger sealed a ledger commit into
the candidate as a gitlink. Each route here is refused with the path named, and the
command the agent configured (it touches a canary file outside the workspace) never runs.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from outerloop.attempt.candidate import snapshot
from outerloop.contract import load_contract_text
from outerloop.errors import OuterloopError
from outerloop.run.paths import RunPaths

pytestmark = pytest.mark.security

CONTRACT = load_contract_text("""
benchmarks:
  - {name: tour, command: python evaluate.py, metric: m, direction: min}
budgets: {gpu_hours_per_run: 0, runs_per_week: 5}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")
ID = ("-c", "user.name=agent", "-c", "user.email=agent@x")


def git(cwd: Path, *args: str) -> str:
    """The agent's own git (its config is its own business: this is the attack)."""
    return subprocess.run(["git", *ID, *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def run(tmp_path: Path) -> tuple[RunPaths, str]:
    """A run directory: the kernel's clone at the base, and the agent's clone."""
    paths = RunPaths(tmp_path / "run")
    paths.kernel.mkdir(parents=True)
    git(paths.kernel, "init", "-q", "-b", "main")
    for name, text in {"solver/tour.py": "x = 1\n", "evaluate.py": "print(1)\n",
                       "docs/roadmap.md": "road\n"}.items():
        (paths.kernel / name).parent.mkdir(parents=True, exist_ok=True)
        (paths.kernel / name).write_text(text)
    git(paths.kernel, "add", "-A")
    git(paths.kernel, "commit", "-qm", "base")
    base = git(paths.kernel, "rev-parse", "HEAD")
    git(tmp_path, "clone", "-q", str(paths.kernel), str(paths.ws))
    return paths, base


def seal(paths: RunPaths, base: str) -> str:
    """The sealed tree's listing, or the refusal's text (any kernel error's words)."""
    try:
        tree = snapshot(paths, base, CONTRACT).tree
    except OuterloopError as exc:
        return f"error: {exc}"
    return subprocess.run(["git", "ls-tree", "-r", tree], cwd=paths.kernel, check=True,
                          capture_output=True, text=True).stdout


def nested_repo(ws: Path, rel: str = "solver/sub") -> Path:
    """A git repository of the agent's own, one commit in it."""
    sub = ws / rel
    sub.mkdir(parents=True)
    git(sub, "init", "-q")
    (sub / "f.py").write_text("a = 1\n")
    git(sub, "add", "-A")
    git(sub, "commit", "-qm", "mine")
    return sub


def assert_refused(outcome: str, *named: str) -> None:
    assert outcome.startswith("error: Refused:"), outcome
    for path in named:
        assert path in outcome, outcome
    assert "nothing was launched, sealed or charged" in outcome


@pytest.mark.parametrize("key", ["clean", "process"])
def test_a_filter_in_a_nested_repository_never_runs_when_the_kernel_seals(
        run: tuple[RunPaths, str], tmp_path: Path, key: str) -> None:
    paths, base = run
    canary = tmp_path / "canary"
    sub = nested_repo(paths.ws)
    command = f"touch {canary}; cat" if key == "clean" else f"sh -c 'touch {canary}; exit 1'"
    git(sub, "config", f"filter.x.{key}", command)
    (sub / ".gitattributes").write_text("* filter=x\n")
    first = seal(paths, base)
    (sub / "f.py").write_text("a = 2\n")  # the nested repository is now dirty
    second = seal(paths, base)
    assert not canary.exists(), "the agent's filter ran as the kernel"
    assert_refused(first, "solver/sub/.git")
    assert_refused(second, "solver/sub/.git")


def test_a_git_file_naming_the_ledger_is_refused_when_the_kernel_seals(
        run: tuple[RunPaths, str], tmp_path: Path) -> None:
    paths, base = run
    ledger = tmp_path / "home" / "ledger"
    ledger.mkdir(parents=True)
    git(ledger, "init", "-q")
    (ledger / "tick.jsonl").write_text('{"secret": "ledger"}\n')
    git(ledger, "add", "-A")
    git(ledger, "commit", "-qm", "ledger")
    (paths.ws / "solver" / "sub").mkdir()
    (paths.ws / "solver" / "sub" / ".git").write_text(f"gitdir: {ledger}/.git\n")
    outcome = seal(paths, base)
    assert "160000" not in outcome, "a ledger commit was sealed as a gitlink"
    assert_refused(outcome, "solver/sub/.git")


def test_a_submodule_is_refused_when_the_kernel_seals(
        run: tuple[RunPaths, str], tmp_path: Path) -> None:
    paths, base = run
    canary = tmp_path / "canary"
    lib = nested_repo(tmp_path, "lib")
    (lib / ".gitattributes").write_text("* filter=x\n")
    git(lib, "add", "-A")
    git(lib, "commit", "-qm", "attributes")
    git(paths.ws, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib),
        "solver/lib")
    git(paths.ws / "solver" / "lib", "config", "filter.x.clean", f"touch {canary}; cat")
    first = seal(paths, base)
    (paths.ws / "solver" / "lib" / "f.py").write_text("a = 3\n")
    second = seal(paths, base)
    assert not canary.exists(), "the submodule's filter ran as the kernel"
    for outcome in (first, second):
        assert "160000" not in outcome
        assert_refused(outcome, ".gitmodules", "solver/lib/.git")


def test_a_new_gitmodules_file_alone_is_refused_when_the_kernel_seals(
        run: tuple[RunPaths, str]) -> None:
    paths, base = run
    (paths.ws / ".gitmodules").write_text('[submodule "x"]\n\tpath = solver/x\n\turl = /x\n')
    assert_refused(seal(paths, base), ".gitmodules")


@pytest.mark.parametrize("name", [".GIT", ".Git", "git~1", ".git."])
def test_a_name_git_treats_as_dot_git_is_refused_when_the_kernel_seals(
        run: tuple[RunPaths, str], name: str) -> None:
    paths, base = run
    (paths.ws / "solver" / name).mkdir()
    (paths.ws / "solver" / name / "config").write_text("[core]\n")
    assert_refused(seal(paths, base), f"solver/{name}")


def test_a_fifo_is_refused_by_name_when_the_kernel_seals(run: tuple[RunPaths, str]) -> None:
    import os

    paths, base = run
    os.mkfifo(paths.ws / "solver" / "pipe")
    os.mkfifo(paths.ws / "solver" / "tour.py.new")
    (paths.ws / "solver" / "tour.py").unlink()
    os.mkfifo(paths.ws / "solver" / "tour.py")  # where the base tracks a file
    assert_refused(seal(paths, base), "solver/pipe", "solver/tour.py")


def armed_repo(ws: Path, canary: Path, rel: str = "solver/sub") -> Path:
    """A nested repository whose config would run ``touch canary`` from every route git
    has: clean, smudge and process filters, textconv and external diff, fsmonitor,
    hooks; a ``.gitattributes`` naming them all."""
    sub = nested_repo(ws, rel)
    touch = f"touch {canary}; cat"
    for key, value in {"filter.x.clean": touch, "filter.x.smudge": touch,
                       "filter.x.process": f"sh -c 'touch {canary}'",
                       "filter.x.required": "true", "diff.x.textconv": touch,
                       "diff.x.command": touch, "core.fsmonitor": touch}.items():
        git(sub, "config", key, value)
    hooks = sub / ".git" / "hooks"
    for hook in ("pre-commit", "post-checkout", "post-index-change", "reference-transaction"):
        (hooks / hook).write_text(f"#!/bin/sh\ntouch {canary}\n")
        (hooks / hook).chmod(0o755)
    (sub / ".gitattributes").write_text("* filter=x diff=x\n")
    (sub / "f.py").write_text("a = 9\n")  # dirty: a status would have to run the filter
    return sub


def test_the_kernel_listing_never_runs_or_enters_a_nested_repository_when_one_appears(
        run: tuple[RunPaths, str], tmp_path: Path) -> None:
    from outerloop.attempt import candidate, seal_stage

    paths, base = run
    canary = tmp_path / "canary"
    armed_repo(paths.ws, canary)
    armed_repo(paths.ws, canary, "top")  # outside the scope, too
    (paths.ws / ".git" / "config").write_text("[core\nnot config: ws/.git is never read\n")
    (paths.ws / ".gitattributes").write_text("* filter=x\n")
    (paths.ws / "solver" / "new.py").write_text("n = 1\n")
    os_mkfifo(paths.ws / "solver" / "pipe")
    exclude = candidate._exclude_file(paths)
    listed = seal_stage.untracked(paths, exclude)  # what snapshot's listing runs
    assert "solver/sub/" in listed and "top/" in listed  # named, not entered
    assert not [p for p in listed if p.startswith(("solver/sub/f", "top/f"))]
    assert "solver/new.py" in listed and "solver/pipe" not in listed
    assert seal_stage.not_ignored(paths, exclude, ["solver/pipe"]) == ["solver/pipe"]
    assert candidate.size_problem(paths, base) is None  # its listing, too
    assert not canary.exists()


def os_mkfifo(path: Path) -> None:
    import os

    os.mkfifo(path)


def test_a_fifo_is_no_concern_when_an_ignore_rule_covers_it(run: tuple[RunPaths, str]) -> None:
    paths, base = run
    (paths.ws / ".gitignore").write_text("/runs/\n")
    (paths.ws / "runs").mkdir()
    os_mkfifo(paths.ws / "runs" / "sock")
    (paths.ws / "solver" / ".venv").mkdir()
    os_mkfifo(paths.ws / "solver" / ".venv" / "p")
    (paths.ws / "solver" / "tour.py").write_text("x = 2\n")
    assert "solver/tour.py" in seal(paths, base)


def test_checkout_and_diff_of_a_sealed_tree_run_no_driver_when_it_names_one(
        run: tuple[RunPaths, str], tmp_path: Path) -> None:
    """A candidate tree is checked out for launches and evals and diffed for the gate
    and the PR: its ``.gitattributes`` name a filter, a textconv and a diff command, the
    agent's ``ws/.git/config`` defines them; neither git reads that config, and the
    kernel's repository defines no driver, so the bytes go through as they are."""
    from outerloop.run.workspace import checkout, diff_text

    paths, base = run
    canary = tmp_path / "canary"
    touch = f"touch {canary}; cat"
    for key, value in {"filter.x.clean": touch, "filter.x.smudge": touch,
                       "filter.x.process": f"sh -c 'touch {canary}'",
                       "diff.x.textconv": touch, "diff.x.command": touch}.items():
        git(paths.ws, "config", key, value)
    (paths.ws / "solver" / ".gitattributes").write_text("* filter=x diff=x merge=x\n")
    (paths.ws / "solver" / "tour.py").write_text("x = 'bytes as they are'\n")
    shot = snapshot(paths, base, CONTRACT)
    assert not canary.exists()
    commit = subprocess.run(["git", *ID, "commit-tree", shot.tree, "-p", base, "-m", "c"],
                            cwd=paths.kernel, check=True, capture_output=True,
                            text=True).stdout.strip()
    dest = paths.tree("eval")
    checkout(paths, commit, dest)
    assert (dest / "solver" / "tour.py").read_text() == "x = 'bytes as they are'\n"
    assert "bytes as they are" in diff_text(paths, base, commit)
    assert not canary.exists()


def test_the_scope_checks_take_thousands_of_long_paths_when_the_agent_made_them(
        run: tuple[RunPaths, str]) -> None:
    """3,000 new files at 1,000-byte paths: 3 MB of names, past the kernel's 2 MB
    argument limit on one command line (the symlink check put them all on ``ls-tree``'s:
    ``OSError``, the attempt job dead, every recovery the same)."""
    from outerloop.run.workspace import changed_paths, files_with, symlinks_in

    paths, base = run
    deep = "/".join(c * 200 for c in "defg")
    folder = paths.ws / "solver" / deep
    folder.mkdir(parents=True)
    for index in range(3000):
        (folder / f"{index:04d}{'f' * 180}").write_text(f"v = {index}\n")
    (folder / "leak.py").write_text("token = 'sk-secret-value-123'\n")
    (folder / "out").symlink_to("/etc/passwd")
    shot = snapshot(paths, base, CONTRACT)
    changed = changed_paths(paths, base, shot.tree)
    assert len(changed) == 3002
    assert symlinks_in(paths, shot.tree, changed) == {f"solver/{deep}/out": "/etc/passwd"}
    assert files_with(paths, shot.tree, changed, ["sk-secret-value-123"]) == [
        f"solver/{deep}/leak.py"]


def test_a_file_rewritten_with_its_old_mtime_is_read_again_when_the_stat_cache_knows_it(
        run: tuple[RunPaths, str]) -> None:
    """The stat cache skips files unchanged since the last seal; an agent that rewrites a
    file at the same size and puts its mtime back still gets the new bytes sealed (the
    ctime is the kernel's, and it moved)."""
    import os
    import time

    paths, base = run
    tour = paths.ws / "solver" / "tour.py"
    tour.write_text("x = 2\n")
    time.sleep(2.2)  # older than the racy window: recorded
    first = seal(paths, base)
    assert "solver/tour.py" in (paths.root / "seal.stat").read_bytes().decode()
    before = os.stat(tour)
    tour.write_text("x = 3\n")
    os.utime(tour, ns=(before.st_atime_ns, before.st_mtime_ns))
    second = seal(paths, base)
    assert first != second
    tree = snapshot(paths, base, CONTRACT).tree
    assert subprocess.run(["git", "cat-file", "blob", f"{tree}:solver/tour.py"],
                          cwd=paths.kernel, check=True, capture_output=True,
                          text=True).stdout == "x = 3\n"
