"""The kernel side of the channel: install, read once and re-check, views, artifacts."""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from outerloop.agent_tool import rules as tool
from outerloop.attempt import channel
from outerloop.attempt.artifacts import copy_artifacts, results_dir
from outerloop.attempt.channel import (
    MAX_ARTIFACT_BYTES,
    ChannelError,
    CommittedRequest,
    channel_limits,
    install_channel,
    read_committed,
    tool_bytes,
    write_views,
)
from outerloop.errors import OuterloopError

GIT = ["git", "-c", "core.hooksPath=/dev/null", "-c", "user.name=t", "-c", "user.email=t@t"]


def _git(ws: Path, *args: str) -> str:
    return subprocess.run([*GIT, *args], cwd=ws, check=True, capture_output=True,
                          text=True).stdout


def _repo(path: Path, files: dict[str, str] | None = None) -> Path:
    path.mkdir()
    _git(path, "init", "-q", "-b", "main")
    for name, body in (files or {"README.md": "hi\n"}).items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_text(body)
    _git(path, "add", "-A")
    _git(path, "commit", "-q", "-m", "base")
    return path


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = _repo(tmp_path / "ws")
    install_channel(ws, {})
    return ws


def _launch(**over: Any) -> dict[str, Any]:
    launch: dict[str, Any] = {"name": "base", "minutes": 30, "array": 1, "concurrency": 1,
                              "why": "", "artifacts": [], "command": "python train.py"}
    launch.update(over)
    return launch


def _commit(ws: Path, *, verb: str = "sleep", launches: list[dict[str, Any]] | None = None,
            **extra: Any) -> Path:
    request = {"launches": launches if launches is not None else [_launch()],
               "submit": None, "messages": [], "stop": None}
    doc = {"verb": verb, "request": request, "at": "2026-01-01T00:00:00+00:00", **extra}
    path = ws / ".outerloop" / "syscall.json"
    path.write_text(json.dumps(doc))
    return path


# ----------------------------------------------------------------------- installation


def test_install_puts_an_executable_copy_of_the_tool_in_the_channel(ws: Path) -> None:
    tool_copy = ws / ".outerloop" / "syscall"
    assert tool_copy.read_bytes() == tool_bytes()
    assert stat.S_IMODE(tool_copy.stat().st_mode) == 0o755


def test_install_adds_the_exclude_line_once_when_called_twice(ws: Path) -> None:
    install_channel(ws, {})
    lines = (ws / ".git" / "info" / "exclude").read_text().splitlines()
    assert lines.count("/.outerloop/") == 1


def test_channel_is_ignored_by_git_status_when_installed(ws: Path) -> None:
    assert _git(ws, "status", "--porcelain", "--untracked-files=all") == ""


def test_install_writes_every_limit_when_the_kernel_lowers_some(ws: Path) -> None:
    install_channel(ws, {"max_launch_minutes": 60, "launches_left": 3, "max_array": 99})
    limits = json.loads((ws / ".outerloop" / "limits.json").read_text())
    assert limits["max_launch_minutes"] == 60
    assert limits["max_array"] == 16
    assert limits["launches_left"] == 3
    assert set(tool.DEFAULT_LIMITS) <= set(limits)


def test_install_restores_the_tool_when_the_agent_edited_its_copy(ws: Path) -> None:
    (ws / ".outerloop" / "syscall").write_text("print('hacked')\n")
    install_channel(ws, {})
    assert (ws / ".outerloop" / "syscall").read_bytes() == tool_bytes()


def test_target_gets_no_tool_when_its_tree_tracks_the_channel(tmp_path: Path) -> None:
    target = _repo(tmp_path / "ws", {".outerloop/syscall": "print('mine')\n"})
    with pytest.raises(ChannelError, match="gets no tool"):
        install_channel(target, {}, git_dir=target / ".git")
    assert (target / ".outerloop" / "syscall").read_text() == "print('mine')\n"


def test_channel_error_is_an_outerloop_error_when_raised() -> None:
    assert issubclass(ChannelError, OuterloopError)


def test_code_limits_match_the_tool_defaults_when_compared() -> None:
    assert channel.DEFAULT_LIMITS == tool.DEFAULT_LIMITS
    assert channel.MAX_LAUNCHES_PER_SLEEP == 8 and channel.MAX_REQUEST_BYTES == 65536


def test_channel_limits_count_an_overspent_budget_as_zero_when_negative() -> None:
    assert channel_limits({"launches_left": -2})["launches_left"] == 0


