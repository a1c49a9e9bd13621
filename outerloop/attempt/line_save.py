"""A hand-over on a research line: the agent's work tree, its memory included, saved on
its line (``run/lines.py``) at the end of each leg, for the tick to push.

The tree is read as data (``candidate.line_tree``: no git process reads a byte, a
config or an attribute of it) and scanned for known secret values like any agent text
(``sandbox.secrets``): a file holding one is kept at its previous version on the line
(never pushed), named in the ``line_saved`` event and in a note to the agent. A tree
the kernel cannot read as data (a repository of the agent's own, a FIFO) is not saved:
a warning note, and the line keeps its previous commit; the agent is told the same
thing at its next staged request anyway.

A memory file (``line_paths.memory_path``) that is not a regular file (a symbolic link,
say to ``/etc/passwd``: never followed) or is over ``lines.MAX_MEMORY_FILE_BYTES`` is
kept at its previous version too, unread (neither the secret scan nor the brief reads
it), named in ``line_saved`` (``refused``) and in a note to the agent.
"""

from __future__ import annotations

from outerloop.attempt.candidate import keep_base_at, line_tree
from outerloop.attempt.context import RunContext
from outerloop.attempt.seal_stage import tree_entries, write_tree
from outerloop.errors import OuterloopError
from outerloop.ledger import events as ev
from outerloop.run import lines
from outerloop.run.workspace import changed_paths, files_with
from outerloop.sandbox.secrets import known_secrets

SECRET_INDEX = "line.secret.index"


def save_on_line(ctx: RunContext, leg: int) -> None:
    """Save the work tree on the run's line after leg ``leg`` (nothing without a line,
    nothing when it did not change)."""
    line = ctx.run.line
    if line is None or not line.head:
        return
    try:
        tree = line_tree(ctx.paths, line.head, ctx.contract)
        refused = lines.unfit_memory(ctx.paths, tree)
        changed = [p for p in changed_paths(ctx.paths, line.head, tree) if p not in refused]
        leaked = files_with(ctx.paths, tree, changed, known_secrets(ctx.settings))
        if leaked or refused:  # those stay as the line had them: nothing secret is pushed
            entries = tree_entries(ctx.paths.kernel_git, tree)
            keep_base_at(entries, tree_entries(ctx.paths.kernel_git, line.head),
                         {*leaked, *refused}.__contains__)
            tree = write_tree(ctx.paths, entries, ctx.paths.root / SECRET_INDEX)
        sha = lines.save_line(ctx.paths, line.head, tree, _message(ctx, leg))
    except OuterloopError as exc:  # SealRefused, git failing or timing out
        ctx.append(ev.Note(level="warning", text=f"leg {leg}'s work tree was not saved on "
                           f"the line {line.branch} (it keeps {line.head[:12]}): "
                           f"{str(exc)[:300]}"))
        return
    if sha == line.head and leaked == line.withheld and refused == line.refused:
        return
    ctx.append(ev.LineSaved(sha=sha, leg=leg, withheld=leaked, refused=refused))
    ctx.refresh()


def _message(ctx: RunContext, leg: int) -> str:
    return (f"{ctx.run.agent}: run {ctx.run.run_id}, after leg {leg}\n\n"
            f"The agent's work tree at its hand-over, saved on its research line by "
            f"outerloop (the line is the agent's notebook; what is published is cut from "
            f"the base).\n")


def withheld_note(withheld: list[str], refused: list[str] | None = None) -> str | None:
    """The note to the agent whose line kept files back (a secret in them, or a memory
    file that is not a regular file of a sane size), or None."""
    said = []
    if withheld:
        said.append(f"Not saved on your line (each holds a secret value outerloop knows, "
                    f"so it stays as your line had it): {', '.join(withheld[:20])}. "
                    f"Remove the secret from them.")
    if refused:
        said.append(f"Memory files not saved on your line (each stays as your line had "
                    f"it): {', '.join(refused[:20])}. A memory file must be a regular "
                    f"file (never a symbolic link) of at most "
                    f"{lines.MAX_MEMORY_FILE_BYTES} bytes: keep your notes short.")
    return " ".join(said) or None
