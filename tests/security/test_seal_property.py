"""Any tree an agent can make seals or is refused by name; no command in it ever runs.

Random work trees over one base: nested repositories armed with filters, hooks and an
fsmonitor that touch a canary, ``.git`` files naming a ledger-like repository, names git
takes for ``.git``, FIFOs, symlinks (out of the tree, absolute, dangling, to a folder),
non-UTF-8 and newline names, paths of up to 4,100 bytes, files where the base has
folders and folders where it has files, executable bits, ``.gitignore`` files. Each
tree is sealed twice (the second time with every nested repository dirty): the outcome
is a ``Snapshot`` or a ``SealRefused`` whose text starts ``Refused:``, never another
exception, and the canary never appears. A tree that seals is compared with what ``git
add -A`` makes of a copy of it (same base index, same ignore rules, no filter
configured): the same entries, byte for byte.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from outerloop.attempt import candidate, seal_stage
from outerloop.attempt.candidate import builtin_ignored, snapshot
from outerloop.attempt.seal_stage import SealRefused
from outerloop.contract import load_contract_text
from outerloop.contract_scope import path_allowed
from outerloop.run.paths import RunPaths

pytestmark = pytest.mark.security

EXAMPLES = int(os.environ.get("SEAL_EXAMPLES", "60"))
CONTRACT = load_contract_text("""
benchmarks:
  - {name: tour, command: python evaluate.py, metric: m, direction: min}
