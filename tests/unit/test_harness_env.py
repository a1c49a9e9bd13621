"""The session environment is an allowlist; a session's process group dies with it."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from outerloop.harness import env as harness_env
from outerloop.harness.env import run_process_group, session_env

SECRETS = {
    "OUTERLOOP_FORGE_TOKEN": "ghp_forge",
    "GITHUB_TOKEN": "ghp_github",
    "GH_TOKEN": "ghp_gh",
    "ANTHROPIC_API_KEY": "sk-ant-planted",
    "AWS_SECRET_ACCESS_KEY": "aws-planted",
    "SOME_SERVICE_SECRET": "planted",
}


def _gone(pid: int, within_s: float = 5.0) -> bool:
    """True once ``pid`` no longer runs (a zombie nobody reaped counts as gone)."""
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


def test_parent_secrets_are_dropped_when_planted_in_the_environment(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    env = session_env(tmp_path)
    assert not SECRETS.keys() & env.keys()
    assert not any(name.startswith("OUTERLOOP_") for name in env)


def test_home_is_the_runs_home_when_the_parent_has_another(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HOME", "/root/elsewhere")
    assert session_env(tmp_path / "home")["HOME"] == str(tmp_path / "home")


def test_only_allowlisted_names_pass_when_the_parent_sets_many(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("PATH", "/opt/x/bin:/usr/bin")
    monkeypatch.setenv("TERM", "xterm")
    monkeypatch.setenv("TMPDIR", "/scratch/tmp")
    monkeypatch.setenv("LC_ALL", "C")
    monkeypatch.setenv("PYTHONPATH", "/planted")
    env = session_env(tmp_path)
    assert set(env) <= {"PATH", "LANG", "LC_ALL", "TERM", "TMPDIR", "HOME"}
    assert env["PATH"] == "/opt/x/bin:/usr/bin"
    assert (env["TERM"], env["TMPDIR"], env["LC_ALL"]) == ("xterm", "/scratch/tmp", "C")


def test_defaults_apply_when_the_parent_lacks_path_and_lang(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("PATH", raising=False)
    monkeypatch.delenv("LANG", raising=False)
    env = session_env(tmp_path)
    assert env["PATH"] == "/usr/local/bin:/usr/bin:/bin"
    assert env["LANG"] == "C.UTF-8"


def test_one_model_credential_passes_when_given_explicitly(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-parent")
    env = session_env(tmp_path, {"ANTHROPIC_API_KEY": "sk-ant-run", "DISABLE_TELEMETRY": "1"})
    assert env["ANTHROPIC_API_KEY"] == "sk-ant-run"
    assert env["DISABLE_TELEMETRY"] == "1"


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "GH_TOKEN", "OUTERLOOP_FORGE_TOKEN"])
def test_forge_token_is_refused_when_passed_in_extra(name: str, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="forge token"):
        session_env(tmp_path, {name: "ghp_x"})


def test_second_credential_is_refused_when_passed_in_extra(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at most one model credential"):
        session_env(tmp_path, {"ANTHROPIC_API_KEY": "a", "OPENAI_API_KEY": "b"})


def test_home_in_extra_is_refused_when_a_backend_passes_it(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="HOME"):
        session_env(tmp_path, {"HOME": "/elsewhere"})


def test_output_and_code_are_returned_when_the_process_exits(tmp_path: Path) -> None:
    outcome = run_process_group(
        ["bash", "-c", "cat; echo err >&2; pwd; exit 3"], tmp_path,
        session_env(tmp_path), "from stdin\n", 30,
    )
    assert outcome.returncode == 3
    assert outcome.stdout == f"from stdin\n{tmp_path}\n"
    assert outcome.stderr == "err\n"
    assert outcome.timed_out is False


def test_stdin_is_empty_when_no_text_is_given(tmp_path: Path) -> None:
    outcome = run_process_group(["cat"], tmp_path, session_env(tmp_path), None, 30)
    assert (outcome.returncode, outcome.stdout) == (0, "")


def test_whole_group_is_killed_when_the_timeout_passes(tmp_path: Path) -> None:
    script = "sleep 300 & echo $! > child.pid; echo started; sleep 300"
    started = time.monotonic()
    outcome = run_process_group(["bash", "-c", script], tmp_path, session_env(tmp_path),
                                None, 1.0)
    assert time.monotonic() - started < 1.0 + harness_env.GRACE_S
    assert outcome.timed_out is True
    assert outcome.returncode is None
    assert outcome.stdout == "started\n"
    assert _gone(int((tmp_path / "child.pid").read_text()))


def test_group_gets_killed_after_grace_when_it_ignores_term(tmp_path: Path,
                                                             monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    monkeypatch.setattr(harness_env, "GRACE_S", 0.5)
    script = "trap '' TERM; echo $$ > leader.pid; while :; do sleep 0.1; done"
    outcome = run_process_group(["bash", "-c", script], tmp_path, session_env(tmp_path),
                                None, 0.5)
    assert outcome.timed_out is True
    assert _gone(int((tmp_path / "leader.pid").read_text()))


def test_background_child_is_killed_when_the_leader_exits_first(tmp_path: Path) -> None:
    script = "sleep 300 & echo $! > child.pid; exit 0"
    started = time.monotonic()
    outcome = run_process_group(["bash", "-c", script], tmp_path, session_env(tmp_path),
                                None, 60)
    assert time.monotonic() - started < 10
    assert (outcome.returncode, outcome.timed_out) == (0, False)
    assert _gone(int((tmp_path / "child.pid").read_text()))


def test_oserror_is_raised_when_the_program_does_not_exist(tmp_path: Path) -> None:
    with pytest.raises(OSError):
        run_process_group(["/nonexistent/agent-cli"], tmp_path, session_env(tmp_path), None, 5)
