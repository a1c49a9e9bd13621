"""The scripted agent plays its legs with real processes in a real git clone."""

from __future__ import annotations

import json
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from outerloop.config import HarnessSettings, Settings
from outerloop.errors import ConfigError
from outerloop.harness import SessionLimits, SessionResult
from outerloop.harness.factory import make_harness
from outerloop.harness.scripted import ScriptedHarness, harness_dir

LIMITS = SessionLimits(max_turns=50, minutes=10)

STAND_IN_SYSCALL = """\
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "calls.log"), "a") as log:
    log.write(json.dumps({"argv": sys.argv[1:], "home": os.environ.get("HOME")}) + "\\n")
sys.exit(3 if sys.argv[1:2] == ["fail"] else 0)
"""


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """A git clone with a stand-in agent tool that logs its argv to ``calls.log``."""
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "src").mkdir()
    (ws / "src" / "solver.py").write_text("a = 1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@example.org"]
    subprocess.run([*git, "init", "-q"], cwd=ws, check=True)
    subprocess.run([*git, "add", "."], cwd=ws, check=True)
    subprocess.run([*git, "commit", "-qm", "base"], cwd=ws, check=True)
    channel = ws / ".outerloop"
    channel.mkdir()
    (channel / "syscall").write_text(STAND_IN_SYSCALL)
    return ws


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir(mode=0o700)
    return path


