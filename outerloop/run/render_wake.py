"""The wake: the update a session resumes with, shrunk to fit ``MAX_WAKE_CHARS`` (its
untrusted parts give way first, every cut marked; the shape found by bisection)."""

from __future__ import annotations

from collections.abc import Callable

from pydantic import BaseModel, ConfigDict

from outerloop.run.render import (
    MAX_COMMENT_CHARS,
    MAX_TAIL_CHARS,
    MAX_WAKE_CHARS,
    MIN_COMMENT_CHARS,
    WakeInputs,
    capped_fence,
    render_template,
)


class _WakeShape(BaseModel):
    """How much of a wake's untrusted text is shown; shrunk until the wake fits."""

    model_config = ConfigDict(frozen=True)

    tail_chars: int = MAX_TAIL_CHARS
    comment_chars: int = MAX_COMMENT_CHARS
    results_shown: int
    feedback_shown: int
    notes_shown: int


def _render_wake_shaped(inputs: WakeInputs, shape: _WakeShape) -> str:
    def tail(text: str) -> str:
        return capped_fence(text, shape.tail_chars, keep="tail")

    return render_template(
        "wake.md.j2",
        i=inputs,
        shape=shape,
        results=inputs.results[: shape.results_shown],
        results_hidden=len(inputs.results) - shape.results_shown,
        feedback=inputs.feedback[: shape.feedback_shown],
        feedback_hidden=len(inputs.feedback) - shape.feedback_shown,
        notes=inputs.notes[: shape.notes_shown],
        notes_hidden=len(inputs.notes) - shape.notes_shown,
        tail=tail,
        shortened=shape.tail_chars < MAX_TAIL_CHARS
        or shape.results_shown < len(inputs.results),
    )


def _largest_fitting(low: int, high: int, fits: Callable[[int], bool]) -> int | None:
    """The largest n in [low, high] with ``fits(n)`` (assumed monotone), or None."""
    if not fits(low):
        return None
    while low < high:
        middle = (low + high + 1) // 2
        if fits(middle):
            low = middle
        else:
            high = middle - 1
    return low


def render_wake(inputs: WakeInputs) -> str:
    """The update a wake resumes the session with, at most ``MAX_WAKE_CHARS`` long.

    When the update would be longer, the results section gives way first (output tails
    shortened evenly, then later results listed as a count), then reviewer comments
    (shortened to ``MIN_COMMENT_CHARS``, then counted), then kernel notes; every cut is
    marked. The shape is found by bisection, so the outcome is still a pure function.
    """
    shape = _WakeShape(results_shown=len(inputs.results),
                       feedback_shown=len(inputs.feedback), notes_shown=len(inputs.notes))

    def fits(candidate: _WakeShape) -> bool:
        return len(_render_wake_shaped(inputs, candidate)) <= MAX_WAKE_CHARS

    def fits_with(base: _WakeShape, knob: str) -> Callable[[int], bool]:
        return lambda n: fits(base.model_copy(update={knob: n}))

    knobs: list[tuple[str, int]] = [
        ("tail_chars", 0),
        ("results_shown", 0),
        ("comment_chars", MIN_COMMENT_CHARS),
        ("feedback_shown", 0),
        ("notes_shown", 0),
    ]
    for knob, floor in knobs:
        if fits(shape):
            break
        current = int(getattr(shape, knob))
        best = _largest_fitting(min(floor, current), current, fits_with(shape, knob))
        shape = shape.model_copy(update={knob: min(floor, current) if best is None else best})
    return _render_wake_shaped(inputs, shape)
