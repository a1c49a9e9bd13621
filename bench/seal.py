"""What sealing the work tree as data costs (issue 46): ``git add -A`` against the walk.

Builds a target of ``FILES`` files (10,000 by default, in 100 folders), commits it as
the base, clones it as the agent's workspace, then changes ``CHANGED`` files and adds
``NEW`` ones. Prints the median of ``RUNS`` seals each way:

- old: ``git add -A`` over the work tree into the scratch index, then ``write-tree``
  (what ``candidate.snapshot`` did; cold: a fresh index, so every file is hashed;
  warm: the index of the previous seal, so git's stat cache skips unchanged files);
- new: ``candidate.unsealable`` (the walk before anything else) and
  ``candidate.snapshot`` (walk, ``ls-files --others``, files read and hashed in
  Python, missing blobs written, index from entries); cold: no stat cache and the new
  blobs not yet in the repository; objects there: every file read again; warm: the
  stat cache of the previous seal, so unchanged files are not read.

And the two ways to write the new blobs: loose objects from Python (what the seal does)
against one ``git hash-object -w --no-filters --stdin`` per blob. Nothing asserts.

    python bench/seal.py [files] [runs]
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from outerloop.attempt import candidate, seal_objects  # noqa: E402
from outerloop.contract import load_contract_text  # noqa: E402
from outerloop.forge import localgit as g  # noqa: E402
from outerloop.run.paths import RunPaths  # noqa: E402

FILES = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
RUNS = int(sys.argv[2]) if len(sys.argv) > 2 else 5
CHANGED = FILES // 20
NEW = FILES // 20
CONTRACT = load_contract_text("""
benchmarks:
  - {name: b, command: python evaluate.py, metric: m, direction: min}
budgets: {gpu_hours_per_run: 0, runs_per_week: 5}
scope: {allowed: [src/]}
roadmap: README.md
""")
ID = ("-c", "user.name=b", "-c", "user.email=b@b")


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *ID, *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def body(index: int, salt: str = "") -> bytes:
    return (f"# module {index}{salt}\n" + "def f(x):\n    return x + 1\n" * 20).encode()


def build(top: Path) -> tuple[Path, str, Path]:
    """The base repository, its sha, and a pristine workspace to copy per run."""
    base = top / "base"
    for index in range(FILES):
        path = base / "src" / f"d{index % 100:03d}" / f"m{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body(index))
    (base / "README.md").write_text("bench\n")
    git(top, "init", "-q", "-b", "main", str(base))
    git(base, "add", "-A")
    git(base, "commit", "-qm", "base")
    sha = git(base, "rev-parse", "HEAD")
    ws = top / "ws"
    git(top, "clone", "-q", str(base), str(ws))
    for index in range(0, CHANGED * 20, 20):
        (ws / "src" / f"d{index % 100:03d}" / f"m{index}.py").write_bytes(body(index, "!"))
    for index in range(NEW):
        path = ws / "src" / "new" / f"n{index}.py"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(body(FILES + index))
    return base, sha, ws


def fresh_run(top: Path, base: Path, ws: Path, name: str) -> RunPaths:
    """A run directory: a clone of the base as the kernel's repository, the workspace."""
    paths = RunPaths(top / name)
    paths.root.mkdir()
    git(paths.root, "clone", "-q", "--no-local", "--no-checkout", str(base), str(paths.kernel))
    shutil.copytree(ws, paths.ws, symlinks=True)
    excl = paths.kernel_git / "info" / "exclude"
    excl.parent.mkdir(exist_ok=True)
    excl.write_text("/.outerloop/\n")
    return paths


def median_s(action: Callable[[], object], prepare: Callable[[], object] | None = None,
             runs: int = RUNS) -> float:
    times = []
    for _ in range(runs):
        if prepare is not None:
            prepare()
        start = time.perf_counter()
        action()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def old_seal(paths: RunPaths) -> str:
    env = {"GIT_INDEX_FILE": str(paths.root / "old.index")}
    exclude = candidate._exclude_file(paths)
    g.git(["-c", f"core.excludesFile={exclude}", "--work-tree", str(paths.ws), "add", "-A",
           "--", "."], git_dir=paths.kernel_git, env=env)
    return g.git_text(["write-tree"], git_dir=paths.kernel_git, env=env)


