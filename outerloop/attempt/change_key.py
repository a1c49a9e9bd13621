"""A submission's change key: what a repeat of the same change on the target shares.

The key hashes, for the run's benchmark and base tree, each path the submitted tree
changes against the base with its new content whitespace-normalised
(``normalised``), or that it was deleted. Two submissions with the same key change the
same files the same way, up to whitespace that does not move code (trailing blanks,
blank lines, line endings, runs of spaces inside a line; a line's indentation is kept:
in Python it is code). A submission whose key matches a submission the gate already
settled on the target (in any run: ``History.judged_change``) is told that verdict and
measured no more (``repeat_told``): it costs no pairs and no alpha. So is a change
near-identical to another run's (``change_sketch``: the key carries a sketch of its
changed lines, and a likeness of ``NEAR_IDENTICAL`` or more repeats); within one run only
the same change repeats, so an agent's own next step is measured.

The base tree is part of the key: once the default branch moved, the same change is
measured again (the base it is compared with changed, and so may the verdict), from the
new run's own share of the target's budget. Reading the files is the kernel's existing
git reads of the run's kernel repository (``changed_paths``, ``read_bytes_at``), which
never run content; a file that is not UTF-8 is keyed by its bytes.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter

from outerloop.attempt.context import RunContext
from outerloop.attempt.verdict_view import same_tree_verdict
from outerloop.change_sketch import exact_part, keyed, sketch
from outerloop.ledger.history import History, JudgedChange
from outerloop.run.workspace import changed_paths, read_bytes_at, tree_of

_INNER_SPACE = re.compile(r"(?<=\S)[ \t\f\v]+(?=\S)")


def normalised(content: bytes) -> bytes:
    """``content`` with whitespace that does not move code normalised: line endings to
    ``\\n``, trailing blanks and blank lines dropped, runs of spaces or tabs inside a line
    to one space; a line's indentation is kept (tabs expanded). Not UTF-8: as is."""
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return content
    lines = []
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        line = line.rstrip()
        if not line:
            continue
        body = line.lstrip()
        indent = line[:len(line) - len(body)].expandtabs(8)
        lines.append(indent + _INNER_SPACE.sub(" ", body))
    return "\n".join(lines).encode("utf-8")


def known_change(ctx: RunContext, tree: str, submission: int) -> tuple[str | None, str]:
    """(the refusal, ``tree``'s change key) for submission ``submission`` of the run:
    refused when ``tree`` is the base (no change), exactly an earlier submission's that
    the gate settled, or a change the gate settled on the target (``repeat_told``); a
    retry that already drew its seeds goes on measuring what it began to."""
    run = ctx.run
    assert run.base_sha is not None
    if tree == tree_of(ctx.paths, run.base_sha):
        return ("Refused: no code change. The working tree equals the base; there is "
                "nothing to measure."), ""
    earlier = same_tree_verdict(run, tree)
    if earlier is not None:
        return earlier, ""
    change = run.changes.get(submission) or change_key(ctx, tree)
    if submission in run.seeds:
        return None, change
    return repeat_told(ctx, change), change


def change_key(ctx: RunContext, tree: str) -> str:
    """The change key of ``tree`` against the run's base, for the run's benchmark: the
    exact hash, then the sketch of its changed lines (``change_sketch``)."""
    base = ctx.run.base_sha
    assert base is not None
    salt = f"benchmark\0{ctx.benchmark.name}\0base\0{tree_of(ctx.paths, base)}\0"
    digest = hashlib.sha256()
    digest.update(salt.encode())
    lines: list[str] = []
    for path in sorted(changed_paths(ctx.paths, base, tree)):
        content = read_bytes_at(ctx.paths, tree, path)
        digest.update(path.encode("utf-8", "surrogateescape") + b"\0")
        if content is None:
            digest.update(b"deleted\0")
        else:
            body = normalised(content)
            digest.update(f"{len(body)}\0".encode() + body)
        lines.extend(changed_lines(path, read_bytes_at(ctx.paths, base, path), content))
    return keyed(digest.hexdigest()[:32], sketch(lines, salt))


def changed_lines(path: str, before: bytes | None, after: bytes | None) -> list[str]:
    """``path``'s normalised lines removed and added between ``before`` and ``after``
    (None: no file), each once per occurrence: ``path``, ``-`` or ``+``, which
    occurrence, the line (bytes that are not UTF-8 as one line of their hex)."""
    old, new = Counter(_lines(before)), Counter(_lines(after))
    found: list[str] = []
    for sign, counted in (("-", old - new), ("+", new - old)):
        for line, times in counted.items():
            found.extend(f"{path}\0{sign}\0{n}\0{line}" for n in range(times))
    return found


def _lines(content: bytes | None) -> list[str]:
    if content is None:
        return []
    body = normalised(content)
    try:
        return body.decode("utf-8").split("\n")
    except UnicodeDecodeError:
        return [body.hex()]


def repeat_told(ctx: RunContext, change: str) -> str | None:
    """What the agent is told when ``change`` repeats a submission the gate settled on
    the target (this run's or another's), else None."""
    run = ctx.run
    own = next(((submission, verdict) for key, submission, verdict in run.judged_changes
                if exact_part(key) == exact_part(change)), None)
    if own is not None:
        return (f"Not measured: this change repeats submission {own[0]} of this run (the "
                f"same files changed the same way, whitespace aside), which the gate judged "
                f"{own[1]}. Submitting it again measures nothing new and spends nothing; "
                "change the code first.")
    found = History.of(ctx.state.runs, run.target).judged_change(change, besides=run.run_id)
    return None if found is None else _told(ctx, change, *found)


def _told(ctx: RunContext, change: str, found: JudgedChange, alike: float) -> str:
    earlier = ctx.state.runs.get(found.run)
    pr = found.pr if earlier is None else (earlier.pr_number or found.pr)
    link = (f"; its pull request: #{pr} of {ctx.run.target}" if pr is not None
            else "; it opened no pull request")
    same = exact_part(found.change) == exact_part(change)
    how = ("the same files changed the same way, whitespace aside" if same else
           f"near-identical: about {alike:.0%} of the changed lines are the same")
    return (f"Not measured: this change repeats run {found.run}'s submission "
            f"{found.submission} on {ctx.run.target} ({how}, on the same base and "
            f"benchmark), which the gate judged {found.verdict}{link}. Measuring it again "
            f"would spend the target's false-credit budget on a question already "
            f"answered; change the code first.")