def _script(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "script.yaml"
    path.write_text(textwrap.dedent(body))
    return path


def _calls(ws: Path) -> list[list[str]]:
    log = ws / ".outerloop" / "calls.log"
    if not log.exists():
        return []
    return [json.loads(line)["argv"] for line in log.read_text().splitlines()]


def _gone(pid: int, within_s: float = 5.0) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            return True
        if stat.rsplit(")", 1)[1].split()[0] in ("Z", "X"):
            return True
        time.sleep(0.05)
    return False


TWO_LEGS = """\
legs:
  - - write: {path: src/solver.py, content: "a = 2\\n"}
    - shell: "sed -i 's/a = 2/b = 2/' src/solver.py"
    - syscall: "launch --name try-2opt --minutes 5 --array 2 --concurrency 1 -- python eval.py"
    - syscall: sleep
  - - expect: "try-2opt"
    - syscall: "submit --report report.md"
    - syscall: sleep
"""


def test_first_leg_plays_its_steps_when_a_session_starts(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    harness = ScriptedHarness(_script(tmp_path, TWO_LEGS))
    result = harness.run("brief", workspace, home, None, LIMITS)
    assert (result.stop_reason, result.is_error, result.turns) == ("end_turn", False, 4)
    assert result.cost_usd == 0
    assert result.session_id is not None and result.session_id.startswith("scripted-")
    assert (workspace / "src" / "solver.py").read_text() == "b = 2\n"
    assert _calls(workspace) == [
        ["launch", "--name", "try-2opt", "--minutes", "5", "--array", "2",
         "--concurrency", "1", "--", "python", "eval.py"],
        ["sleep"],
    ]


def test_legs_play_in_order_when_the_session_is_resumed(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    harness = ScriptedHarness(_script(tmp_path, TWO_LEGS))
    first = harness.run("brief", workspace, home, None, LIMITS)
    second = harness.run("results of try-2opt: ok", workspace, home, first.session_id, LIMITS)
    assert (second.stop_reason, second.is_error, second.turns) == ("end_turn", False, 3)
    assert second.session_id == first.session_id
    assert [argv[0] for argv in _calls(workspace)] == ["launch", "sleep", "submit", "sleep"]


def test_new_session_starts_at_the_first_leg_when_not_resuming(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    harness = ScriptedHarness(_script(tmp_path, TWO_LEGS))
    first = harness.run("brief", workspace, home, None, LIMITS)
    again = harness.run("brief", workspace, home, None, LIMITS)
    assert again.session_id != first.session_id
    assert [argv[0] for argv in _calls(workspace)] == ["launch", "sleep", "launch", "sleep"]


def test_leg_is_an_error_when_the_prompt_lacks_the_expected_text(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    harness = ScriptedHarness(_script(tmp_path, TWO_LEGS))
    first = harness.run("brief", workspace, home, None, LIMITS)
    second = harness.run("nothing relevant", workspace, home, first.session_id, LIMITS)
    assert (second.stop_reason, second.is_error) == ("error", True)
    assert second.error_detail is not None
    assert "legs[1][0]" in second.error_detail and "'try-2opt'" in second.error_detail
    assert [argv[0] for argv in _calls(workspace)] == ["launch", "sleep"]


def test_leg_stops_with_the_output_when_a_shell_step_fails(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    script = _script(tmp_path, """\
        legs:
          - - shell: "echo broken-build >&2; exit 4"
            - syscall: sleep
        """)
    result = ScriptedHarness(script).run("brief", workspace, home, None, LIMITS)
    assert (result.stop_reason, result.is_error, result.turns) == ("error", True, 1)
    assert result.error_detail is not None
    assert "legs[0][0]" in result.error_detail and "broken-build" in result.error_detail
    assert "exit 4" in result.error_detail
    assert _calls(workspace) == []


def test_leg_continues_when_a_failing_step_may_fail(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    script = _script(tmp_path, """\
        legs:
          - - shell: "exit 1"
              may_fail: true
            - syscall: fail
              may_fail: true
            - syscall: sleep
        """)
    result = ScriptedHarness(script).run("brief", workspace, home, None, LIMITS)
    assert (result.stop_reason, result.is_error, result.turns) == ("end_turn", False, 3)
    assert _calls(workspace) == [["fail"], ["sleep"]]


def test_nothing_is_done_when_the_script_is_exhausted(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    harness = ScriptedHarness(_script(tmp_path, TWO_LEGS))
    first = harness.run("brief", workspace, home, None, LIMITS)
    harness.run("try-2opt done", workspace, home, first.session_id, LIMITS)
    before = _calls(workspace)
    third = harness.run("wake again", workspace, home, first.session_id, LIMITS)
    assert (third.stop_reason, third.is_error, third.turns) == ("end_turn", False, 0)
    assert "exhausted" in third.final_text
    assert _calls(workspace) == before


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ("legs:\n  - - shell: ok\n  - - shel: 'ls'\n", "legs[1][0]: unknown step kind 'shel'"),
        ("legs:\n  - - write: {path: ../x, content: ''}\n", "legs[0][0].write.path"),
        ("legs:\n  - - write: {path: /etc/x, content: ''}\n", "legs[0][0].write.path"),
        ("legs:\n  - - shell: ls\n      syscall: sleep\n", "legs[0][0]: a step has exactly one"),
        ("legs:\n  - - syscall: \"launch 'unclosed\"\n", "legs[0][0].syscall"),
        ("legs:\n  - - shell: ls\n      may_fail: maybe\n", "legs[0][0].may_fail"),
        ("steps: []\n", "legs: Field required"),
        ("legs: [[{shell: ls}]\n", "not valid YAML"),
    ],
)
def test_error_names_the_problem_when_the_script_is_malformed(
    tmp_path: Path, workspace: Path, home: Path, body: str, problem: str
) -> None:
    script = _script(tmp_path, body)
    result = ScriptedHarness(script).run("brief", workspace, home, None, LIMITS)
    assert (result.stop_reason, result.is_error) == ("error", True)
    assert result.error_detail is not None
    assert problem in result.error_detail and str(script) in result.error_detail
    assert _calls(workspace) == []


def test_session_and_its_process_group_are_killed_when_past_the_time_limit(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    script = _script(tmp_path, """\
        legs:
          - - shell: "sleep 300 & echo $! > child.pid; sleep 300"
            - syscall: sleep
        """)
    harness = ScriptedHarness(script, seconds_per_minute=1.0)
    started = time.monotonic()
    result = harness.run("brief", workspace, home, None, SessionLimits(max_turns=5, minutes=1))
    assert time.monotonic() - started < 10
    assert (result.stop_reason, result.is_error) == ("timeout", True)
    assert _gone(int((workspace / "child.pid").read_text()))
    assert _calls(workspace) == []


def test_leg_stops_at_max_turns_when_it_has_more_steps(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    script = _script(tmp_path, """\
        legs:
          - - syscall: status
            - syscall: queue
            - syscall: sleep
        """)
    result = ScriptedHarness(script).run("brief", workspace, home, None,
                                         SessionLimits(max_turns=2, minutes=10))
    assert (result.stop_reason, result.is_error, result.turns) == ("max_turns", False, 2)
    assert _calls(workspace) == [["status"], ["queue"]]


def test_steps_see_only_the_allowlisted_env_when_the_parent_holds_secrets(
    tmp_path: Path, workspace: Path, home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OUTERLOOP_FORGE_TOKEN", "ghp_forge")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp_github")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-planted")
    script = _script(tmp_path, """\
        legs:
          - - shell: "env > seen.env"
        """)
    ScriptedHarness(script).run("brief", workspace, home, None, LIMITS)
    seen = dict(line.split("=", 1) for line in (workspace / "seen.env").read_text().splitlines()
                if "=" in line)
    assert not {"OUTERLOOP_FORGE_TOKEN", "GITHUB_TOKEN", "ANTHROPIC_API_KEY"} & seen.keys()
    assert seen["HOME"] == str(home)


def test_write_is_refused_when_a_symlink_leads_outside_the_workspace(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (workspace / "link").symlink_to(outside)
    script = _script(tmp_path, """\
        legs:
          - - write: {path: link/planted.txt, content: "x"}
        """)
    result = ScriptedHarness(script).run("brief", workspace, home, None, LIMITS)
    assert (result.stop_reason, result.is_error) == ("error", True)
    assert not (outside / "planted.txt").exists()


def test_resume_is_an_error_when_the_session_is_unknown(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    harness = ScriptedHarness(_script(tmp_path, TWO_LEGS))
    for resume in ("scripted-000000000000", "../../etc/passwd"):
        result = harness.run("brief", workspace, home, resume, LIMITS)
        assert (result.stop_reason, result.is_error) == ("error", True)
        assert result.error_detail is not None and "cannot resume" in result.error_detail
    assert _calls(workspace) == []


def test_leg_ends_with_the_scripted_reason_when_a_step_says_end(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    script = _script(tmp_path, """\
        legs:
          - - end: {stop_reason: refused, detail: "credit balance too low"}
            - syscall: sleep
        """)
    result = ScriptedHarness(script).run("brief", workspace, home, None, LIMITS)
    assert (result.stop_reason, result.is_error, result.outage) == ("refused", True, True)
    assert result.error_detail == "credit balance too low"
    assert _calls(workspace) == []


def test_transcript_records_prompt_and_steps_when_a_leg_is_played(
    tmp_path: Path, workspace: Path, home: Path
) -> None:
    result = ScriptedHarness(_script(tmp_path, TWO_LEGS)).run("the brief", workspace, home,
                                                              None, LIMITS)
    assert result.transcript_path is not None
    path = Path(result.transcript_path)
    assert path.parent == harness_dir(home)
    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert records[0] == {"event": "prompt", "leg": 0, "text": "the brief"}
    assert [r["where"] for r in records if r["event"] == "step"] == [
        "legs[0][0]", "legs[0][1]", "legs[0][2]", "legs[0][3]"]
    assert records[-1]["event"] == "end"


def test_actions_are_the_same_when_the_script_is_replayed(tmp_path: Path, home: Path) -> None:
    results: list[tuple[SessionResult, list[list[str]], str]] = []
    for name in ("a", "b"):
        ws = tmp_path / name
        ws.mkdir()
        (ws / "src").mkdir()
        (ws / "src" / "solver.py").write_text("a = 1\n")
        (ws / ".outerloop").mkdir()
        (ws / ".outerloop" / "syscall").write_text(STAND_IN_SYSCALL)
        result = ScriptedHarness(_script(tmp_path, TWO_LEGS)).run("brief", ws, home, None,
                                                                  LIMITS)
        results.append((result, _calls(ws), (ws / "src" / "solver.py").read_text()))
    (first, calls_a, tree_a), (second, calls_b, tree_b) = results
    assert (calls_a, tree_a) == (calls_b, tree_b)
    assert first.model_dump(exclude={"session_id", "transcript_path"}) == \
        second.model_dump(exclude={"session_id", "transcript_path"})


def _settings(home: Path, script: str | None, kind: str = "scripted") -> Settings:
    return Settings(home=home, harness=HarnessSettings.model_validate(
        {"kind": kind, "script": script}))


def test_factory_resolves_the_script_against_the_home_when_relative(
    tmp_path: Path, home: Path
) -> None:
    (home / "demo.yaml").write_text(TWO_LEGS)
    harness = make_harness(_settings(home, "demo.yaml"))
    assert isinstance(harness, ScriptedHarness)
    assert harness.script_path == home / "demo.yaml"


def test_factory_names_the_setting_when_the_script_is_unset(home: Path) -> None:
    with pytest.raises(ConfigError, match=r"\[harness\] script.*fix"):
        make_harness(_settings(home, None))


def test_factory_names_the_path_when_the_script_is_missing(home: Path) -> None:
    with pytest.raises(ConfigError, match=r"missing\.yaml does not exist; fix"):
        make_harness(_settings(home, "missing.yaml"))


@pytest.mark.parametrize("kind", ["claude", "codex"])
def test_factory_builds_the_cli_backend_when_one_is_chosen(home: Path, kind: str) -> None:
    harness = make_harness(_settings(home, None, kind))
    assert type(harness).__name__.lower() == f"{kind}harness"
