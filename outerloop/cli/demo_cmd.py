"""``outerloop demo``: one research run end to end on the embedded defaults."""

from __future__ import annotations

import sys
from pathlib import Path

import click

from outerloop.errors import OuterloopError


class _StatusLine:
    """One line rewritten in place on a terminal; plain lines (only on change) elsewhere."""

    def __init__(self) -> None:
        self.tty = sys.stdout.isatty()
        self.last = ""

    def __call__(self, text: str) -> None:
        if self.tty:
            click.echo("\r\033[K" + text, nl=False)
        elif text.split("] ", 1)[-1] != self.last.split("] ", 1)[-1]:
            click.echo(text)
        self.last = text

    def close(self) -> None:
        if self.tty and self.last:
            click.echo("")


@click.command()
@click.option("--home", type=click.Path(path_type=Path), default=None,
              help="Where to build the demo home (default: a new temporary directory).")
@click.option("--timeout", "timeout_s", type=float, default=170.0, show_default=True,
              help="Seconds to wait for the run to reach review.")
def demo(home: Path | None, timeout_s: float) -> None:
    """Run the whole loop on a bundled example: local forge, local jobs, scripted agent.

    No account, no cluster, no API key. Ends when the agent's pull request is open.
    """
    from outerloop.demo import DEMO_TARGET, run_demo

    if home is not None and home.exists() and any(home.iterdir()):
        raise OuterloopError(f"{home} is not empty; fix: pick a new directory or omit --home")
    click.echo("outerloop demo: a maintainer opens an issue on demo/tinytsp; an agent "
               "takes it, experiments, and submits; the kernel measures and publishes.")
    line = _StatusLine()
    try:
        result = run_demo(home, timeout_s=timeout_s, say=line)
    finally:
        line.close()
    run, h = result.run, result.settings.home
    if run.pr_number is None:
        raise OuterloopError(f"the run ended {run.ending} without a pull request; read its "
                             f"report: outerloop forge issue show {result.issue} --home {h}")
    from outerloop.forge.local import LocalForge

    pr = LocalForge(h / "forge", result.settings.forge.login).get_pr(DEMO_TARGET, run.pr_number)
    measured = [ln for ln in pr.body.splitlines() if ln.startswith(("- baseline:", "- candidate:",
                                                                    "- seeds:", "- gain:",
                                                                    "- needed:"))]
    click.echo(f"\nPull request #{pr.number} is open: {pr.title}")
    for ln in measured:
        click.echo(f"  {ln[2:]}")
    click.echo(f"""
Read it:        outerloop forge pr show {pr.number} --home {h}
See the diff:   outerloop forge pr diff {pr.number} --home {h}
Comment:        outerloop forge pr comment {pr.number} --body "..." --home {h}
Merge it:       outerloop forge pr merge {pr.number} --home {h}
                then: outerloop tick --home {h}   (the run ends 'merged', the issue is told)
Runs and jobs:  outerloop status --home {h}
The ledger:     git -C {h / 'ledger'} log --stat   (one commit per tick that recorded events)
Run files:      {h / 'runs' / run.run_id}  (prompts, job logs, the agent's workspace)
Board:          {h / 'board' / 'index.html'}  (outerloop board --serve --home {h})""")
COMMANDS: list[click.Command] = [demo]
