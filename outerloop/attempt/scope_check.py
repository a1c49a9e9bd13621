"""What the kernel refuses of a staged working tree before it launches, seals or
measures anything: a repository of the agent's own or a submodule in it (before any
git process lists it), too big to hash, unsealable, eval-only files read, a secret in it,
symlinks out of the workspace or the scope, tracked paths outside the contract's
scope (each named, with why when no contract could open it)."""

from __future__ import annotations

from outerloop.attempt.candidate import (
    Snapshot,
    eval_only_refusal,
    size_problem,
    snapshot,
    unsealable,
)
from outerloop.attempt.context import RunContext
from outerloop.attempt.seal_stage import SealRefused
from outerloop.attempt.seal_walk import scan
from outerloop.contract_scope import path_violation, scope_violations
from outerloop.errors import ForgeUnavailable
from outerloop.run.workspace import changed_paths, files_with, symlinks_in, tree_of
from outerloop.sandbox.links import escaping_links
from outerloop.sandbox.secrets import known_secrets, refusal_note


def scope_problem(ctx: RunContext, report: str | None = None) -> tuple[str | None, Snapshot]:
    """(refusal for the agent or None, the candidate snapshot of the working tree).

    New files outside the scope are left out of the snapshot (and noted at the next
    wake); an edit to a tracked path outside the scope is refused."""
    assert ctx.run.base_sha is not None
    found = scan(ctx.paths.ws)
    unsafe = unsealable(ctx.paths, ctx.run.base_sha, found)
    if unsafe:  # before any git process lists the tree: names and lstat only
        return unsafe, Snapshot(tree_of(ctx.paths, ctx.run.base_sha))
    too_big = size_problem(ctx.paths, ctx.run.base_sha)
    if too_big:  # before git hashes anything: a huge file would outlive its timeout
        return too_big, Snapshot(tree_of(ctx.paths, ctx.run.base_sha))
    try:
        shot = snapshot(ctx.paths, ctx.run.base_sha, ctx.contract, report, found,
                        on_line=ctx.run.line is not None)
    except SealRefused as exc:  # a FIFO, a tree that changed while it was read
        return str(exc), Snapshot(tree_of(ctx.paths, ctx.run.base_sha))
    except ForgeUnavailable as exc:  # git timed out: say so to the agent, do not die
        return (f"Refused: the working tree could not be sealed ({exc}). Make it smaller "
                f"(fewer or smaller files) and stage again; nothing was launched, sealed "
                f"or charged."), Snapshot(tree_of(ctx.paths, ctx.run.base_sha))
    held = eval_only_refusal(shot.eval_only)
    if held:
        return held, shot
    changed = changed_paths(ctx.paths, ctx.run.base_sha, shot.tree)
    bad = scope_violations(ctx.contract, changed)
    leaked = files_with(ctx.paths, shot.tree, changed, known_secrets(ctx.settings))
    if leaked:
        return refusal_note([f"the working tree ({', '.join(leaked[:20])})"]) + (
            " Nothing was launched, sealed or charged."), shot
    links = escaping_links(symlinks_in(ctx.paths, shot.tree, changed),
                           lambda p: not scope_violations(ctx.contract, [p]))
    if links:
        return (f"Refused: these symlinks point outside the workspace or out of scope: "
                f"{'; '.join(links[:20])}. Replace them with regular files and stage again; "
                f"nothing was launched, sealed or charged."), shot
    if bad:
        allowed = ", ".join(ctx.contract.scope.allowed)
        return (f"Refused: these paths are outside the scope this contract allows "
                f"({allowed}): {', '.join(_named_why(ctx, p) for p in bad[:20])}. Revert "
                f"them and stage again; nothing was launched, sealed or charged."), shot
    return None, shot


def _named_why(ctx: RunContext, path: str) -> str:
    """``path``, with why when no contract could open it (the dependency lock, ...)."""
    why = path_violation(ctx.contract, path) or ""
    return f"{path} ({why})" if why.startswith("forbidden") else path
