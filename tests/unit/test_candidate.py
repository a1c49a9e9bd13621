"""Workspace hygiene: what of the agent's working tree becomes the candidate."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from outerloop.attempt.candidate import builtin_ignored, left_out_note, snapshot
from outerloop.contract import load_contract_text
from outerloop.run.paths import RunPaths

CONTRACT = load_contract_text("""
benchmarks:
  - {name: tour, command: python evaluate.py, metric: m, direction: min}
budgets: {gpu_hours_per_run: 0, runs_per_week: 5}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


@pytest.fixture
def run(tmp_path: Path) -> tuple[RunPaths, str]:
    """A run directory: the kernel's clone at the base, and the agent's clone."""
    paths = RunPaths(tmp_path / "run")
    paths.kernel.mkdir(parents=True)
    _git(paths.kernel, "init", "-q", "-b", "main")
    for name, text in {"solver/tour.py": "x = 1\n", "evaluate.py": "print(1)\n",
                       "docs/roadmap.md": "road\n", ".gitignore": "/scratch.txt\n"}.items():
        (paths.kernel / name).parent.mkdir(parents=True, exist_ok=True)
        (paths.kernel / name).write_text(text)
    _git(paths.kernel, "add", "-A")
    _git(paths.kernel, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    base = _git(paths.kernel, "rev-parse", "HEAD")
    _git(tmp_path, "clone", "-q", str(paths.kernel), str(paths.ws))
    return paths, base


def _files(paths: RunPaths, tree: str) -> list[str]:
    return sorted(_git(paths.kernel, "ls-tree", "-r", "--name-only", tree).splitlines())


def test_candidate_keeps_tracked_edits_and_new_files_in_scope(run: tuple[RunPaths, str]) -> None:
    paths, base = run
    (paths.ws / "solver" / "tour.py").write_text("x = 2\n")
    (paths.ws / "solver" / "fast.py").write_text("y = 1\n")
    shot = snapshot(paths, base, CONTRACT)
    assert "solver/fast.py" in _files(paths, shot.tree)
    assert shot.left_out == []


def test_tool_leftovers_never_enter_the_candidate_when_the_eval_ran_in_the_workspace(
        run: tuple[RunPaths, str]) -> None:
    paths, base = run
    ws = paths.ws
    for name in ("solver/__pycache__/tour.cpython-312.pyc", "solver/_fast.so", "solver/a.o",
                 ".venv/lib/site.py", "solver/.pytest_cache/v", "solver/.mypy_cache/x.json",
                 ".ruff_cache/c", "solver/pkg.egg-info/PKG-INFO", "solver/venv/bin/python"):
        (ws / name).parent.mkdir(parents=True, exist_ok=True)
        (ws / name).write_bytes(b"\x7fELF\x00")
    shot = snapshot(paths, base, CONTRACT)
    assert _files(paths, shot.tree) == _files(paths, base)
    assert shot.left_out == []


def test_bytecode_stays_out_when_a_workspace_gitignore_re_includes_it(
        run: tuple[RunPaths, str]) -> None:
    paths, base = run
    (paths.ws / "solver" / ".gitignore").write_text("!*.pyc\n!__pycache__/\n")
    (paths.ws / "solver" / "__pycache__").mkdir()
    (paths.ws / "solver" / "__pycache__" / "t.pyc").write_bytes(b"\x00")
    (paths.ws / "solver" / "x.pyc").write_bytes(b"\x00")
    files = _files(paths, snapshot(paths, base, CONTRACT).tree)
    assert not [f for f in files if f.endswith(".pyc")]


def test_new_files_outside_scope_are_left_out_and_listed_not_refused(
        run: tuple[RunPaths, str]) -> None:
    paths, base = run
    (paths.ws / "uv.lock").write_text("lock\n")
    (paths.ws / "report.md").write_text("# report\n")
    (paths.ws / "scratch.txt").write_text("ignored by the target's .gitignore\n")
    (paths.ws / "solver" / "tour.py").write_text("x = 3\n")
    shot = snapshot(paths, base, CONTRACT)
    assert sorted(shot.left_out) == ["report.md", "uv.lock"]
    files = _files(paths, shot.tree)
    assert "uv.lock" not in files and "report.md" not in files and "scratch.txt" not in files
    note = left_out_note(shot.left_out)
    assert note is not None and "uv.lock" in note and "report.md" in note


def test_tracked_edits_outside_scope_stay_in_the_snapshot_for_the_refusal(
        run: tuple[RunPaths, str]) -> None:
    paths, base = run
    (paths.ws / "evaluate.py").write_text("print(2)\n")
    shot = snapshot(paths, base, CONTRACT)
    assert _git(paths.kernel, "diff", "--name-only", base, shot.tree) == "evaluate.py"


def test_builtin_ignore_matches_tool_leftovers_only() -> None:
    assert builtin_ignored("a/__pycache__/b.pyc") and builtin_ignored("x.so")
    assert builtin_ignored(".venv/bin/python") and builtin_ignored("p.egg-info/PKG-INFO")
    assert not builtin_ignored("solver/tour.py") and not builtin_ignored("solver/venv.py")


def test_the_report_file_is_read_not_sealed_when_it_lies_inside_the_scope(
        run: tuple[RunPaths, str]) -> None:
    paths, base = run
    report = "# 2-opt\n\nShorter tours.\n"
    (paths.ws / "solver" / "NOTES.md").write_text(report)
    (paths.ws / "solver" / "other.md").write_text("# not the report\n")
    (paths.ws / "solver" / "tour.py").write_text("x = 4\n")
    files = _files(paths, snapshot(paths, base, CONTRACT, report).tree)
    assert "solver/NOTES.md" not in files and "solver/other.md" in files
    assert "solver/NOTES.md" in _files(paths, snapshot(paths, base, CONTRACT).tree)


def test_the_report_at_the_root_is_not_noted_as_left_out(run: tuple[RunPaths, str]) -> None:
    paths, base = run
    (paths.ws / "report.md").write_text("# report\n")
    (paths.ws / "uv.lock").write_text("lock\n")
    (paths.ws / "solver" / "tour.py").write_text("x = 5\n")
    shot = snapshot(paths, base, CONTRACT, "# report\n")
    assert shot.left_out == ["uv.lock"]
    assert "report.md" not in _files(paths, shot.tree)



def _sparse(path: Path, size: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        handle.truncate(size)


def test_a_sparse_file_over_the_limit_is_refused_by_apparent_size_before_git_hashes_it(
        run: tuple[RunPaths, str]) -> None:
    from outerloop.attempt.candidate import size_problem

    paths, base = run
    _sparse(paths.ws / "solver" / "huge.bin", 100 * 1024**3)
    problem = size_problem(paths, base)
    assert problem is not None
    assert "solver/huge.bin (100.0 GiB)" in problem and "20.0 MiB" in problem
    assert not (paths.root / "seal.index").exists()  # nothing was hashed


def test_an_ignored_or_linked_huge_file_is_not_refused_when_git_would_not_add_its_bytes(
        run: tuple[RunPaths, str]) -> None:
    from outerloop.attempt.candidate import size_problem

    paths, base = run
    _sparse(paths.ws / "scratch.txt", 100 * 1024**3)  # the target's .gitignore
    _sparse(paths.ws / "solver" / "__pycache__" / "x.pyc", 100 * 1024**3)  # built-in set
    (paths.ws / "solver" / "link").symlink_to(paths.ws / "scratch.txt")
    assert size_problem(paths, base) is None


def test_a_file_the_base_tracks_at_its_size_does_not_count_when_unchanged(
        tmp_path: Path) -> None:
    from outerloop.attempt import candidate

    paths = RunPaths(tmp_path / "run")
    paths.kernel.mkdir(parents=True)
    _git(paths.kernel, "init", "-q", "-b", "main")
    (paths.kernel / "data.bin").write_bytes(b"\0" * (candidate.MAX_FILE_BYTES + 1))
    _git(paths.kernel, "add", "-A")
    _git(paths.kernel, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "base")
    base = _git(paths.kernel, "rev-parse", "HEAD")
    _git(tmp_path, "clone", "-q", str(paths.kernel), str(paths.ws))
    assert candidate.size_problem(paths, base) is None
    with (paths.ws / "data.bin").open("ab") as handle:
        handle.write(b"more")
    assert "data.bin" in (candidate.size_problem(paths, base) or "")


def test_too_many_new_files_are_refused_when_over_the_count(run: tuple[RunPaths, str]) -> None:
    from outerloop.attempt import candidate

    paths, base = run
    many = paths.ws / "solver" / "many"
    many.mkdir()
    for index in range(candidate.MAX_CHANGED_FILES + 1):
        (many / f"f{index}.py").write_bytes(b"")
    problem = candidate.size_problem(paths, base) or ""
    assert f"{candidate.MAX_CHANGED_FILES + 1} files are new or changed" in problem
    (many / "f0.py").unlink()
    assert candidate.size_problem(paths, base) is None
