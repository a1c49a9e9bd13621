"""The kernel never follows an agent's path: symlinks planted where kernel code writes.

Kernel code runs outside the sandbox. Before ``sandbox/beneath.py``, a hostile agent
planted symlinks in its own HOME and channel and the kernel followed them: the
scripted harness appended the agent's step output to the operator's ``[compute]
setup`` script through ``~/.scripted/<sid>.jsonl`` and truncated ``keys/forge-token``
through ``<sid>.json.tmp``; the live watcher read and deleted files in a directory
outside every grant through an ``ask/`` swapped mid-session. Each attack here runs
through real ticks, under the sandbox ``auto`` picks (Landlock here) and under
bubblewrap; each target stays byte-for-byte the same and the run goes on to its end.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from outerloop.config import Settings, load_settings
from outerloop.sandbox.resolve import available, bwrap_problem
from outerloop.sandbox.resolve import landlock_problem as landlock_unusable
from tests.security.fixtures import FORGE_TOKEN
from tests.support import make_home, open_issue, tick_until

pytestmark = [pytest.mark.security, pytest.mark.e2e]

OUTERLOOP_HOME = 'R=$(dirname "$(dirname "$(dirname "$HOME")")")'
"""The agent's shell works out the outerloop home from its HOME (a string: no access)."""
SETUP_SCRIPT = "#!/bin/sh\n# the operator's site setup, sourced by every job\nexport SITE=1\n"


def _plant_harness_state(setup: Path) -> str:
    """Link the scripted harness's transcript to the setup script and its state temp
    file to the forge token, wherever the harness keeps them (old and new places)."""
    return (f"{OUTERLOOP_HOME}; for f in \"$HOME\"/.scripted/*.json \"$HOME\"/../home-harness/"
            f"*.json; do d=$(dirname \"$f\"); s=$(basename \"$f\" .json); "
            f"rm -f \"$d/$s.jsonl\"; ln -s {setup} \"$d/$s.jsonl\"; "
            f"ln -sf \"$R/keys/forge-token\" \"$d/$s.json.tmp\"; done 2>/dev/null; true")


def _swap_ask() -> str:
    """Replace the watcher's ``ask/`` (checked at session start only) by a link to a
    directory outside every grant, and wait for a few polls."""
    return (f"{OUTERLOOP_HOME}; rm -rf .outerloop/ask && ln -s \"$R/cache/victim\" "
            f".outerloop/ask && sleep 1.5; rm -f .outerloop/ask; mkdir -p .outerloop/ask; true")


def _link_ask_file() -> str:
    """``ask/history.json`` itself a link to ``outerloop.toml``."""
    return (f"{OUTERLOOP_HOME}; ln -s \"$R/outerloop.toml\" .outerloop/ask/history.json && "
            f"sleep 1; true")


def hostile_script(path: Path, setup: Path) -> Path:
    legs: list[list[dict[str, Any]]] = [
        [
            {"shell": _plant_harness_state(setup)},
            {"shell": "echo 'this step output is agent text: $(cat keys/forge-token)'"},
            {"shell": _swap_ask()},
            {"shell": _link_ask_file()},
            {"syscall": "sleep"},  # nothing staged: the kernel starts the next leg at once
        ],
        [
            {"shell": "echo '# nothing' > report.md"},
            {"syscall": "stop --report report.md"},
        ],
    ]
    path.write_text(yaml.safe_dump({"legs": legs}, sort_keys=False))
    return path


BACKENDS = {"auto": "", "bwrap": '\n[sandbox]\nkind = "bwrap"\n'}


def _victims(settings: Settings, setup: Path) -> dict[Path, bytes]:
    home = settings.home
    victim = home / "cache" / "victim"
    victim.mkdir(parents=True)
    (victim / "queue.json").write_text('{"nonce": "0123456789abcdef"}\n')
    (victim / "history.json").write_text('{"nonce": "0123456789abcdef"}\n')
    keys = home / "keys" / "forge-token"
    keys.write_text(FORGE_TOKEN + "\n")
    keys.chmod(0o600)
    paths = [keys, setup, home / "outerloop.toml", victim / "queue.json",
             victim / "history.json"]
    return {p: p.read_bytes() for p in paths}


@pytest.mark.parametrize("kind", sorted(BACKENDS))
def test_symlinks_in_home_and_channel_reach_nothing_when_planted_by_a_session(
        tmp_path: Path, kind: str) -> None:
    setup = tmp_path / "site-setup.sh"
    setup.write_text(SETUP_SCRIPT)
    settings = make_home(tmp_path, hostile_script(tmp_path / "hostile.yaml", setup),
                         extra_toml=BACKENDS[kind])
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        '[compute]\nkind = "local"\n', f'[compute]\nkind = "local"\nsetup = ["source {setup}"]\n'
        f'pass_env = ["PYTHONPATH"]\n'))  # jobs run the kernel code under test
    settings = load_settings(settings.home)
    problem = bwrap_problem() if kind == "bwrap" else (
        None if available(settings.sandbox) is not None else landlock_unusable())
    if problem:
        pytest.skip(f"sandbox {kind} does not work here: {problem}")
    before = _victims(settings, setup)
    open_issue(settings, "Shorter tours", "Please try local search on tour.")

    state = tick_until(settings, lambda s: bool(s.runs) and all(r.ended for r in
                                                                 s.runs.values()),
                       timeout_s=180)

    changed = [str(p.relative_to(tmp_path)) for p, data in before.items()
               if not p.exists() or p.read_bytes() != data]
    assert changed == []
    (run,) = state.runs.values()
    assert run.ending == "negative-result" and run.legs == 2
