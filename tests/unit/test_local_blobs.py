"""``local_blobs.file_at``: a file at a commit is read once while that commit stays the
one read; a moved commit, a branch name, a file not there (yet) or a damaged memo is
read again."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from outerloop.forge.local_blobs import MEMO_DIR, file_at

SHA_A = "a" * 40
SHA_B = "b" * 40


class Reads:
    def __init__(self, answers: dict[str, bytes | None]) -> None:
        self.answers = answers
        self.asked: list[str] = []

    def at(self, sha: str) -> Callable[[], bytes | None]:
        def read() -> bytes | None:
            self.asked.append(sha)
            return self.answers[sha]
        return read


def test_the_same_commit_is_read_once_and_a_moved_one_again(tmp_path: Path) -> None:
    reads = Reads({SHA_A: b"one\n", SHA_B: None, "main": b"branch\n"})
    assert file_at(tmp_path, "o/r", ".outerloop.yaml", SHA_A, reads.at(SHA_A)) == b"one\n"
    assert file_at(tmp_path, "o/r", ".outerloop.yaml", SHA_A, reads.at(SHA_A)) == b"one\n"
    assert reads.asked == [SHA_A]
    assert file_at(tmp_path, "o/r", ".outerloop.yaml", SHA_B, reads.at(SHA_B)) is None
    assert file_at(tmp_path, "o/r", ".outerloop.yaml", SHA_B, reads.at(SHA_B)) is None
    assert reads.asked == [SHA_A, SHA_B, SHA_B]  # nothing there: not kept, asked again
    assert file_at(tmp_path, "o/r", ".outerloop.yaml", "main", reads.at("main")) == b"branch\n"
    assert file_at(tmp_path, "o/r", ".outerloop.yaml", "main", reads.at("main")) == b"branch\n"
    assert reads.asked == [SHA_A, SHA_B, SHA_B, "main", "main"]


def test_another_repository_or_path_is_its_own_entry(tmp_path: Path) -> None:
    reads = Reads({SHA_A: b"x"})
    file_at(tmp_path, "o/r", "a.yaml", SHA_A, reads.at(SHA_A))
    file_at(tmp_path, "o/s", "a.yaml", SHA_A, reads.at(SHA_A))
    file_at(tmp_path, "o/r", "b.yaml", SHA_A, reads.at(SHA_A))
    assert len(reads.asked) == 3


def test_a_damaged_memo_is_read_past(tmp_path: Path) -> None:
    reads = Reads({SHA_A: b"one\n"})
    file_at(tmp_path, "o/r", "a.yaml", SHA_A, reads.at(SHA_A))
    (memo,) = (tmp_path / MEMO_DIR).iterdir()
    memo.write_text('{"repo": "o/r", "path": "a.yaml", "sha": "' + SHA_A + '", "body": "!!"}')
    assert file_at(tmp_path, "o/r", "a.yaml", SHA_A, reads.at(SHA_A)) == b"one\n"
    memo.write_text("not json")
    assert file_at(tmp_path, "o/r", "a.yaml", SHA_A, reads.at(SHA_A)) == b"one\n"
    assert len(reads.asked) == 3
