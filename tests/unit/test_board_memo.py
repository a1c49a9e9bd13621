"""A board whose view did not change is not rendered again (``board_memo.py``): the
tick's board and the research-log record's, and what makes them render afresh."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from outerloop import board, board_memo
from outerloop.config import Settings, TargetSettings
from outerloop.kernel.lanes.record import plan_target
from tests.unit.test_board import TARGET, _climb, _stamp


def _settings(home: Path) -> Settings:
    return Settings(home=home, targets=[TargetSettings(repo=TARGET)])


def test_an_unchanged_board_is_left_as_it_is_and_a_changed_one_written(tmp_path: Path) -> None:
    settings, state = _settings(tmp_path), _climb()
    memo = board_memo.load(tmp_path)
    assert len(board.write_board(settings, state, memo=memo)) == 3
    board_memo.save(tmp_path, memo)
    memo = board_memo.load(tmp_path)  # as the next tick reads it
    assert board.write_board(settings, copy.deepcopy(state), memo=memo) == []
    later = copy.deepcopy(state)
    later.last_at = _stamp(4)
    assert len(board.write_board(settings, later, memo=memo)) == 3
    assert board.write_board(settings, later, memo=memo) == []
    (tmp_path / "board" / "CLIMB.md").write_text("edited\n")  # the files are not the memo's
    assert len(board.write_board(settings, later, memo=memo)) == 3
    (tmp_path / "board" / "status.json").unlink()
    assert len(board.write_board(settings, later, memo=memo)) == 3
    assert (tmp_path / "board" / "CLIMB.md").read_text() == board.render_board(
        settings, later)["CLIMB.md"]


def test_a_memo_of_other_code_or_unreadable_is_an_empty_one(tmp_path: Path) -> None:
    memo = board_memo.load(tmp_path)
    memo.remember("home", "k", "d")
    board_memo.save(tmp_path, memo)
    assert board_memo.load(tmp_path).rendered("home", "k") == "d"
    path = tmp_path / board_memo.MEMO_FILE
    kept = json.loads(path.read_text())
    path.write_text(json.dumps({**kept, "code": "another version"}))
    assert board_memo.load(tmp_path).boards == {}
    for text in ("{", "[]", json.dumps({**kept, "boards": {"home": ["k"]}})):
        path.write_text(text)
        assert board_memo.load(tmp_path).boards == {}


def test_equal_views_key_alike_and_another_view_differently(tmp_path: Path) -> None:
    settings, state = _settings(tmp_path), _climb()
    one = board.build_view(settings, state)
    assert board_memo.view_key(one) == board_memo.view_key(
        board.build_view(settings, copy.deepcopy(state)))
    later = copy.deepcopy(state)
    later.runs[next(iter(later.runs))].hypothesis = "Another idea\n\nbody"
    assert board_memo.view_key(board.build_view(settings, later)) != board_memo.view_key(one)


def test_the_record_lane_takes_a_known_boards_digest_without_rendering(tmp_path: Path) -> None:
    """The memo's digest for the target's view is the one the action carries (so nothing
    was rendered to learn it), and the same as a render gives."""
    settings, state = _settings(tmp_path), _climb()
    fresh = plan_target(state, TARGET, settings)
    assert fresh is not None
    memo = board_memo.load(tmp_path)
    remembered = plan_target(state, TARGET, settings, boards=memo)
    assert remembered == fresh
    (name, (key, digest)), = memo.boards.items()
    assert name == f"target:{TARGET}" and digest == fresh.board
    memo.boards[name] = (key, "0123456789abcdef")  # a digest only the memo knows
    told = plan_target(state, TARGET, settings, boards=memo)
    assert told is not None and told.board == "0123456789abcdef"
    assert told.files == fresh.files  # changed (not the last published): rendered to publish
