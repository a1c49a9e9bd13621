"""``sandbox/beneath.py``: kernel file operations under an agent-writable directory never
follow a symlink, on any component, with openat2 and with the descriptor walk alike."""

from __future__ import annotations

import errno
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from outerloop.sandbox import beneath
from outerloop.sandbox.beneath import NotRegular, SymlinkRefused

SECRET = b"forge-token-0123456789\n"


@pytest.fixture(params=["openat2", "walk"])
def mode(request: pytest.FixtureRequest) -> Iterator[str]:
    """Every test runs twice: with openat2, and with the O_NOFOLLOW walk it falls back to."""
    saved = dict(beneath._state)
    if request.param == "walk":
        beneath._state["works"] = False
    else:
        beneath._state.pop("works", None)
    yield str(request.param)
    beneath._state.clear()
    beneath._state.update(saved)


@pytest.fixture
def box(tmp_path: Path) -> tuple[Path, Path]:
    """``(root, victim)``: an agent-writable root and a kernel file outside it."""
    root = tmp_path / "ws"
    (root / "sub").mkdir(parents=True)
    victim = tmp_path / "keys" / "forge-token"
    victim.parent.mkdir()
    victim.write_bytes(SECRET)
    return root, victim


def test_read_refuses_symlink_when_it_is_the_last_component(mode: str,
                                                            box: tuple[Path, Path]) -> None:
    root, victim = box
    (root / "sub" / "a.json").symlink_to(victim)
    with pytest.raises(SymlinkRefused, match=r"sub/a\.json is a symlink") as caught:
        beneath.read(root, "sub/a.json", 100)
    assert caught.value.errno == errno.ELOOP and isinstance(caught.value, OSError)


def test_read_refuses_symlink_when_it_is_a_middle_component(mode: str,
                                                          box: tuple[Path, Path]) -> None:
    root, victim = box
    (root / "link").symlink_to(victim.parent)
    with pytest.raises(SymlinkRefused, match="ws/link is a symlink"):
        beneath.read(root, "link/forge-token", 100)


def test_every_operation_refuses_dotdot_and_absolute_paths(mode: str,
                                                          box: tuple[Path, Path]) -> None:
    root, victim = box
    for rel in ("../keys/forge-token", "sub/../../keys/forge-token", str(victim)):
        with pytest.raises(SymlinkRefused):
            beneath.read(root, rel, 100)
        with pytest.raises(SymlinkRefused):
            beneath.write(root, rel, b"x")
        with pytest.raises(SymlinkRefused):
            beneath.remove(root, rel)
    assert victim.read_bytes() == SECRET


def test_write_replaces_symlink_at_last_component_without_touching_target(
        mode: str, box: tuple[Path, Path]) -> None:
    root, victim = box
    (root / "sub" / "config.toml").symlink_to(victim)
    beneath.write(root, "sub/config.toml", b"new\n")
    assert victim.read_bytes() == SECRET
    assert not (root / "sub" / "config.toml").is_symlink()
    assert (root / "sub" / "config.toml").read_bytes() == b"new\n"
    assert sorted(os.listdir(root / "sub")) == ["config.toml"]  # no temp file left


def test_write_and_append_refuse_symlinked_directory(mode: str,
                                                     box: tuple[Path, Path]) -> None:
    root, victim = box
    (root / "state").symlink_to(victim.parent)
    with pytest.raises(SymlinkRefused):
        beneath.write(root, "state/forge-token", b"x")
    with pytest.raises(SymlinkRefused):
        beneath.append(root, "state/forge-token", b"x")
    assert victim.read_bytes() == SECRET


def test_append_refuses_symlink_and_hard_link_at_last_component(
        mode: str, box: tuple[Path, Path]) -> None:
    root, victim = box
    (root / "t.jsonl").symlink_to(victim)
    with pytest.raises(SymlinkRefused):
        beneath.append(root, "t.jsonl", b"agent text\n")
    os.link(victim, root / "hard.jsonl")
    with pytest.raises(NotRegular, match="hard links"):
        beneath.append(root, "hard.jsonl", b"agent text\n")
    assert victim.read_bytes() == SECRET
    beneath.append(root, "fresh.jsonl", b"a\n")
    beneath.append(root, "fresh.jsonl", b"b\n")
    assert (root / "fresh.jsonl").read_bytes() == b"a\nb\n"


