"""Kernel code that touches agent-writable paths, attacked with the real kernel code.

What the tick-level test (``test_agent_symlinks.py``) cannot stage deterministically is
staged here with the real harness and channel code: a symlink where the Codex harness
writes ``config.toml``, a transcript path that is a symlink to a key, and the races a
leftover process runs against the kernel — a directory flipped between a real one and
a symlink to the kernel's files while the artifact copy, the views' ``reports/``
rebuild or the live watcher works. Each flipper is a real process; each kernel file it
aims at must stay byte-for-byte the same.
"""

from __future__ import annotations

import contextlib
import json
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from outerloop.attempt import artifacts, channel
from outerloop.attempt.live import Watcher
from outerloop.harness.agent_cli import CliSettings
from outerloop.harness.base import SessionLimits, SessionResult
from outerloop.harness.codex import CodexHarness
from outerloop.harness.evidence import save_evidence
from outerloop.harness.scripted import ScriptedHarness, harness_dir
from tests.security.fixtures import FORGE_TOKEN

pytestmark = [pytest.mark.security]

FLIPPER = r"""
import os, random, sys, time
path, victim, stash = sys.argv[1], sys.argv[2], sys.argv[1] + ".stash"
end = time.monotonic() + float(sys.argv[3])
while time.monotonic() < end:
    try:
        os.rename(path, stash)
        os.symlink(victim, path)
        time.sleep(random.random() / 2000)
        os.unlink(path)
        os.rename(stash, path)
        time.sleep(random.random() / 2000)
    except OSError:
        pass
"""
RACE_S = 6.0
LIMITS = SessionLimits(max_turns=5, minutes=1)


@contextmanager
def flipping(path: Path, victim: Path, seconds: float = RACE_S) -> Iterator[None]:
    """A real process (the agent's leftover) swapping ``path`` with a symlink to
    ``victim`` until the block ends."""
    proc = subprocess.Popen([sys.executable, "-c", FLIPPER, str(path), str(victim),
                             str(seconds)])
    try:
        time.sleep(0.1)
        yield
    finally:
        proc.kill()
        proc.wait()
        stash = Path(str(path) + ".stash")
        if path.is_symlink():
            path.unlink()
        if stash.exists() and not path.exists():
            stash.rename(path)


@pytest.fixture
def kernel_files(tmp_path: Path) -> dict[Path, bytes]:
    """A home's kernel files outside every grant: a key, a ledger file, the config."""
    home = tmp_path / "home"
    files = {home / "keys" / "forge-token": (FORGE_TOKEN + "\n").encode(),
             home / "ledger" / "demo__t" / "tick.jsonl": b'{"v":1,"seq":1}\n' * 46,
             home / "outerloop.toml": b'[forge]\nkind = "local"\n',
             home / "cache" / "keep" / "reports" / "precious.md": b"keep me\n"}
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
    return files


def unchanged(files: dict[Path, bytes]) -> list[str]:
    """The kernel files changed or gone, and any file that appeared beside them."""
    changed = [str(p) for p, data in files.items() if not p.exists() or p.read_bytes() != data]
    roots = {p.parent for p in files}
    return changed + sorted(str(p) for root in roots for p in root.iterdir()
                            if p not in files and p.is_file() and not p.is_symlink())


def _fake_codex(tmp_path: Path) -> CliSettings:
    binary = tmp_path / "bin" / "codex"
    binary.parent.mkdir()
    binary.write_text("#!/bin/sh\ncat >/dev/null\nexit 0\n")
    binary.chmod(0o755)
    key = tmp_path / "model-key"
    key.write_text("sk-test\n")
    key.chmod(0o600)
    return CliSettings(binary=str(binary), model=None, key_file=key, base_url=None,
                       seconds_per_minute=1.0)