budgets: {gpu_hours_per_run: 0, runs_per_week: 5}
scope: {allowed: [solver/]}
roadmap: docs/roadmap.md
""")
ID = ("-c", "user.name=t", "-c", "user.email=t@t")
BASE_FILES = {"solver/tour.py": b"x = 1\n", "solver/a/b.py": b"b = 1\n", "evaluate.py": b"e\n",
              "docs/roadmap.md": b"road\n", "run.sh": b"#!/bin/sh\n", ".gitignore": b"*.log\n"}
ORDINARY = ["a", "b", "tour.py", "x y", "new\nline", os.fsdecode(b"\xff\xfe.py"), "\u00e9.py",
            "__pycache__", "m.pyc", ".gitignore", "k.log", "sub", "n" * 200, "run.sh", "docs"]
RESERVED = [".git", ".GIT", "git~1", ".git.", ".gitmodules"]
IGNORES = ["*.py\n", "!keep\n*\n", "sub/\n", "/a\n", "tour.py\n!tour.py\n"]


def git(cwd: Path, *args: str, env: dict[str, str] | None = None) -> str:
    return subprocess.run(["git", *ID, *args], cwd=cwd, check=True, capture_output=True,
                          env=env, text=True).stdout.strip()


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    """One base repository (the kernel's), a ledger-like repository, a canary path."""
    top = tmp_path_factory.mktemp("seal-property")
    kernel = top / "kernel"
    kernel.mkdir()
    git(kernel, "init", "-q", "-b", "main")
    for name, data in BASE_FILES.items():
        (kernel / name).parent.mkdir(parents=True, exist_ok=True)
        (kernel / name).write_bytes(data)
    (kernel / "run.sh").chmod(0o755)
    (kernel / "solver" / "link").symlink_to("tour.py")
    git(kernel, "add", "-A")
    git(kernel, "commit", "-qm", "base")
    ledger = top / "ledger"
    ledger.mkdir()
    git(ledger, "init", "-q")
    (ledger / "tick.jsonl").write_text("{}\n")
    git(ledger, "add", "-A")
    git(ledger, "commit", "-qm", "ledger")
    yield {"top": top, "kernel": kernel, "base": git(kernel, "rev-parse", "HEAD"),
           "ledger": ledger, "canary": top / "canary"}


paths_st = st.tuples(st.sampled_from(["solver", "", "docs", "solver/a"]),
                     st.lists(st.sampled_from(ORDINARY), min_size=1, max_size=3)).map(
    lambda t: "/".join([t[0], *t[1]] if t[0] else t[1]))
ordinary_st = st.one_of(
    st.tuples(st.just("file"), paths_st, st.binary(max_size=40), st.booleans()),
    st.tuples(st.just("link"), paths_st, st.sampled_from(
        ["../../outside", "/etc/passwd", "nowhere", "tour.py", ".", "a"])),
    st.tuples(st.just("dir"), paths_st),
    st.tuples(st.just("rm"), st.sampled_from(sorted(BASE_FILES))),
    st.tuples(st.just("ignore"), st.sampled_from(["", "solver", "solver/a"]),
              st.sampled_from(IGNORES)),
)
hostile_st = st.one_of(
    st.tuples(st.just("fifo"), paths_st),
    st.tuples(st.just("repo"), paths_st),
    st.tuples(st.just("gitfile"), paths_st),
    st.tuples(st.just("long"), st.integers(min_value=900, max_value=4100)),
    st.tuples(st.just("file"), paths_st.flatmap(
        lambda p: st.sampled_from(RESERVED).map(lambda n: f"{p}/{n}")), st.just(b"[core]\n"),
        st.just(False)),
)
ops_st = st.tuples(st.lists(ordinary_st, max_size=8), st.lists(hostile_st, max_size=2)).map(
    lambda t: [*t[0], *t[1]])


def arm(repo: Path, canary: Path) -> None:
    touch = f"touch {canary}; cat"
    with (repo / ".git" / "config").open("a") as config:
        config.write(f'[filter "x"]\n\tclean = {touch}\n\tsmudge = {touch}\n'
                     f"\tprocess = sh -c 'touch {canary}'\n[core]\n\tfsmonitor = {touch}\n")
    hook = repo / ".git" / "hooks" / "post-index-change"
    hook.write_text(f"#!/bin/sh\ntouch {canary}\n")
    hook.chmod(0o755)
    (repo / ".gitattributes").write_text("* filter=x\n")


def make_long(ws: Path, total: int) -> None:
    """A file at a path of about ``total`` bytes (made through descriptors: past
    PATH_MAX no absolute path reaches it)."""
    fd = os.open(ws, os.O_RDONLY | os.O_DIRECTORY)
    try:
        left = total
        while left > 250:
            name = "d" * 200
            os.makedirs(os.path.join(f"/proc/self/fd/{fd}", name), exist_ok=True)
            sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
            os.close(fd)
            fd = sub
            left -= 201
        os.close(os.open("f" * max(1, left), os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    finally:
        os.close(fd)


def apply(ws: Path, op: tuple[Any, ...], world: dict[str, Any]) -> None:
    kind, where = op[0], ws / op[1] if isinstance(op[1], str) else ws
    if isinstance(op[1], str) and where.is_fifo():
        return  # writing to it would wait for a reader
    try:
        if kind == "file":
            where.parent.mkdir(parents=True, exist_ok=True)
            where.write_bytes(op[2])
            where.chmod(0o755 if op[3] else 0o644)
        elif kind == "link":
            where.parent.mkdir(parents=True, exist_ok=True)
            where.symlink_to(op[2])
        elif kind == "dir":
            where.mkdir(parents=True, exist_ok=True)
        elif kind == "fifo":
            where.parent.mkdir(parents=True, exist_ok=True)
            os.mkfifo(where)
        elif kind == "repo":
            where.mkdir(parents=True, exist_ok=True)
            git(where, "init", "-q")
            arm(where, world["canary"])
            (where / "f.py").write_text("f\n")
        elif kind == "gitfile":
            where.mkdir(parents=True, exist_ok=True)
            (where / ".git").write_text(f"gitdir: {world['ledger']}/.git\n")
        elif kind == "rm":
            (ws / op[1]).unlink()
        elif kind == "ignore":
            (ws / op[1] / ".gitignore").write_bytes(op[2].encode())
        elif kind == "long":
            make_long(ws, op[1])
    except (OSError, subprocess.CalledProcessError):
        pass  # the generator asked for something the tree cannot hold: skip it


def copy_plain(src: Path, dst: Path) -> None:
    """Files, symlinks and folders of ``src`` (no FIFO)."""
    dst.mkdir()
    for name in os.listdir(src):
        s, d = src / name, dst / name
        info = os.lstat(s)
        if stat.S_ISLNK(info.st_mode):
            os.symlink(os.readlink(s), d)
        elif stat.S_ISDIR(info.st_mode):
            copy_plain(s, d)
        elif stat.S_ISREG(info.st_mode):
            shutil.copy2(s, d)


def reference(paths: RunPaths, base: str, copy: Path) -> dict[str, seal_stage.Entry]:
    """What ``git add -A`` over ``copy`` stages from the base's index, then the same
    drops ``snapshot`` makes (tool leftovers, new files outside the scope)."""
    env = {**os.environ, "GIT_INDEX_FILE": str(paths.root / "ref.index"),
           "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    kernel_git = str(paths.kernel_git)
    git(paths.root, f"--git-dir={kernel_git}", "read-tree", base, env=env)
    git(paths.root, "-c", f"core.excludesFile={candidate._exclude_file(paths)}",
        f"--git-dir={kernel_git}", f"--work-tree={copy}", "add", "-A", env=env)
    tree = git(paths.root, f"--git-dir={kernel_git}", "write-tree", env=env)
    entries = seal_stage.tree_entries(paths.kernel_git, tree)
    base_entries = seal_stage.tree_entries(paths.kernel_git, base)
    return {p: e for p, e in entries.items() if p in base_entries or
            (not builtin_ignored(p) and path_allowed(CONTRACT, p))}


@settings(max_examples=EXAMPLES, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=ops_st)
def test_any_tree_seals_or_is_refused_by_name_and_runs_nothing_when_sealed_twice(
        world: dict[str, Any], ops: list[tuple[Any, ...]]) -> None:
    with tempfile.TemporaryDirectory(dir=world["top"]) as tmp:
        root = Path(tmp)
        (root / "kernel").symlink_to(world["kernel"])
        paths = RunPaths(root)
        paths.ws.mkdir()
        for name, data in BASE_FILES.items():
            (paths.ws / name).parent.mkdir(parents=True, exist_ok=True)
            (paths.ws / name).write_bytes(data)
        (paths.ws / "run.sh").chmod(0o755)
        (paths.ws / "solver" / "link").symlink_to("tour.py")
        (paths.ws / ".git").mkdir()
        (paths.ws / ".git" / "config").write_text("[core\nnever read\n")
        for op in ops:
            apply(paths.ws, op, world)
        outcomes = []
        for _ in range(2):
            try:
                unsafe = candidate.unsealable(paths, world["base"])
                outcomes.append(unsafe or snapshot(paths, world["base"], CONTRACT))
            except SealRefused as exc:
                outcomes.append(str(exc))
            for nested in paths.ws.rglob("f.py"):
                if nested.parent.joinpath(".git").is_dir():
                    nested.write_text("dirty\n")
        assert not world["canary"].exists(), f"a command of the tree ran: {ops}"
        for outcome in outcomes:
            if isinstance(outcome, str):
                assert outcome.startswith("Refused: "), outcome
                assert outcome.endswith("nothing was launched, sealed or charged."), outcome
        first = outcomes[0]
        event("refused" if isinstance(first, str) else "sealed")
        if isinstance(first, str):
            return
        copy = root / "copy"
        copy_plain(paths.ws, copy)
        shutil.rmtree(copy / ".git")
        mine = seal_stage.tree_entries(paths.kernel_git, first.tree)
        assert mine == reference(paths, world["base"], copy), ops
