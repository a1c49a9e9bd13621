"""A pair job copies a side's outputs for the scorer without following what the side
left: a link is refused, a missing path is named, a directory comes whole."""

from __future__ import annotations

from pathlib import Path

from outerloop.attempt.measure import _copy_outputs


def test_outputs_file_is_copied_when_it_is_a_regular_file(tmp_path: Path) -> None:
    tree, dest = tmp_path / "tree", tmp_path / "dest"
    (tree / "out").mkdir(parents=True)
    (tree / "out" / "predictions.csv").write_text("1,a\n")
    assert _copy_outputs(tree, "out/predictions.csv", dest) is None
    assert (dest / "predictions.csv").read_text() == "1,a\n"


def test_outputs_directory_is_copied_whole_when_it_holds_only_files(tmp_path: Path) -> None:
    tree, dest = tmp_path / "tree", tmp_path / "dest"
    (tree / "out" / "sub").mkdir(parents=True)
    (tree / "out" / "a.txt").write_text("a")
    (tree / "out" / "sub" / "b.txt").write_text("b")
    assert _copy_outputs(tree, "out", dest) is None
    assert (dest / "out" / "a.txt").read_text() == "a"
    assert (dest / "out" / "sub" / "b.txt").read_text() == "b"


def test_outputs_link_is_refused_when_it_points_at_a_file_of_the_kernel(
        tmp_path: Path) -> None:
    secret = tmp_path / "keys" / "forge-token"
    secret.parent.mkdir()
    secret.write_text("ghp_secret")
    tree, dest = tmp_path / "tree", tmp_path / "dest"
    (tree / "out").mkdir(parents=True)
    (tree / "out" / "predictions.csv").symlink_to(secret)
    problem = _copy_outputs(tree, "out/predictions.csv", dest)
    assert problem is not None and "link" in problem
    assert not any(p.is_file() and p.read_text() == "ghp_secret" for p in dest.rglob("*"))


def test_outputs_link_inside_a_directory_is_refused_when_copying_it(tmp_path: Path) -> None:
    tree, dest = tmp_path / "tree", tmp_path / "dest"
    (tree / "out").mkdir(parents=True)
    (tree / "out" / "leak").symlink_to("/etc/hostname")
    problem = _copy_outputs(tree, "out", dest)
    assert problem is not None and "out/leak" in problem


def test_missing_outputs_are_named_when_the_command_wrote_none(tmp_path: Path) -> None:
    (tmp_path / "tree").mkdir()
    problem = _copy_outputs(tmp_path / "tree", "out/predictions.csv", tmp_path / "dest")
    assert problem == "the benchmark's command wrote no out/predictions.csv (its outputs)"