def test_directory_swapped_to_symlink_between_calls_is_refused(
        mode: str, box: tuple[Path, Path]) -> None:
    root, victim = box
    beneath.write(root, "sub/answer.json", b"{}")
    assert beneath.read(root, "sub/answer.json", 10) == b"{}"
    beneath.remove(root, "sub")
    (root / "sub").symlink_to(victim.parent)  # the agent's leftover swaps it
    with pytest.raises(SymlinkRefused):
        beneath.write(root, "sub/forge-token", b"x")
    with pytest.raises(SymlinkRefused):
        beneath.read(root, "sub/forge-token", 100)
    with pytest.raises(SymlinkRefused):
        beneath.unlink(root, "sub/forge-token")
    with pytest.raises(SymlinkRefused):
        beneath.remove(root, "sub/forge-token")
    with pytest.raises(SymlinkRefused):
        beneath.listdir(root, "sub")
    assert victim.read_bytes() == SECRET


def test_open_directory_descriptor_survives_a_later_swap(mode: str,
                                                        box: tuple[Path, Path]) -> None:
    root, victim = box
    with beneath.directory(root, "sub") as fd:
        (root / "sub").rename(root / "moved")
        (root / "sub").symlink_to(victim.parent)
        os.close(os.open("x", os.O_WRONLY | os.O_CREAT, 0o600, dir_fd=fd))
    assert (root / "moved" / "x").exists() and not (victim.parent / "x").exists()


def test_read_refuses_fifo_without_blocking(mode: str, box: tuple[Path, Path]) -> None:
    root, _ = box
    os.mkfifo(root / "sub" / "pipe")
    with pytest.raises(NotRegular, match="not a regular file"):
        beneath.read(root, "sub/pipe", 100)
    with pytest.raises(NotRegular):
        beneath.append(root, "sub/pipe", b"x")


def test_read_is_capped_and_tail_reads_the_end(mode: str, box: tuple[Path, Path]) -> None:
    root, _ = box
    (root / "big").write_bytes(b"a" * 100 + b"END")
    assert beneath.read(root, "big", 10) == b"a" * 11
    assert beneath.read_tail(root, "big", 3) == b"END"


def test_remove_deletes_a_tree_without_following_links_inside(
        mode: str, box: tuple[Path, Path]) -> None:
    root, victim = box
    tree = root / "sub" / "reports"
    (tree / "deep").mkdir(parents=True)
    (tree / "deep" / "f").write_text("x")
    (tree / "to-keys").symlink_to(victim.parent)
    (tree / "deep").chmod(0o555)
    assert beneath.remove(root, "sub/reports")
    assert not tree.exists() and victim.read_bytes() == SECRET
    assert not beneath.remove(root, "sub/reports")


def test_remove_of_symlink_removes_the_link_only(mode: str, box: tuple[Path, Path]) -> None:
    root, victim = box
    (root / "ask").symlink_to(victim.parent)
    assert beneath.remove(root, "ask")
    assert not (root / "ask").is_symlink() and victim.read_bytes() == SECRET


def test_makedirs_clears_planted_links_only_when_asked(mode: str,
                                                      box: tuple[Path, Path]) -> None:
    root, victim = box
    (root / "results").symlink_to(victim.parent)
    with pytest.raises(SymlinkRefused):
        beneath.makedirs(root, "results/probe/0")
    beneath.makedirs(root, "results/probe/0", clear=True)
    assert (root / "results" / "probe" / "0").is_dir()
    assert not (root / "results").is_symlink()
    assert sorted(os.listdir(victim.parent)) == ["forge-token"]


def test_lstat_reports_a_symlink_without_following(mode: str, box: tuple[Path, Path]) -> None:
    root, victim = box
    (root / "l").symlink_to(victim)
    info = beneath.lstat(root, "l")
    assert info is not None and info.st_size != len(SECRET)
    assert beneath.lstat(root, "missing") is None


