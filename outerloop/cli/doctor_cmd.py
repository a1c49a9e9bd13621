"""``outerloop doctor``: a preflight of every precondition (``outerloop/doctor/``).

Prints one line per check (``ok``, ``warn`` or ``FAIL``, what was found, and for a
problem the fix), or ``--json``; exits 1 if any check failed (warnings do not).
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from outerloop.config import home_path, load_settings


@click.command()
@click.option("--home", type=click.Path(path_type=Path), default=None,
              help="The home directory (default: $OUTERLOOP_HOME or ~/.outerloop).")
@click.option("--json", "as_json", is_flag=True, help="Machine-readable output.")
def doctor(home: Path | None, as_json: bool) -> None:
    """Check every precondition: home, disk, git, Slurm and each placement, forge,
    agent CLI, model key and endpoint, the tick driver."""
    from outerloop.doctor import Check, run_checks

    root = home_path(home)
    if not root.is_dir():
        results = [Check("home", "fail", f"no home at {root}", f"outerloop init --home {root}")]
    else:
        results = run_checks(load_settings(root, require_home=False))
    failed = any(r.status == "fail" for r in results)
    if as_json:
        click.echo(json.dumps({"ok": not failed, "checks": [r.as_dict() for r in results]},
                              indent=2))
    else:
        for result in results:
            click.echo(result.line())
    if failed:
        raise SystemExit(1)


COMMANDS: list[click.Command] = [doctor]
