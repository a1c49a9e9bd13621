"""How alike two changes are (outerloop/change_sketch.py, issue 50 point 3): a change
that shares nearly all its changed lines with an earlier one repeats it; a new setting of
a parameter, another base or another benchmark does not."""

from __future__ import annotations

from outerloop.attempt.change_key import changed_lines
from outerloop.change_sketch import (
    NEAR_IDENTICAL,
    SKETCH_SIZE,
    exact_part,
    keyed,
    likeness,
    sketch,
)

BASE = b"def tour(points):\n    return nearest(points)\n"
SALT = "benchmark\0tour\0base\0tree-a\0"


def _key(exact: str, after: bytes, salt: str = SALT, before: bytes = BASE) -> str:
    return keyed(exact, sketch(changed_lines("solver/tour.py", before, after), salt))


def _two_opt(extra: str = "", steps: int = 12) -> bytes:
    body = "".join(f"    improved = swap(points, {n}) or improved\n" for n in range(steps))
    return (b"def tour(points):\n    improved = True\n" + body.encode()
            + extra.encode() + b"    return nearest(points)\n")


def test_a_change_that_shares_all_but_one_of_its_lines_repeats_an_earlier_one() -> None:
    earlier = _key("a" * 32, _two_opt())
    later = _key("b" * 32, _two_opt("    # one more note\n"))
    assert likeness(later, earlier) >= NEAR_IDENTICAL  # 13 of 14 lines: sampled
    small = _key("a" * 32, _two_opt(steps=8))
    one_more = _key("b" * 32, _two_opt("    # one more note\n", steps=8))
    assert likeness(one_more, small) == 0.9  # 9 of 10 lines, all in the sketch: exact


def test_a_new_setting_of_a_parameter_is_another_change() -> None:
    before = b"THRESHOLD = 0.4\n"
    earlier = _key("a" * 32, b"THRESHOLD = 0.5\n", before=before)
    later = _key("b" * 32, b"THRESHOLD = 0.6\n", before=before)
    assert likeness(later, earlier) < NEAR_IDENTICAL  # shares its removed line only


def test_half_the_same_lines_is_not_a_repeat() -> None:
    earlier = _key("a" * 32, _two_opt(steps=6))
    later = _key("b" * 32, _two_opt(steps=6).replace(b"swap", b"flip", 3))
    assert likeness(later, earlier) < NEAR_IDENTICAL


def test_the_same_lines_on_another_base_or_benchmark_share_nothing() -> None:
    earlier = _key("a" * 32, _two_opt())
    assert likeness(_key("b" * 32, _two_opt(), salt="benchmark\0tour\0base\0tree-b\0"),
                    earlier) == 0.0
    assert likeness(_key("b" * 32, _two_opt(), salt="benchmark\0time\0base\0tree-a\0"),
                    earlier) == 0.0


def test_the_exact_hash_decides_alone_and_a_key_without_a_sketch_is_only_alike_in_full() -> None:
    assert likeness(keyed("a" * 32, ""), "a" * 32) == 1.0
    assert likeness("a" * 32, _key("b" * 32, _two_opt())) == 0.0
    assert exact_part(_key("c" * 32, _two_opt())) == "c" * 32
    assert len(_key("c" * 32, _two_opt(steps=40)).split(".")[1]) == SKETCH_SIZE * 8


def test_changed_lines_count_each_occurrence_and_a_deleted_file_removes_all_its_lines() -> None:
    twice = changed_lines("p", b"a\n", b"a\nb\nb\n")
    assert sorted(twice) == ["p\0+\x000\0b", "p\0+\x001\0b"]
    assert changed_lines("p", b"a\nb\n", None) == ["p\0-\x000\0a", "p\0-\x000\0b"]
    assert changed_lines("p", b"x = 1  \n", b"x  =  1\n") == []  # whitespace aside