def drop_new_objects(paths: RunPaths) -> None:
    """Remove the loose objects seals wrote (the base's are packed by the clone)."""
    objects = paths.kernel_git / "objects"
    for folder in objects.iterdir():
        if len(folder.name) == 2:
            shutil.rmtree(folder)


def blob_writes(paths: RunPaths, sha: str) -> tuple[float, float, int]:
    """Seconds to write the changed and new files' blobs: loose objects from Python,
    and one ``hash-object -w --no-filters --stdin`` per blob; how many blobs."""
    algo = seal_objects.algorithm(sha)
    rels = [f"src/d{i % 100:03d}/m{i}.py" for i in range(0, CHANGED * 20, 20)]
    rels += [f"src/new/n{i}.py" for i in range(NEW)]
    named, _ = seal_objects.blob_ids(paths.ws, [(r, seal_objects.FILE) for r in rels], algo)

    def python_loose() -> None:
        seal_objects.write_blobs(paths.kernel_git, paths.ws, named, algo)

    def hash_object() -> None:
        for rel in named:
            g.git(["hash-object", "-w", "--no-filters", "--stdin"], git_dir=paths.kernel_git,
                  stdin=(paths.ws / rel).read_bytes())

    loose = median_s(python_loose, lambda: drop_new_objects(paths), runs=3)
    spawned = median_s(hash_object, lambda: drop_new_objects(paths), runs=3)
    return loose, spawned, len(named)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        top = Path(tmp)
        base, sha, ws = build(top)
        old = fresh_run(top, base, ws, "old")
        new = fresh_run(top, base, ws, "new")
        index = old.root / "old.index"
        old_cold = median_s(lambda: old_seal(old),
                            lambda: (index.unlink(missing_ok=True), drop_new_objects(old)))
        old_warm = median_s(lambda: old_seal(old))
        scan = median_s(lambda: candidate.unsealable(new, sha))
        cache = new.root / "seal.stat"
        new_cold = median_s(lambda: candidate.snapshot(new, sha, CONTRACT),
                            lambda: (drop_new_objects(new), cache.unlink(missing_ok=True)))
        new_uncached = median_s(lambda: candidate.snapshot(new, sha, CONTRACT),
                                lambda: cache.unlink(missing_ok=True))
        time.sleep(2.5)  # older than the stat cache's racy window
        candidate.snapshot(new, sha, CONTRACT)
        new_warm = median_s(lambda: candidate.snapshot(new, sha, CONTRACT))
        same = old_seal(old) == candidate.snapshot(new, sha, CONTRACT).tree
        loose, spawned, blobs = blob_writes(new, sha)
    print(f"seal of a {FILES}-file tree ({CHANGED} changed, {NEW} new), median of {RUNS}:")
    print(f"  old  git add -A + write-tree     cold {old_cold * 1e3:7.1f} ms   "
          f"warm {old_warm * 1e3:7.1f} ms")
    print(f"  new  unsealable (the walk)            {scan * 1e3:7.1f} ms")
    print(f"  new  snapshot                     cold {new_cold * 1e3:7.1f} ms   "
          f"warm {new_warm * 1e3:7.1f} ms   (objects there, no stat cache "
          f"{new_uncached * 1e3:.1f} ms)")
    print(f"  same tree both ways: {same}")
    print(f"writing {blobs} blobs: Python loose objects {loose * 1e3:.1f} ms, "
          f"hash-object per blob {spawned * 1e3:.1f} ms")
    print(f"(cpu count {os.cpu_count()}, load {os.getloadavg()[0]:.1f})")


if __name__ == "__main__":
    main()
