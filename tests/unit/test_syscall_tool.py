"""The agent's tool, run as the agent runs it: ``python .outerloop/syscall VERB`` in a real
git workspace whose channel the kernel installed."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.attempt.channel import install_channel, write_limits, write_views

GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "user.name=t", "-c", "user.email=t@t"]


def _git(ws: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=ws, check=True, capture_output=True,
                          text=True).stdout


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    _git(ws, "init", "-q", "-b", "main")
    (ws / "train.py").write_text("print('hi')\n")
    _git(ws, "add", "train.py")
    _git(ws, "commit", "-q", "-m", "base")
    install_channel(ws, {})
    return ws


def run(ws: Path, *args: str, python: tuple[str, ...] = ()) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, *python, str(ws / ".outerloop" / "syscall"), *args]
    return subprocess.run(argv, cwd=ws, capture_output=True, text=True, timeout=60, check=False)


def staged(ws: Path) -> dict[str, object]:
    data: dict[str, object] = json.loads((ws / ".outerloop" / "request.json").read_text())
    return data


def launch(ws: Path, name: str = "base-lr", *extra: str,
           command: tuple[str, ...] = ("python", "train.py")) -> subprocess.CompletedProcess[str]:
    return run(ws, "launch", "--name", name, "--minutes", "30", *extra, "--", *command)


def assert_refused(result: subprocess.CompletedProcess[str], *words: str) -> None:
    assert result.returncode == 2, result.stdout + result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("refused")
    for word in words:
        assert word in result.stderr


# ----------------------------------------------------------------------- happy paths


def test_launch_stages_the_exact_request_format_when_the_launch_is_valid(ws: Path) -> None:
    result = run(ws, "launch", "--name", "lr-sweep", "--minutes", "45", "--array", "4",
                 "--concurrency", "2", "--why", "does lr matter", "--artifact", "out/m.json",
                 "--", "python", "train.py", "--lr", "a b")
    assert result.returncode == 0, result.stderr
    assert "staged launch 'lr-sweep'" in result.stdout
    assert "sleep" in result.stdout
    assert staged(ws) == {
        "launches": [{"name": "lr-sweep", "minutes": 45, "array": 4, "concurrency": 2,
                      "why": "does lr matter", "artifacts": ["out/m.json"],
                      "command": "python train.py --lr 'a b'"}],
        "submit": None, "messages": [], "stop": None,
    }


def test_launch_keeps_a_single_word_command_as_a_shell_line_when_given_one_word(
        ws: Path) -> None:
    result = launch(ws, command=("python train.py && echo done",))
    assert result.returncode == 0, result.stderr
    launches = staged(ws)["launches"]
    assert isinstance(launches, list)
    assert launches[0]["command"] == "python train.py && echo done"
    assert launches[0]["concurrency"] == 1


def test_launch_appends_when_several_launches_are_staged(ws: Path) -> None:
    assert launch(ws, "one").returncode == 0
    assert launch(ws, "two").returncode == 0
    launches = staged(ws)["launches"]
    assert isinstance(launches, list)
    assert [item["name"] for item in launches] == ["one", "two"]


def test_submit_stages_the_report_and_says_to_sleep_when_the_report_exists(ws: Path) -> None:
    (ws / "report.md").write_text("# claim\nfaster by 3%\n")
    result = run(ws, "submit", "--report", "report.md", "--minutes", "20")
    assert result.returncode == 0, result.stderr
    assert "sleep" in result.stdout
    assert staged(ws)["submit"] == {"report": "# claim\nfaster by 3%\n", "minutes": 20}


def test_submit_refuses_a_report_outside_the_workspace_when_given_one(ws: Path,
                                                                     tmp_path: Path) -> None:
    report = tmp_path / "elsewhere.md"
    report.write_text("claim")
    result = run(ws, "submit", "--report", str(report))
    assert result.returncode != 0 and "inside the workspace" in result.stderr
    assert run(ws, "submit", "--report", "/etc/passwd").returncode != 0
    assert run(ws, "submit", "--report", "../elsewhere.md").returncode != 0


def test_submit_refuses_a_report_that_is_a_symlink_when_it_points_at_a_secret(
        ws: Path, tmp_path: Path) -> None:
    secret = tmp_path / "forge-token"
    secret.write_text("ghp_secretsecretsecret")
    (ws / "report.md").symlink_to(secret)
    result = run(ws, "submit", "--report", "report.md")
    assert result.returncode != 0 and "symlink" in result.stderr
    request = ws / ".outerloop" / "request.json"
    assert not request.exists() or "ghp_secret" not in request.read_text()


def test_submit_reads_an_absolute_report_path_when_it_is_inside_the_workspace(ws: Path) -> None:
    (ws / "report.md").write_text("claim")
    assert run(ws, "submit", "--report", str(ws / "report.md")).returncode == 0
    assert staged(ws)["submit"] == {"report": "claim", "minutes": None}


def test_message_stages_thread_and_self_messages_when_asked(ws: Path) -> None:
    assert run(ws, "message", "progress:", "halfway").returncode == 0
    assert run(ws, "message", "remember the seed", "--to", "self").returncode == 0
    assert staged(ws)["messages"] == [{"to": "thread", "text": "progress: halfway"},
                                      {"to": "self", "text": "remember the seed"}]


def test_sleep_commits_the_request_and_clears_the_staging_when_called(ws: Path) -> None:
    assert launch(ws).returncode == 0
    request = staged(ws)
    result = run(ws, "sleep")
    assert result.returncode == 0, result.stderr
    assert "End your session now" in result.stdout
    assert not (ws / ".outerloop" / "request.json").exists()
    committed = json.loads((ws / ".outerloop" / "syscall.json").read_text())
    assert set(committed) == {"verb", "request", "at"}
    assert committed["verb"] == "sleep"
    assert committed["request"] == request
    assert committed["at"].endswith("+00:00")


def test_sleep_commits_an_empty_request_when_nothing_was_staged(ws: Path) -> None:
    assert run(ws, "sleep").returncode == 0
    committed = json.loads((ws / ".outerloop" / "syscall.json").read_text())
    assert committed["request"] == {"launches": [], "submit": None, "messages": [],
                                    "stop": None}


def test_stop_commits_the_report_when_given_one(ws: Path) -> None:
    (ws / "final.md").write_text("nothing helped")
    result = run(ws, "stop", "--report", "final.md")
    assert result.returncode == 0, result.stderr
    committed = json.loads((ws / ".outerloop" / "syscall.json").read_text())
    assert (committed["verb"], committed["report"]) == ("stop", "nothing helped")


def test_stop_commits_a_null_report_when_given_none(ws: Path) -> None:
    assert run(ws, "stop").returncode == 0
    committed = json.loads((ws / ".outerloop" / "syscall.json").read_text())
    assert committed["report"] is None


def test_cancel_clears_the_staged_request_when_something_is_staged(ws: Path) -> None:
    assert launch(ws).returncode == 0
    result = run(ws, "cancel")
    assert result.returncode == 0
    assert "cleared" in result.stdout
    assert not (ws / ".outerloop" / "request.json").exists()


def test_staging_is_refused_when_the_session_already_committed(ws: Path) -> None:
    assert run(ws, "sleep").returncode == 0
    assert_refused(launch(ws), "already committed", "end your session")


def test_reading_verbs_print_the_kernel_views_when_they_exist(ws: Path) -> None:
    write_views(
        ws,
        status={"run_id": "tsp-20260101T000000-agent-01", "benchmark": "tsp",
                "agent": "agent-01", "state": "running", "sleeps_used": 1, "sleeps_left": 3,
                "launches_used": 2, "launches_left": 6, "pr": 12},
        history=[{"sleep": 1, "name": "base-lr", "why": "baseline", "job": "101",
                  "state": "COMPLETED", "exit_code": 0, "elapsed_s": 185,
                  "last_line": "score 0.91"}],
        queue=[{"name": "lr-sweep", "task": 3, "job": "102_3", "state": "RUNNING",
                "elapsed_s": 60, "limit_minutes": 45}],
        siblings=[{"agent": "agent-02", "benchmark": "tsp", "headline": "try 2-opt"}],
        reports={"tsp-20251231T000000-agent-03": "# negative\nno gain\n"},
    )
    status = run(ws, "status").stdout
    assert "tsp-20260101T000000-agent-01" in status
    assert "sleeps: 1 used, 3 left" in status and "launches: 2 used, 6 left" in status
    assert "#12" in status
    history = run(ws, "history").stdout
    assert "base-lr" in history and "COMPLETED (exit 0)" in history and "3m05s" in history
    assert "score 0.91" in history
    assert "lr-sweep[3] job 102_3: RUNNING, 1m00s of 45 min" in run(ws, "queue").stdout
    assert "agent-02 on tsp: try 2-opt" in run(ws, "siblings").stdout
    assert "tsp-20251231T000000-agent-03" in run(ws, "reports").stdout
    printed = run(ws, "reports", "tsp-20251231T000000-agent-03")
    assert printed.returncode == 0 and "no gain" in printed.stdout


def test_reading_verbs_answer_plainly_when_the_kernel_wrote_no_views(ws: Path) -> None:
    for verb, words in [("status", "no status yet"), ("queue", "no jobs"),
                        ("history", "no launches"), ("siblings", "no other"),
                        ("reports", "no reports")]:
        result = run(ws, verb)
        assert result.returncode == 0
        assert words in result.stdout


def test_help_lists_every_verb_when_asked(ws: Path) -> None:
    out = run(ws, "--help").stdout
    for verb in ("launch", "submit", "sleep", "stop", "message", "status", "cancel",
                 "siblings", "reports", "queue", "history"):
        assert verb in out


def test_tool_runs_when_outerloop_is_not_importable(ws: Path) -> None:
    result = run(ws, "launch", "--name", "iso", "--minutes", "5", "--", "true",
                 python=("-I", "-S"))
    assert result.returncode == 0, result.stderr


def test_channel_is_ignored_by_git_status_when_the_tool_has_staged(ws: Path) -> None:
    assert launch(ws).returncode == 0
    assert _git(ws, "status", "--porcelain", "--untracked-files=all") == ""


# -------------------------------------------------------------------------- refusals


@pytest.mark.parametrize(("args", "words"), [
    (["--name", "Bad_Name", "--minutes", "5"], ["does not match", "a-z0-9"]),
    (["--name", "a" * 33, "--minutes", "5"], ["does not match"]),
    (["--name", "ok", "--minutes", "241"], ["minutes 241", "1..240"]),
    (["--name", "ok", "--minutes", "0"], ["minutes 0"]),
    (["--name", "ok", "--minutes", "5", "--array", "17"], ["array 17", "1..16"]),
    (["--name", "ok", "--minutes", "5", "--array", "2", "--concurrency", "3"],
     ["concurrency 3"]),
    (["--name", "ok", "--minutes", "5", "--artifact", "../secret"], ["'..'"]),
    (["--name", "ok", "--minutes", "5", "--artifact", "/etc/passwd"], ["absolute"]),
    (["--name", "ok", "--minutes", "5", "--why", "w" * 201], ["201 characters", "200"]),
    (["--name", "ok", "--minutes", "5", *[f"--artifact=f{i}" for i in range(9)]],
     ["9 artifacts", "limit of 8"]),
])
def test_launch_is_refused_with_the_rule_when_a_limit_is_broken(
        ws: Path, args: list[str], words: list[str]) -> None:
    result = run(ws, "launch", *args, "--", "python", "train.py")
    assert_refused(result, *words)
    assert "fix:" in result.stderr
    assert not (ws / ".outerloop" / "request.json").exists()


def test_launch_is_refused_when_the_command_is_2001_characters(ws: Path) -> None:
    assert_refused(launch(ws, command=("x" * 2001,)), "2001 characters", "2000")
    assert launch(ws, command=("x" * 2000,)).returncode == 0


def test_ninth_launch_is_refused_when_eight_are_staged(ws: Path) -> None:
    for index in range(8):
        assert launch(ws, f"run-{index}").returncode == 0
    assert_refused(launch(ws, "run-8"), "at most 8 per sleep", "sleep")
    launches = staged(ws)["launches"]
    assert isinstance(launches, list) and len(launches) == 8


def test_launch_is_refused_when_the_name_is_already_staged(ws: Path) -> None:
    assert launch(ws, "same").returncode == 0
    assert_refused(launch(ws, "same"), "staged twice")


def test_launch_is_refused_when_the_command_is_missing(ws: Path) -> None:
    assert_refused(run(ws, "launch", "--name", "a", "--minutes", "5"), "after `--`")
    assert_refused(run(ws, "launch", "--name", "a", "--minutes", "5", "--"), "empty")


def test_launch_is_refused_when_the_run_has_no_launches_left(ws: Path) -> None:
    write_limits(ws, {"launches_left": 1})
    assert launch(ws, "first").returncode == 0
    assert_refused(launch(ws, "second"), "1 launch(es) left")


def test_launch_is_refused_when_an_earlier_sleep_used_the_name(ws: Path) -> None:
    write_views(ws, status={"run_id": "r", "benchmark": "b", "state": "running",
                            "sleeps_used": 1, "sleeps_left": 1, "launches_used": 1,
                            "launches_left": 5},
                history=[{"sleep": 1, "name": "base-lr"}], queue=[], siblings=[], reports={})
    assert_refused(launch(ws, "base-lr"), "already used in this run")


def test_submit_is_refused_when_the_report_file_is_huge(ws: Path) -> None:
    (ws / "report.md").write_text("r" * 100_000)
    assert_refused(run(ws, "submit", "--report", "report.md"), "far over")


def test_launch_obeys_a_lowered_limit_when_the_kernel_wrote_one(ws: Path) -> None:
    write_limits(ws, {"max_launch_minutes": 60})
    assert_refused(run(ws, "launch", "--name", "a", "--minutes", "61", "--", "true"),
                   "minutes 61", "1..60")


def test_submit_is_refused_when_the_report_is_8001_characters(ws: Path) -> None:
    (ws / "report.md").write_text("r" * 8001)
    assert_refused(run(ws, "submit", "--report", "report.md"), "8001 characters", "8000")
    (ws / "report.md").write_text("r" * 8000)
    assert run(ws, "submit", "--report", "report.md").returncode == 0


def test_submit_is_refused_when_the_report_file_is_missing(ws: Path) -> None:
    assert_refused(run(ws, "submit", "--report", "nope.md"), "does not exist")


def test_message_is_refused_when_it_is_over_4000_characters(ws: Path) -> None:
    assert_refused(run(ws, "message", "m" * 4001), "4001 characters", "4000")


def test_stop_is_refused_when_the_report_is_too_long(ws: Path) -> None:
    (ws / "final.md").write_text("r" * 8001)
    assert_refused(run(ws, "stop", "--report", "final.md"), "8001 characters")
    assert not (ws / ".outerloop" / "syscall.json").exists()


def _with_pr(ws: Path, pr: int | None) -> None:
    write_views(ws, status={"run_id": "r", "benchmark": "b", "state": "running",
                            "sleeps_used": 1, "sleeps_left": 3, "launches_used": 0,
                            "launches_left": 4, "pr": pr},
                history=[], queue=[], siblings=[], reports={})


def test_stop_withdraw_commits_the_reason_when_the_run_has_a_pull_request(ws: Path) -> None:
    _with_pr(ws, 7)
    result = run(ws, "stop", "--withdraw", "the gain came from a cache I left warm")
    assert result.returncode == 0, result.stderr
    assert "#7" in result.stdout and "withdrawn" in result.stdout
    committed = json.loads((ws / ".outerloop" / "syscall.json").read_text())
    assert (committed["verb"], committed["withdraw"]) == (
        "stop", "the gain came from a cache I left warm")


def test_stop_withdraw_is_refused_when_the_run_has_no_pull_request(ws: Path) -> None:
    _with_pr(ws, None)
    assert_refused(run(ws, "stop", "--withdraw", "changed my mind"), "no pull request",
                   "stop")
    assert not (ws / ".outerloop" / "syscall.json").exists()


def test_stop_withdraw_is_refused_when_the_reason_is_empty_or_too_long(ws: Path) -> None:
    _with_pr(ws, 7)
    assert_refused(run(ws, "stop", "--withdraw", "  "), "needs a reason")
    assert_refused(run(ws, "stop", "--withdraw", "w" * 4001), "4001 characters")
    assert not (ws / ".outerloop" / "syscall.json").exists()


def test_request_over_64_kib_is_refused_when_messages_pile_up(ws: Path) -> None:
    results = [run(ws, "message", "m" * 4000) for _ in range(17)]
    assert all(r.returncode == 0 for r in results[:16])
    assert_refused(results[16], "bytes", "65536")


def test_sleep_is_refused_when_request_json_was_hand_edited_to_break_a_rule(ws: Path) -> None:
    assert launch(ws).returncode == 0
    request = staged(ws)
    request["launches"][0]["minutes"] = 999  # type: ignore[index]
    (ws / ".outerloop" / "request.json").write_text(json.dumps(request))
    assert_refused(run(ws, "sleep"), "minutes 999")
    assert not (ws / ".outerloop" / "syscall.json").exists()


@pytest.mark.parametrize("args", [[], ["frobnicate"], ["launch", "--name", "a", "--minutes",
                                                       "soon", "--", "true"],
                                  ["message", "x", "--to", "everyone"]])
def test_bad_input_is_refused_without_a_traceback_when_arguments_are_wrong(
        ws: Path, args: list[str]) -> None:
    assert_refused(run(ws, *args))


def test_corrupt_request_is_refused_without_a_traceback_when_staging(ws: Path) -> None:
    (ws / ".outerloop" / "request.json").write_text("{not json")
    assert_refused(launch(ws), "request.json")
    assert run(ws, "cancel").returncode == 0
    assert launch(ws).returncode == 0


def test_reports_refuses_a_path_when_a_name_tries_to_escape(ws: Path) -> None:
    assert_refused(run(ws, "reports", "../limits"), "no report named")
