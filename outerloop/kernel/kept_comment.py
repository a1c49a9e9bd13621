"""A comment kept current (``EditComment``): the one kernel comment carrying a marker on
an issue holds the body the lane planned. Performed by posting it when the forge shows
none and editing it when it shows another body; looked up by marker and body, so an
intent left unsettled by a crash is settled by what the forge shows, and a retry sets
the same body again (never a second comment)."""

from __future__ import annotations

from outerloop.forge.base import Comment, Forge
from outerloop.kernel import actions as act
from outerloop.ledger.events import EffectResult


def _kept_body(action: act.EditComment) -> str:
    from outerloop.forge.markers import render_marker
    from outerloop.sandbox.secrets import neutralise_markers

    body = neutralise_markers(action.body.rstrip())
    return f"{body}\n\n{render_marker(action.marker_kind, action.marker_key)}\n"


def _kept_comment(action: act.EditComment, forge: Forge, logins: list[str]) -> Comment | None:
    from outerloop.forge.markers import find_marker

    comments = forge.list_comments(action.target, action.number)
    return find_marker(comments, action.marker_kind, action.marker_key, logins)


def edit_comment(action: act.EditComment, forge: Forge, logins: list[str]) -> EffectResult:
    """Post the comment, or edit the one the forge shows with its marker: a retry finds
    it (posted or edited) and sets the same body again, or nothing when it holds it."""
    body, found = _kept_body(action), _kept_comment(action, forge, logins)
    if found is None:
        return EffectResult(comment_id=forge.post_comment(action.target, action.number,
                                                          body).id)
    if found.body.strip() != body.strip():
        forge.edit_comment(action.target, action.number, found.id, body)
    return EffectResult(comment_id=found.id)


def find_edited(action: act.EditComment, forge: Forge,
                logins: list[str]) -> EffectResult | None:
    found = _kept_comment(action, forge, logins)
    if found is None or found.body.strip() != _kept_body(action).strip():
        return None
    return EffectResult(comment_id=found.id)
