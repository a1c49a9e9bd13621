"""Every read command takes ``--json`` and prints one envelope; docs/operate.md's table
(``Machine-readable output``) names each of them (issue 51).

The command tree is walked from ``outerloop --help``'s group down: each visible command
is either a read command in the table, or an action listed here with what it changes.
A new command that is neither fails; so does a table row naming no command, or a read
command without ``--json``. Then each one is run with ``--json`` on a real home: one
JSON object on stdout, ``ok`` first; and each error (no home, a bad ``outerloop.toml``,
a bad argument) is the error envelope with the exit code the text form exits with.
"""

from __future__ import annotations

import json
from pathlib import Path

import click
import pytest
from click.testing import CliRunner, Result

from outerloop.cli import main
from outerloop.config import Settings
from tests.support import EXAMPLE_TARGET, TARGET, make_home

OPERATE = Path(__file__).resolve().parents[2] / "docs" / "operate.md"
SECTION = "## Machine-readable output (`--json`)"

ACTIONS: dict[str, str] = {
    "archive restore": "brings an archived run's files back into runs/",
    "board": "writes board/ (and serves it)",
    "demo": "makes a home and runs the whole loop",
    "end": "ends a run",
    "forge issue close": "closes an issue",
    "forge issue comment": "posts a comment",
    "forge issue edit": "edits an issue",
    "forge issue label": "labels an issue",
    "forge issue open": "opens an issue",
    "forge pr close": "closes a pull request",
    "forge pr comment": "posts a comment",
    "forge pr merge": "merges a pull request",
    "forge pr ready": "takes a pull request out of draft",
    "forge pr review": "posts a review",
    "forge repo import": "creates a repository",
    "forge user add": "gives a login a role",
    "init": "creates a home",
    "line reset": "starts an agent slot's research line afresh",
    "message": "records an operator message",
    "pause": "writes PAUSE",
    "resume": "removes PAUSE",
    "start": "starts ticking (a loop, a crontab line, a resident job)",
}
"""Visible commands that change something, and what: they print what they did and take
no ``--json``."""


def command_tree() -> dict[str, click.Command]:
    """Every visible leaf command by its words (``forge pr list``); hidden ones (the
    jobs' internal ``attempt``, ``job run``, ``deps warm``) are no interface."""
    found: dict[str, click.Command] = {}

    def walk(group: click.Group, words: list[str]) -> None:
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            command = group.get_command(ctx, name)
            if command is None or command.hidden:
                continue
            if isinstance(command, click.Group):
                walk(command, [*words, name])
            else:
                found[" ".join([*words, name])] = command

    walk(main, [])
    return found


def documented() -> list[str]:
    """The commands the table names, in its order (``outerloop `` cut off)."""
    text = OPERATE.read_text().split(SECTION, 1)[1].split("\n## ", 1)[0]
    return [line.split("`")[1].removeprefix("outerloop ") for line in text.splitlines()
            if line.startswith("| `outerloop ")]


def takes_json(command: click.Command) -> bool:
    return any(isinstance(p, click.Option) and "--json" in p.opts for p in command.params)


def test_every_command_is_a_documented_read_command_or_a_listed_action() -> None:
    tree, table = command_tree(), documented()
    assert sorted(set(tree) - set(table) - set(ACTIONS)) == [], \
        "a read command: --json and a row in docs/operate.md's table; else list it in ACTIONS"
    assert sorted(set(table) & set(ACTIONS)) == []
    assert sorted((set(table) | set(ACTIONS)) - set(tree)) == [], "no such command"
    assert len(table) == len(set(table)), "the table names a command twice"


def test_every_documented_read_command_takes_json_when_the_tree_is_walked() -> None:
    tree = command_tree()
    assert [name for name in documented() if not takes_json(tree[name])] == []


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """A real home: the example target on the local forge, one issue open, ``HOLD``
    so no tick claims it (``explain --issue`` has an unclaimed issue to explain)."""
    settings = make_home(tmp_path_factory.mktemp("json"))
    assert _cli("forge", "issue", "open", "--title", "try tour", "--body", "the tour "
                "benchmark", "--home", str(settings.home)).exit_code == 0
    (settings.home / "HOLD").touch()
    return settings


def _cli(*words: str) -> Result:
    return CliRunner().invoke(main, list(words))


