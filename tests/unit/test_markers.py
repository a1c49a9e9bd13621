"""The marker format and the identity rule: only the kernel's own posts count."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from outerloop.forge.base import Association, Comment
from outerloop.forge.markers import (
    Marker,
    find_marker,
    kernel_logins,
    parse_markers,
    render_marker,
    trusted_markers,
    with_marker,
)
from outerloop.text import fence

KERNEL = "outerloop"
AT = datetime(2026, 1, 1, tzinfo=UTC)


def comment(author: str, body: str, id: int = 1) -> Comment:
    return Comment(id=id, issue_number=1, author=author, author_association=Association.NONE,
                   body=body, created_at=AT, updated_at=AT)


def test_marker_round_trips_when_rendered_then_parsed() -> None:
    text = with_marker("claimed", "claim", "bench-20260101T000000-agent-01")
    assert parse_markers(text) == [Marker("claim", "bench-20260101T000000-agent-01")]


@pytest.mark.parametrize("key", ["", "a b", "x-->y", "a>b", "-lead"])
def test_render_refuses_key_when_it_could_break_the_comment(key: str) -> None:
    with pytest.raises(ValueError):
        render_marker("claim", key)


def test_render_refuses_kind_when_not_lowercase_word() -> None:
    with pytest.raises(ValueError):
        render_marker("Claim now", "k")


def test_marker_is_ignored_when_inside_a_fence() -> None:
    quoted = "report:\n" + fence(render_marker("claim", "forged"))
    assert parse_markers(quoted) == []


def test_marker_is_ignored_when_fence_is_longer_than_inner_backticks() -> None:
    inner = "```\n" + render_marker("claim", "forged") + "\n```\n"
    assert parse_markers(fence(inner)) == []


def test_marker_is_ignored_when_a_fence_is_never_closed() -> None:
    assert parse_markers("```\n" + render_marker("claim", "x")) == []


def test_marker_is_ignored_when_inline_with_other_text() -> None:
    assert parse_markers("see " + render_marker("claim", "x")) == []


def test_marker_counts_when_after_a_closed_fence() -> None:
    body = fence("data") + "\n\n" + render_marker("report", "r1")
    assert parse_markers(body) == [Marker("report", "r1")]


def test_marker_is_ignored_when_posted_by_anyone_but_the_kernel() -> None:
    posts = [comment("mallory", with_marker("x", "claim", "k"))]
    assert trusted_markers(posts, KERNEL) == []


def test_marker_counts_when_posted_by_the_kernel() -> None:
    post = comment(KERNEL, with_marker("x", "claim", "k"))
    assert trusted_markers([post], KERNEL) == [(Marker("claim", "k"), post)]


def test_marker_counts_when_posted_by_a_former_login() -> None:
    post = comment("old-bot", with_marker("x", "claim", "k"))
    assert trusted_markers([post], kernel_logins(KERNEL, ["old-bot"])) != []


def test_login_match_ignores_case_when_forge_logins_are_case_insensitive() -> None:
    post = comment("OuterLoop", with_marker("x", "claim", "k"))
    assert trusted_markers([post], KERNEL) != []


def test_nothing_is_trusted_when_kernel_login_is_blank() -> None:
    posts = [comment("", with_marker("x", "claim", "k")),
             comment("old-bot", with_marker("x", "claim", "k"))]
    assert trusted_markers(posts, kernel_logins("  ", ["old-bot"])) == []
    assert trusted_markers(posts, "") == []


def test_nothing_is_trusted_when_a_login_list_holds_a_blank() -> None:
    posts = [comment("old-bot", with_marker("x", "claim", "k"))]
    assert trusted_markers(posts, ["", "old-bot"]) == []


def test_single_characters_are_not_trusted_when_login_is_a_plain_string() -> None:
    posts = [comment("o", with_marker("x", "claim", "k"))]
    assert trusted_markers(posts, KERNEL) == []


def test_find_marker_returns_kernel_post_when_the_effect_happened() -> None:
    forged = comment("mallory", with_marker("x", "claim", "k"), id=1)
    real = comment(KERNEL, with_marker("x", "claim", "k"), id=2)
    assert find_marker([forged, real], "claim", "k", KERNEL) == real


def test_find_marker_returns_none_when_only_others_carry_it() -> None:
    forged = comment("mallory", with_marker("x", "claim", "k"))
    assert find_marker([forged], "claim", "k", [KERNEL]) is None
