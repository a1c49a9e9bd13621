"""The prompt of an agent leg, and what it delivers.

A fresh session (the first leg, or no leg has ended with a session yet) gets the
brief, with the kernel's notes and the operator's messages; a wake gets the results,
the verdict, the reviewers' and operator's words not yet delivered, and the notes; a
refused leg gets its own prompt again. What a prompt carries is marked delivered by
its leg's ``LegEnded`` (``ev.LegEnded.delivered``).
"""

from __future__ import annotations

from dataclasses import dataclass

from outerloop.attempt import prompts
from outerloop.attempt.context import RunContext
from outerloop.attempt.line_save import withheld_note
from outerloop.attempt.steps import Leg
from outerloop.clock import parse_stamp, shown
from outerloop.run.render import FeedbackView, OperatorView


@dataclass(frozen=True)
class LegPrompt:
    text: str
    fresh: bool
    """A fresh session's brief (the leg's role is ``climb``), not a wake."""
    delivered: list[str]
    """The keys of the undelivered items this prompt carries."""


def leg_prompt(ctx: RunContext, step: Leg, number: int,
               session_job: str | None = None) -> LegPrompt:
    """The prompt of leg ``number`` for ``step``; writes the agent's views first
    (``session_job``: the job the leg runs in)."""
    run = ctx.run
    waiting = run.undelivered
    feedback = [FeedbackView(author=item.author, kind=item.kind, text=item.text,
                             where=item.where)
                for item in waiting.values() if not item.from_operator]
    told = {key: item for key, item in waiting.items() if item.from_operator}
    operator = [OperatorView(text=item.text, at=shown(parse_stamp(item.at)) + " UTC")
                for item in told.values()]
    prompts.write_views(ctx, step.results, session_job)
    if step.again is not None:
        # the refused leg's prompt, shown again with a note; nothing is marked delivered:
        # feedback or an operator's message that came after it is not in it (shown at
        # the next wake; what it does hold may show twice, never not at all)
        return LegPrompt(step.again, step.first, [])
    if step.first or run.session_id is None:
        # No leg has ended with a session yet (the first leg's job died, or its harness
        # never started): a fresh session knows nothing, so it gets the brief, with
        # what happened in between as a note (and the operator's messages: only those
        # are delivered by a brief, since no reviewer has a PR to comment on yet).
        text = prompts.brief(ctx, operator)
        if step.notes:
            text += "\n\n## Note from outerloop\n\n" + "\n\n".join(step.notes) + "\n"
        return LegPrompt(text, True, sorted(told))
    withheld = withheld_note(run.line.withheld, run.line.refused) if run.line is not None else None
    text = prompts.wake(ctx, number, list(step.results), step.verdict, feedback,
                        [*step.notes, *([withheld] if withheld else [])], operator)
    return LegPrompt(text, False, sorted(waiting))
