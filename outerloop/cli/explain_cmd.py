"""``outerloop explain``: why a run did what it did, replayed from its ledger facts."""

from __future__ import annotations

from pathlib import Path

import click

from outerloop.cli.json_out import emit, json_option


@click.command()
@click.argument("run", required=False)
@click.option("--issue", "issue", default=None, metavar="OWNER/NAME#N",
              help="Explain every run that answered this issue (and why it waited).")
@click.option("--home", type=click.Path(path_type=Path), default=None,
              help="The home directory (default: $OUTERLOOP_HOME or ~/.outerloop).")
@json_option
def explain(run: str | None, issue: str | None, home: Path | None, as_json: bool) -> None:
    """A timeline of RUN's decisions (claimed, admitted, each leg and why it started,
    refusals, gate verdicts, review, the PR, the ending), each naming the ledger lines
    that caused it. A replay of the fold over the run's facts: it reads, never writes."""
    from outerloop.config import home_path
    from outerloop.explain import facts as fx
    from outerloop.explain import render
    from outerloop.explain.timeline import TimelineStep, explain_run, issue_waits

    if (run is None) == (issue is None):
        raise click.UsageError("give a RUN or --issue OWNER/NAME#N (one of them)")
    where = home_path(home)
    if not (where / "ledger").is_dir():
        raise fx.UnknownRun(f"home {where} has no ledger; fix: give --home, or run "
                            f"`outerloop init` first")
    sections: list[tuple[str, list[TimelineStep]]] = []
    if run is not None:
        sections.append((f"run {run}", explain_run(run, fx.run_facts(where, run))))
    else:
        assert issue is not None
        repo, _, number = issue.rpartition("#")
        if not repo or "/" not in repo or not number.isdigit():
            raise click.BadParameter(f"{issue!r} is not OWNER/NAME#N", param_hint="--issue")
        runs, waits = fx.issue_facts(where, repo, int(number))
        sections.append((f"issue {repo}#{number}", issue_waits(waits)))
        sections.extend((f"run {r}", explain_run(r, fx.run_facts(where, r))) for r in runs)
    if as_json:
        flat = sorted((d for _, ds in sections for d in ds), key=lambda d: d.at) \
            if issue is not None else sections[0][1]
        emit(decisions=render.as_json(flat))
        return
    click.echo("\n".join(render.text(title, ds) for title, ds in sections), nl=False)


COMMANDS = [explain]
