"""The fold cache's final runs: one text when pickled, a set when read."""

from __future__ import annotations

import pickle

import pytest

from outerloop.ledger.sweep import FinalRuns


def test_final_runs_round_trip_through_pickle_as_one_text() -> None:
    ids = {f"tour-{n:05d}-agent-01" for n in range(1000)}
    runs = FinalRuns(ids)
    blob = pickle.dumps(runs, protocol=pickle.HIGHEST_PROTOCOL)
    assert len(blob) < sum(len(i) + 1 for i in ids) + 200  # one text, not 1000 objects
    loaded = pickle.loads(blob)
    assert loaded == ids and len(loaded) == 1000 and "tour-00007-agent-01" in loaded
    assert "tour-01000-agent-01" not in loaded
    loaded.add("tour-01000-agent-01")
    again = pickle.loads(pickle.dumps(loaded))
    assert again == ids | {"tour-01000-agent-01"} and set(again) == again._set()


def test_no_final_runs_survive_a_round_trip_empty_and_false() -> None:
    empty = pickle.loads(pickle.dumps(FinalRuns()))
    assert not empty and len(empty) == 0 and empty == set() and "" not in empty
    empty.add("r1")
    assert empty and pickle.loads(pickle.dumps(empty)) == {"r1"}


def test_a_loaded_set_is_true_before_it_is_read() -> None:
    loaded = pickle.loads(pickle.dumps(FinalRuns({"r1"})))
    assert loaded and loaded._ids is None  # not made a set until asked
    assert "r1" in loaded and loaded._ids == {"r1"}


def test_a_run_id_with_a_newline_is_refused() -> None:
    with pytest.raises(ValueError, match="newline"):
        FinalRuns().add("a\nb")