def test_chmod_refuses_symlink(mode: str, box: tuple[Path, Path]) -> None:
    root, victim = box
    (root / "l").symlink_to(victim)
    before = victim.stat().st_mode
    with pytest.raises(SymlinkRefused):
        beneath.chmod(root, "l", 0o777)
    assert victim.stat().st_mode == before


def test_root_that_is_a_symlink_is_refused(mode: str, box: tuple[Path, Path]) -> None:
    root, victim = box
    (root.parent / "alias").symlink_to(victim.parent)
    with pytest.raises(SymlinkRefused):
        beneath.read(root.parent / "alias", "forge-token", 100)


def test_openat2_is_used_when_the_kernel_has_it(tmp_path: Path) -> None:
    beneath._state.pop("works", None)
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "f").write_text("x")
    assert beneath.read(tmp_path, "d/f", 10) == b"x"
    assert beneath.openat2_available()  # kernel 5.6+ on x86_64/aarch64 (here: 6.18)


def test_symlink_pointing_inside_the_root_is_refused_too(mode: str,
                                                        box: tuple[Path, Path]) -> None:
    root, _ = box
    (root / "sub" / "f").write_text("x")
    (root / "alias").symlink_to("sub")
    with pytest.raises(SymlinkRefused, match="alias is a symlink"):
        beneath.read(root, "alias/f", 10)


def test_write_clears_a_directory_in_the_way_only_when_asked(mode: str,
                                                            box: tuple[Path, Path]) -> None:
    root, _ = box
    (root / "sub" / "status.json" / "deep").mkdir(parents=True)
    with pytest.raises(IsADirectoryError):
        beneath.write(root, "sub/status.json", b"{}")
    beneath.write(root, "sub/status.json", b"{}", clear=True)
    assert (root / "sub" / "status.json").read_bytes() == b"{}"


def _nest(root: Path, depth: int) -> None:
    """``a/a/a/...`` ``depth`` directories deep under ``root``, a file ``f`` in each
    (made through descriptors: the deepest paths are far beyond ``PATH_MAX``)."""
    fd = os.open(root, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.close(os.open("f", os.O_CREAT | os.O_WRONLY, 0o600, dir_fd=fd))
        os.mkdir("a", dir_fd=fd)
        deeper = os.open("a", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(fd)


def test_a_tree_nested_deeper_than_the_recursion_limit_is_walked_and_removed(
        tmp_path: Path) -> None:
    """Issue 46: ``walk_files`` and ``remove`` recursed a level per directory; an agent's
    workspace nesting 1,500 directories made them raise RecursionError in the tick
    that cleaned it, at every tick (and a descriptor per level runs out before long).
    One directory is open at a time now, whatever the depth."""
    import resource
    import sys

    depth = sys.getrecursionlimit() + 200
    tree = tmp_path / "ws"
    tree.mkdir()
    _nest(tree, depth)
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(256, hard), hard))
    try:
        seen = [rel for rel, _ in beneath.walk_files(tree)]
        assert len(seen) == 2 * depth
        assert seen[:3] == ["a", "a/a", "a/a/a"] and seen[-1] == "f"
        assert "a/" * (depth - 1) + "f" in seen
        assert beneath.remove(tmp_path, "ws")
    finally:
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
    assert not tree.exists()


def test_a_walk_refuses_to_climb_out_of_a_directory_moved_while_it_was_walked(
        tmp_path: Path) -> None:
    """The walk climbs back through ``..``: a directory the agent moved meanwhile (to
    outside the root) is refused, never climbed out of into the kernel's files."""
    tree = tmp_path / "ws"
    (tree / "a" / "b").mkdir(parents=True)
    (tree / "a" / "b" / "f").write_text("x")
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / "keys").write_text("secret")
    walk = beneath.walk_files(tree)
    assert [next(walk)[0], next(walk)[0]] == ["a", "a/b"]
    os.rename(tree / "a", tmp_path / "kernel" / "a")  # the walk is inside a/b
    with pytest.raises(SymlinkRefused, match="moved while"):
        list(walk)
