"""``outerloop explain``: why a run did what it did, replayed from its ledger facts; for
an issue, also what the next tick does with it (``explain/outlook.py``)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import click

from outerloop.cli.json_out import emit, json_option

if TYPE_CHECKING:
    from outerloop.explain.facts import Fact
    from outerloop.explain.timeline import TimelineStep


@click.command()
@click.argument("run", required=False)
@click.option("--issue", "issue", default=None, metavar="OWNER/NAME#N",
              help="Explain the issue: its waits, every run that answered it, and what "
                   "the next tick does with it (why it is not claimed).")
@click.option("--home", type=click.Path(path_type=Path), default=None,
              help="The home directory (default: $OUTERLOOP_HOME or ~/.outerloop).")
@json_option
def explain(run: str | None, issue: str | None, home: Path | None, as_json: bool) -> None:
    """A timeline of RUN's decisions (claimed, admitted, each leg and why it started,
    refusals, gate verdicts, review, the PR, the ending), each naming the ledger lines
    that caused it. A replay of the fold over the run's facts: it reads, never writes.
    With --issue, the issue's own decisions come first and its outlook last: intake's
    rule asked now, against the forge (no standing, not one benchmark named, a wait,
    claims spent, the target's contract not loading, an older issue first)."""
    from outerloop.config import home_path
    from outerloop.explain import facts as fx
    from outerloop.explain import render
    from outerloop.explain.timeline import explain_run

    if (run is None) == (issue is None):
        raise click.UsageError("give a RUN or --issue OWNER/NAME#N (one of them)")
    where = home_path(home)
    if run is not None:
        if not (where / "ledger").is_dir():
            raise fx.UnknownRun(f"home {where} has no ledger; fix: give --home, or run "
                                f"`outerloop init` first")
        from outerloop.explain.slot import run_slot, slot_text

        steps = explain_run(run, fx.run_facts(where, run))
        slot = run_slot(where, run)
        if as_json:
            emit(decisions=render.as_json(steps), **slot)
            return
        click.echo(render.text(f"run {run}", steps) + slot_text(run, slot), nl=False)
        return
    assert issue is not None
    repo, _, number = issue.rpartition("#")
    if not repo or "/" not in repo or not number.isdigit():
        raise click.BadParameter(f"{issue!r} is not OWNER/NAME#N", param_hint="--issue")
    runs, facts = fx.issue_facts(where, repo, int(number))
    own, outlook = _issue(where, repo, int(number), runs, facts)
    sections: list[tuple[str, list[TimelineStep]]] = [(f"issue {repo}#{number}", own)]
    sections.extend((f"run {r}", explain_run(r, fx.run_facts(where, r))) for r in runs)
    if as_json:
        emit(decisions=render.as_json(sorted((d for _, ds in sections for d in ds),
                                             key=lambda d: d.at)),
             outlook=outlook)
        return
    click.echo("\n".join(render.text(title, ds) for title, ds in sections), nl=False)


def _issue(home: Path, repo: str, number: int, runs: list[str],
           facts: list[Fact]) -> tuple[list[TimelineStep], dict[str, str | None]]:
    """The issue's own steps (the ledger's ``facts``, then the outlook) and the outlook
    for ``--json``; an error naming the issue when neither the ledger nor the forge
    knows it."""
    from outerloop.errors import NotFound, OuterloopError
    from outerloop.explain import facts as fx
    from outerloop.explain.outlook import issue_outlook
    from outerloop.explain.timeline import TimelineStep, issue_steps

    steps = issue_steps(facts)
    try:
        now = issue_outlook(home, repo, number)
    except NotFound:
        if runs or facts:
            return steps, {"decision": None, "reason": "the forge has no such issue"}
        raise
    except OuterloopError as exc:
        if not runs and not facts:
            raise fx.no_such_issue(home, repo, number, str(exc)) from None
        return steps, {"decision": None, "reason": f"the forge was not asked: {exc}"}
    steps.append(TimelineStep(at=now.at, decision=f"outlook-{now.decision}",
                              reason=f"the next tick: {now.reason}"))
    return steps, {"decision": now.decision, "reason": now.reason}


COMMANDS = [explain]