@pytest.mark.parametrize("planted", ["config.toml", ".codex"])
def test_codex_config_write_follows_no_symlink_when_the_agent_planted_one(
        tmp_path: Path, kernel_files: dict[Path, bytes], planted: str) -> None:
    home, ws = tmp_path / "run" / "home", tmp_path / "run" / "ws"
    ws.mkdir(parents=True)
    (home / ".codex").mkdir(parents=True)
    config = tmp_path / "home" / "outerloop.toml"
    if planted == "config.toml":
        (home / ".codex" / "config.toml").symlink_to(config)
    else:
        (home / ".codex").rmdir()
        (home / ".codex").symlink_to(tmp_path / "home" / "keys")
        (tmp_path / "home" / "keys" / "config.toml").symlink_to(
            tmp_path / "home" / "keys" / "forge-token")
    result = CodexHarness(_fake_codex(tmp_path)).run("hi", ws, home, None,
                                                     SessionLimits(max_turns=1, minutes=1))
    assert unchanged(kernel_files) == []
    assert result.stop_reason == "end_turn", result.error_detail
    assert (home / ".codex").is_dir() and not (home / ".codex").is_symlink()
    assert 'model_provider = "outerloop"' in (home / ".codex" / "config.toml").read_text()


def test_transcript_behind_a_symlink_is_not_copied_when_saving_evidence(
        tmp_path: Path, kernel_files: dict[Path, bytes]) -> None:
    home = tmp_path / "run" / "home"
    (home / ".claude").mkdir(parents=True)
    (home / ".claude" / "projects").symlink_to(tmp_path / "home" / "keys")
    result = SessionResult(stop_reason="end_turn",
                           transcript_path=str(home / ".claude" / "projects" / "forge-token"))
    legs = tmp_path / "run" / "legs"
    save_evidence(legs, 1, result, [], home)
    record = json.loads((legs / "001-session.json").read_text())
    assert "symlink" in record["transcript_error"]
    assert not (legs / "001-transcript.jsonl").exists()
    assert FORGE_TOKEN not in "".join(p.read_text() for p in legs.iterdir())


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    ws = tmp_path / "run" / "ws"
    (ws / ".outerloop").mkdir(parents=True)
    return ws


def test_artifact_copy_never_reads_a_key_when_a_leftover_flips_a_tree_dir(
        tmp_path: Path, ws: Path, kernel_files: dict[Path, bytes]) -> None:
    tree = tmp_path / "run" / "trees" / "probe"
    (tree / "out").mkdir(parents=True)
    (tree / "out" / "forge-token").write_text("my own result\n")
    crashes: list[str] = []
    with flipping(tree / "out", tmp_path / "home" / "keys"):
        deadline = time.monotonic() + RACE_S - 1
        while time.monotonic() < deadline:
            try:
                artifacts.copy_artifacts(tree, ["out/forge-token"], ws,
                                         artifacts.results_rel("probe"))
            except OSError as exc:  # the kernel must not crash on a race either
                crashes.append(repr(exc))
    copied = ws / ".outerloop" / "results" / "probe" / "out" / "forge-token"
    assert not copied.exists() or FORGE_TOKEN not in copied.read_text()
    assert crashes == []


def test_artifact_copy_never_replaces_a_ledger_file_when_a_leftover_flips_results(
        tmp_path: Path, ws: Path, kernel_files: dict[Path, bytes]) -> None:
    tree = tmp_path / "run" / "trees" / "probe"
    tree.mkdir(parents=True)
    (tree / "tick.jsonl").write_text("agent-written\n")
    dest = artifacts.results_dir(ws, "probe")
    with flipping(dest, tmp_path / "home" / "ledger" / "demo__t"):
        deadline = time.monotonic() + RACE_S - 1
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, channel.ChannelError):  # refused mid-race
                artifacts.copy_artifacts(tree, ["tick.jsonl"], ws, artifacts.results_rel("probe"))
    assert unchanged(kernel_files) == []


def test_views_never_remove_a_directory_outside_when_a_leftover_flips_the_channel(
        tmp_path: Path, ws: Path, kernel_files: dict[Path, bytes]) -> None:
    status = {"run_id": "r", "benchmark": "b", "state": "running", "sleeps_used": 0,
              "sleeps_left": 1, "launches_used": 0, "launches_left": 1}
    with flipping(ws / ".outerloop", tmp_path / "home" / "cache" / "keep", 2 * RACE_S):
        deadline = time.monotonic() + 2 * RACE_S - 1
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError, channel.ChannelError):  # refused mid-race
                channel.write_views(ws, status=status, history=[], queue=[], siblings=[],
                                    reports={"r": "text"})
    assert unchanged(kernel_files) == []