def test_channel_limits_never_raise_a_ceiling_when_asked_to() -> None:
    assert channel_limits({"max_command_chars": 10_000})["max_command_chars"] == 2000
    with pytest.raises(ValueError, match="unknown channel limit"):
        channel_limits({"max_gpus": 1})


# ---------------------------------------------------------------- reading the commit


def test_read_committed_returns_none_when_nothing_was_committed(ws: Path) -> None:
    (ws / ".outerloop" / "request.json").write_text("{}")
    assert read_committed(ws) is None
    assert not (ws / ".outerloop" / "request.json").exists()


def test_read_committed_parses_and_deletes_the_file_when_the_tool_committed(ws: Path) -> None:
    done = subprocess.run(
        ["python3", ".outerloop/syscall", "launch", "--name", "lr", "--minutes", "20",
         "--artifact", "out/m.json", "--", "python", "train.py"],
        cwd=ws, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    subprocess.run(["python3", ".outerloop/syscall", "message", "hello", "--to", "self"],
                   cwd=ws, check=True, capture_output=True)
    subprocess.run(["python3", ".outerloop/syscall", "sleep"], cwd=ws, check=True,
                   capture_output=True)
    committed = read_committed(ws)
    assert isinstance(committed, CommittedRequest)
    assert committed.verb == "sleep"
    assert [(x.name, x.minutes, x.artifacts) for x in committed.launches] == [
        ("lr", 20, ["out/m.json"])]
    assert [(m.to, m.text) for m in committed.messages] == [("self", "hello")]
    assert committed.submit is None and committed.stop_report is None
    assert not (ws / ".outerloop" / "syscall.json").exists()
    assert read_committed(ws) is None


def test_read_committed_carries_the_stop_report_when_the_agent_stopped(ws: Path) -> None:
    _commit(ws, verb="stop", launches=[], report="nothing helped")
    committed = read_committed(ws)
    assert committed is not None
    assert (committed.verb, committed.stop_report) == ("stop", "nothing helped")


@pytest.mark.parametrize(("launch", "words"), [
    (_launch(minutes=241), "minutes 241"),
    (_launch(array=17, concurrency=1), "array 17"),
    (_launch(name="Bad Name"), "does not match"),
    (_launch(command="x" * 2001), "2001 characters"),
    (_launch(artifacts=["../../etc/passwd"]), "'..'"),
    (_launch(artifacts=["/etc/passwd"]), "absolute"),
    (_launch(concurrency=4), "concurrency 4"),
    (_launch(minutes="30"), "minutes '30'"),
    (_launch(minutes=True), "minutes True"),
    (_launch(extra="x"), "unknown fields"),
])
def test_kernel_refuses_a_hand_edited_commit_when_it_breaks_a_rule(
        ws: Path, launch: dict[str, Any], words: str) -> None:
    path = _commit(ws, launches=[launch])
    with pytest.raises(ChannelError, match="refused") as caught:
        read_committed(ws)
    assert words in str(caught.value)
    assert "sleep" in str(caught.value)
    assert not path.exists()


def test_kernel_refuses_nine_launches_when_the_tool_was_bypassed(ws: Path) -> None:
    _commit(ws, launches=[_launch(name=f"run-{i}") for i in range(9)])
    with pytest.raises(ChannelError, match="9 launches staged, over the limit of 8"):
        read_committed(ws)


def test_kernel_refuses_a_long_report_when_the_tool_was_bypassed(ws: Path) -> None:
    _commit(ws, verb="stop", launches=[], report="r" * 8001)
    with pytest.raises(ChannelError, match="8001 characters"):
        read_committed(ws)


def test_kernel_uses_its_own_limits_when_the_agent_raised_limits_json(ws: Path) -> None:
    (ws / ".outerloop" / "limits.json").write_text(json.dumps({"max_launch_minutes": 240}))
    _commit(ws, launches=[_launch(minutes=90)])
    with pytest.raises(ChannelError, match=r"1\.\.60"):
        read_committed(ws, limits={"max_launch_minutes": 60})


def test_kernel_refuses_more_launches_than_are_left_when_the_budget_is_low(ws: Path) -> None:
    _commit(ws, launches=[_launch(name="a"), _launch(name="b")])
    with pytest.raises(ChannelError, match="1 launch"):
        read_committed(ws, limits={"launches_left": 1})


def test_kernel_refuses_a_reused_name_when_an_earlier_sleep_used_it(ws: Path) -> None:
    _commit(ws, launches=[_launch(name="base")])
    with pytest.raises(ChannelError, match="already used in this run"):
        read_committed(ws, used_names={"base"})


def test_kernel_refuses_an_oversized_file_when_it_is_over_64_kib(ws: Path) -> None:
    path = _commit(ws, launches=[])
    path.write_text(json.dumps({"pad": "x" * 70_000}))
    with pytest.raises(ChannelError, match="65536 bytes"):
        read_committed(ws)
    assert not path.exists()


@pytest.mark.parametrize("body", ["{oops", "[]", '"sleep"', '{"verb": "launch"}'])
def test_kernel_refuses_a_malformed_file_when_it_is_not_a_request(ws: Path, body: str) -> None:
    (ws / ".outerloop" / "syscall.json").write_text(body)
    with pytest.raises(ChannelError):
        read_committed(ws)
    assert read_committed(ws) is None


def test_kernel_refuses_a_symlinked_commit_without_touching_its_target(
        ws: Path, tmp_path: Path) -> None:
    victim = tmp_path / "victim.json"
    victim.write_text('{"verb": "sleep"}')
    (ws / ".outerloop" / "syscall.json").symlink_to(victim)
    with pytest.raises(ChannelError, match="symlink"):
        read_committed(ws)
    assert victim.exists()
    assert not (ws / ".outerloop" / "syscall.json").is_symlink()



def test_kernel_refuses_a_fifo_left_as_the_commit_without_blocking(ws: Path) -> None:
    os.mkfifo(ws / ".outerloop" / "syscall.json")
    with pytest.raises(ChannelError, match="not a regular file"):
        read_committed(ws)
    assert not (ws / ".outerloop" / "syscall.json").exists()

def test_kernel_refuses_a_channel_when_the_agent_swapped_it_for_a_symlink(
        ws: Path, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "syscall.json").write_text("{}")
    os.rename(ws / ".outerloop", tmp_path / "old-channel")
    (ws / ".outerloop").symlink_to(elsewhere)
    with pytest.raises(ChannelError, match="symlink"):
        read_committed(ws)
    assert (elsewhere / "syscall.json").exists()


# -------------------------------------------------------------------------- the views


def _views(ws: Path, reports: dict[str, str]) -> None:
    write_views(
        ws,
        status={"run_id": "tsp-1", "benchmark": "tsp", "state": "running", "sleeps_used": 0,
                "sleeps_left": 4, "launches_used": 0, "launches_left": 8},
        history=[{"sleep": 1, "name": "a", "last_line": "y" * 900}],
        queue=[{"name": "a", "job": "7", "state": "PENDING", "limit_minutes": 30}],
        siblings=[{"agent": "agent-02", "benchmark": "tsp", "headline": "h" * 900}],
        reports=reports,
    )


def test_write_views_writes_each_view_when_called(ws: Path) -> None:
    _views(ws, {"run-a": "# A\n"})
    box = ws / ".outerloop"
    status = json.loads((box / "status.json").read_text())
    assert status == {"run_id": "tsp-1", "benchmark": "tsp", "agent": None, "state": "running",
                      "sleeps_used": 0, "sleeps_left": 4, "launches_used": 0,
                      "launches_left": 8, "gpu_hours_used": None, "gpu_hours_left": None,
                      "pr": None}
    history = json.loads((box / "history.json").read_text())
    assert history[0]["name"] == "a" and len(history[0]["last_line"]) <= 500
    assert json.loads((box / "queue.json").read_text())[0]["elapsed_s"] == 0
    assert len(json.loads((box / "siblings.json").read_text())[0]["headline"]) <= 300
    assert (box / "reports" / "run-a.md").read_text() == "# A\n"


def test_write_views_replaces_old_reports_when_called_again(ws: Path) -> None:
    _views(ws, {"run-a": "# A\n"})
    _views(ws, {"run-b": "# B\n"})
    assert sorted(p.name for p in (ws / ".outerloop" / "reports").iterdir()) == ["run-b.md"]


def test_write_views_refuses_a_report_name_when_it_is_a_path(ws: Path) -> None:
    with pytest.raises(ValueError, match="report names"):
        _views(ws, {"../escape": "x"})


def test_write_views_refuses_an_unknown_field_when_the_format_drifts(ws: Path) -> None:
    with pytest.raises(ValueError):
        write_views(ws, status={"run_id": "r", "bogus": 1}, history=[], queue=[],
                    siblings=[], reports={})


# ---------------------------------------------------------------------- the artifacts


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    (tree / "out").mkdir(parents=True)
    (tree / "out" / "metrics.json").write_text('{"score": 1}')
    return tree


def test_copy_artifacts_copies_a_regular_file_when_it_is_inside_the_tree(
        tree: Path, tmp_path: Path) -> None:
    dest = tmp_path / "dest"
    assert copy_artifacts(tree, ["out/metrics.json"], dest) == []
    assert (dest / "out" / "metrics.json").read_text() == '{"score": 1}'


def test_copy_artifacts_refuses_a_symlink_when_the_file_is_one(
        tree: Path, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("key")
    (tree / "out" / "link.txt").symlink_to(secret)
    notes = copy_artifacts(tree, ["out/link.txt"], tmp_path / "dest")
    assert len(notes) == 1 and "symlink" in notes[0]
    assert not (tmp_path / "dest" / "out" / "link.txt").exists()


def test_copy_artifacts_refuses_a_symlink_when_a_directory_on_the_path_is_one(
        tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "data.txt").write_text("private")
    (tree / "via").symlink_to(outside)
    notes = copy_artifacts(tree, ["via/data.txt"], tmp_path / "dest")
    assert len(notes) == 1 and "symlink" in notes[0]


def test_copy_artifacts_refuses_an_escaping_path_when_it_uses_dotdot(
        tree: Path, tmp_path: Path) -> None:
    (tmp_path / "secret.txt").write_text("key")
    notes = copy_artifacts(tree, ["../secret.txt"], tmp_path / "dest")
    assert len(notes) == 1 and "'..'" in notes[0]
    assert not any((tmp_path / "dest").rglob("*"))


def test_copy_artifacts_refuses_a_file_when_it_is_5_mb_plus_one_byte(
        tree: Path, tmp_path: Path) -> None:
    (tree / "big.bin").write_bytes(b"\0" * (MAX_ARTIFACT_BYTES + 1))
    (tree / "edge.bin").write_bytes(b"\0" * MAX_ARTIFACT_BYTES)
    notes = copy_artifacts(tree, ["big.bin", "edge.bin"], tmp_path / "dest")
    assert len(notes) == 1 and "big.bin" in notes[0] and "over the limit" in notes[0]
    assert (tmp_path / "dest" / "edge.bin").stat().st_size == MAX_ARTIFACT_BYTES


def test_copy_artifacts_notes_a_missing_file_or_a_directory_when_asked_for_one(
        tree: Path, tmp_path: Path) -> None:
    notes = copy_artifacts(tree, ["out/none.json", "out"], tmp_path / "dest")
    assert "not found" in notes[0]
    assert "not a regular file" in notes[1]


def test_results_dir_removes_a_planted_symlink_when_creating_the_launch_folder(
        ws: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    (ws / ".outerloop" / "results").mkdir()
    (ws / ".outerloop" / "results" / "lr").symlink_to(outside)
    dest = results_dir(ws, "lr", 2)
    assert dest == ws / ".outerloop" / "results" / "lr" / "2"
    assert not (ws / ".outerloop" / "results" / "lr").is_symlink()
    assert not any(outside.iterdir())


def test_copy_artifacts_does_not_write_through_a_planted_symlink_when_one_is_in_dest(
        tree: Path, tmp_path: Path) -> None:
    outside = tmp_path / "outside"
    outside.mkdir()
    dest = tmp_path / "dest"
    dest.mkdir()
    (dest / "out").symlink_to(outside)
    assert copy_artifacts(tree, ["out/metrics.json"], dest) == []
    assert not any(outside.iterdir())
    assert (dest / "out" / "metrics.json").is_file()


def test_install_never_reads_the_workspace_git_config_when_the_agent_broke_it(
        ws: Path) -> None:
    (ws / ".git" / "config").write_text("[core\nthis is not git config\n")
    install_channel(ws, {})  # a git process in ws would fail: "bad config line 1"
    assert "/.outerloop/" in (ws / ".git" / "info" / "exclude").read_text().splitlines()


def test_install_refuses_a_workspace_whose_git_dir_is_a_file_when_it_points_elsewhere(
        tmp_path: Path) -> None:
    elsewhere = _repo(tmp_path / "ledger")
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / ".git").write_text(f"gitdir: {elsewhere / '.git'}\n")
    with pytest.raises(ChannelError, match="plain clone"):
        install_channel(ws, {})
    assert "/.outerloop/" not in (elsewhere / ".git" / "info" / "exclude").read_text()