def _args(name: str, settings: Settings) -> list[str]:
    """How the test runs each read command on ``home``."""
    at = ["--home", str(settings.home)]
    return {
        "status": at, "verify": at, "tick": at, "archive list": at,
        "doctor": [*at, "--quick"], "explain": ["--issue", f"{TARGET}#1", *at],
        "contract check": [str(EXAMPLE_TARGET / ".outerloop.yaml")],
        "forge repo list": at, "forge user list": at, "forge issue list": at,
        "forge issue show": ["1", *at], "forge pr list": at, "forge pr show": ["1", *at],
        "forge pr diff": ["1", *at], "job queue": ["--jobs-dir", str(settings.home / "jobs")],
        "job show": ["7", "--jobs-dir", str(settings.home / "jobs")], "help settings": [],
    }[name]


NOT_THERE = {"forge pr show", "forge pr diff", "job show"}
"""The home holds no pull request and no job: these print the error envelope."""
SLOW = {"doctor": "~13 s even --quick; tests/integration/test_doctor.py runs its --json"}


def _envelope(result: Result) -> dict[str, object]:
    shown = json.loads(result.stdout)
    assert isinstance(shown, dict) and next(iter(shown)) == "ok", result.stdout
    return shown


@pytest.mark.parametrize("name", [n for n in documented() if n not in SLOW])
def test_read_command_prints_one_envelope_when_given_json(name: str, home: Settings) -> None:
    result = _cli(*name.split(), *_args(name, home), "--json")
    shown = _envelope(result)
    if name in NOT_THERE:
        assert shown["ok"] is False and result.exit_code == 1
        assert shown["error"] == {**shown["error"], "kind": "NotFound",  # type: ignore[dict-item]
                                  "exit_code": 1}
        return
    assert "error" not in shown and shown["ok"] is True, shown
    assert result.exit_code == 0, result.output


@pytest.mark.parametrize("name", documented())
def test_bad_argument_is_the_error_envelope_exiting_2_when_given_json(name: str) -> None:
    result = _cli(*name.split(), "--no-such-option", "--json")
    assert result.exit_code == 2 == _cli(*name.split(), "--no-such-option").exit_code
    shown = _envelope(result)
    assert shown == {"ok": False, "error": {"message": "No such option '--no-such-option'.",
                                            "fix": None, "kind": "UsageError",
                                            "exit_code": 2}}


HOME_TAKERS = [n for n in documented() if n not in ("contract check", "help settings",
                                                    "job queue", "job show")]


@pytest.mark.parametrize("name", HOME_TAKERS)
def test_missing_home_is_the_error_envelope_with_the_text_exit_code(
        name: str, tmp_path: Path) -> None:
    needs = {"explain": ["RUN"], "forge issue show": ["1"], "forge pr show": ["1"],
             "forge pr diff": ["1"]}
    words = [*name.split(), *needs.get(name, []), "--home", str(tmp_path / "nowhere")]
    text, shown = _cli(*words), _cli(*words, "--json")
    assert text.exit_code == shown.exit_code != 0
    envelope = _envelope(shown)
    if name == "doctor":  # doctor reports the home as its failed check
        assert envelope["ok"] is False and "checks" in envelope
        return
    error = envelope["error"]
    assert isinstance(error, dict) and envelope["ok"] is False
    assert "nowhere" in error["message"] and error["exit_code"] == shown.exit_code
    assert shown.stderr == ""


def test_status_json_names_the_fix_when_the_home_is_missing(tmp_path: Path) -> None:
    result = _cli("status", "--json", "--home", str(tmp_path / "nowhere"))
    error = _envelope(result)["error"]
    assert result.exit_code == 1 and isinstance(error, dict)
    assert error["kind"] == "ConfigError" and "outerloop init" in error["fix"]
    assert error["message"] == f"no home at {tmp_path / 'nowhere'}"


def test_status_json_is_the_error_envelope_when_the_config_is_bad(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    (settings.home / "outerloop.toml").write_text("[forge\n")
    text = _cli("status", "--home", str(settings.home))
    result = _cli("status", "--json", "--home", str(settings.home))
    error = _envelope(result)["error"]
    assert result.exit_code == text.exit_code == 1 and isinstance(error, dict)
    assert error["kind"] == "ConfigError" and "outerloop.toml" in error["message"]


def test_json_after_a_double_dash_is_an_argument_not_the_flag() -> None:
    from outerloop.cli.json_out import wants_json

    assert wants_json(["status", "--json"]) and not wants_json(["message", "r", "--", "--json"])