def test_watcher_never_reads_or_removes_outside_when_ask_is_flipped(
        tmp_path: Path, ws: Path, kernel_files: dict[Path, bytes]) -> None:
    victim = tmp_path / "home" / "ledger" / "demo__t"
    (victim / "queue.json").write_text('{"nonce": "0123456789abcdef"}\n')
    files = {**kernel_files, victim / "queue.json": (victim / "queue.json").read_bytes()}
    answered: list[str] = []
    watcher = Watcher(ws, lambda verb: answered.append(verb) or {"ok": True})
    with watcher:
        ask = ws / ".outerloop" / "ask"
        with flipping(ask, victim, seconds=3):
            time.sleep(2.5)
        ask.mkdir(exist_ok=True)
        shutil.rmtree(ws / ".outerloop" / "answers")
        (ws / ".outerloop" / "answers").symlink_to(victim)  # answers/ planted too
        (ask / "queue.json").write_text('{"nonce": "00112233445566778899"}')
        time.sleep(1)
    assert unchanged(files) == []
    assert answered == ["queue"]  # the honest request was still answered
    answer = json.loads((ws / ".outerloop" / "answers" / "queue.json").read_text())
    assert answer["nonce"] == "00112233445566778899"


def _scripted(tmp_path: Path) -> tuple[ScriptedHarness, Path, Path]:
    script = tmp_path / "script.yaml"
    script.write_text("legs:\n  - - shell: 'true'\n  - - write: {path: out/a.txt, content: hi}\n")
    ws, home = tmp_path / "run" / "ws", tmp_path / "run" / "home"
    ws.mkdir(parents=True)
    home.mkdir(parents=True)
    return ScriptedHarness(script), ws, home


def test_scripted_session_of_an_older_version_resumes_from_its_home_state_once(
        tmp_path: Path) -> None:
    harness, ws, home = _scripted(tmp_path)
    old = home / ".scripted"
    old.mkdir()
    sid = "scripted-0123456789ab"
    (old / f"{sid}.json").write_text(json.dumps(
        {"session_id": sid, "script": str(tmp_path / "script.yaml"), "legs_played": 1}))
    result = harness.run("wake", ws, home, sid, LIMITS)
    assert result.stop_reason == "end_turn" and result.session_id == sid
    assert (ws / "out" / "a.txt").read_text() == "hi"  # leg 2 was played
    assert json.loads((harness_dir(home) / f"{sid}.json").read_text())["legs_played"] == 2
    assert result.transcript_path == str(harness_dir(home) / f"{sid}.jsonl")


def test_scripted_old_state_behind_a_symlink_is_refused_not_read(
        tmp_path: Path, kernel_files: dict[Path, bytes]) -> None:
    harness, ws, home = _scripted(tmp_path)
    (home / ".scripted").symlink_to(tmp_path / "home" / "keys")
    result = harness.run("wake", ws, home, "scripted-0123456789ab", LIMITS)
    assert result.is_error and "symlink" in (result.error_detail or "")
    assert unchanged(kernel_files) == []


def test_scripted_write_step_refuses_a_symlinked_directory_in_the_workspace(
        tmp_path: Path, kernel_files: dict[Path, bytes]) -> None:
    harness, ws, home = _scripted(tmp_path)
    first = harness.run("brief", ws, home, None, LIMITS)
    (ws / "out").symlink_to(tmp_path / "home" / "keys")
    result = harness.run("wake", ws, home, first.session_id, LIMITS)
    assert result.is_error and "out is a symlink" in (result.error_detail or "")
    assert unchanged(kernel_files) == []


@pytest.mark.parametrize("kind", ["auto", "bwrap"])
def test_doctor_proves_kernel_operations_refuse_links_planted_from_inside(
        tmp_path: Path, kind: str) -> None:
    from outerloop.config import load_settings
    from outerloop.doctor.sandbox import check_sandbox
    from outerloop.sandbox.resolve import bwrap_problem
    from tests.support import make_home

    if kind == "bwrap" and bwrap_problem():
        pytest.skip(f"bwrap does not work here: {bwrap_problem()}")
    settings = make_home(tmp_path, extra_toml=f'\n[sandbox]\nkind = "{kind}"\n')
    (settings.home / "keys" / "forge-token").write_text(FORGE_TOKEN + "\n")
    settings = load_settings(settings.home)
    (check,) = [c for c in check_sandbox(settings) if c.name == "agent links"]
    assert check.status == "ok", check
    assert "openat2" in check.detail
    assert not (settings.home / "runs" / ".links-proof").exists()
