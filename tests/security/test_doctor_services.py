"""``outerloop doctor`` proves no host service is reachable from inside: its confined
child is refused munge, a unix socket the doctor listens on, ``squeue``/``sbatch``/
``scancel`` and a write through a symlink out of its workspace, on each backend; and
the check fails when the rule is broken (the wrapper's unix socket filter disabled, or
a grant widened so the symlink's target is writable)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import tempfile
from pathlib import Path

import pytest
from click.testing import CliRunner

from outerloop.cli import main
from outerloop.config import Settings
from outerloop.doctor.sandbox import check_sandbox
from outerloop.kernel.tick import run_tick
from outerloop.sandbox import confine, resolve
from outerloop.sandbox.landlock import WRAPPER, LandlockSandbox
from outerloop.sandbox.off import REAPER
from outerloop.sandbox.proof import MUNGE_SOCKET, prove
from tests.security.fixtures import skip_reason
from tests.support import make_home

pytestmark = pytest.mark.security

FILTER_CALL = "        _deny_unix_sockets(libc, os.uname().machine)\n"
GRANTS_READ = "        user = _user(grants[\"--user\"])\n"


def with_kind(settings: Settings, kind: str) -> Settings:
    return settings.model_copy(update={"sandbox": settings.sandbox.model_copy(
        update={"kind": kind})})


def broken_wrapper(tmp_path: Path, old: str, new: str) -> str:
    text = WRAPPER.read_text()
    assert old in text, "the wrapper changed: update the mutation"
    path = tmp_path / "landlock_exec.py"
    path.write_text(text.replace(old, new))
    shutil.copy(REAPER, tmp_path / "reaper.py")  # the wrapper loads it from beside itself
    return str(path)


@pytest.fixture
def landlock_settings(tmp_path: Path) -> Settings:
    reason = skip_reason("landlock", None)
    if reason:
        pytest.skip(f"landlock cannot run here: {reason}")
    return with_kind(make_home(tmp_path), "landlock")


@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_doctor_proves_host_services_are_refused_when_sandboxed(tmp_path: Path,
                                                                kind: str) -> None:
    reason = skip_reason(kind, None)
    if reason:
        pytest.skip(f"{kind} cannot run here: {reason}")
    proof = prove(with_kind(make_home(tmp_path), kind))
    assert proof.ok, proof.detail
    assert "connect to a unix socket outside its grants" in proof.detail
    assert "write through a symlink out of its workspace" in proof.detail
    if os.path.exists(MUNGE_SOCKET):
        assert "connect to munge" in proof.detail
    for command in ("squeue", "sbatch", "scancel"):
        if shutil.which(command):
            assert f"run {command} (exit" in proof.detail


def test_doctor_fails_when_the_unix_socket_filter_is_disabled(
        tmp_path: Path, landlock_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    if resolve.abi_version() >= 9:
        pytest.skip("Landlock ABI 9 refuses host sockets itself: there is no filter here")
    wrapper = broken_wrapper(tmp_path, FILTER_CALL, "        pass\n")
    monkeypatch.setattr(resolve, "_landlock", lambda: LandlockSandbox(wrapper=wrapper))
    confine._cached.cache_clear()
    try:
        proof = prove(landlock_settings)
    finally:
        confine._cached.cache_clear()
    assert not proof.ok
    assert "could connect to a unix socket outside its grants" in proof.detail
    if os.path.exists(MUNGE_SOCKET):
        assert "connect to munge" in proof.detail
    if shutil.which("sbatch") and os.environ.get("OUTERLOOP_REAL_SLURM") == "1":
        assert "run squeue" in proof.detail and "run scancel" in proof.detail
        if os.geteuid() != 0:  # a root kernel's child is `nobody`: no Slurm account to submit
            assert "run sbatch" in proof.detail


def test_doctor_fails_when_a_symlink_in_the_workspace_writes_out_of_the_grants(
        tmp_path: Path, landlock_settings: Settings, monkeypatch: pytest.MonkeyPatch) -> None:
    outside = tmp_path / "outside"  # where the doctor keeps its symlink's target
    outside.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(outside))
    widened = GRANTS_READ.replace(
        "        user", f"        grants[\"--rw\"] = [*grants[\"--rw\"], {str(outside)!r}]\n"
                       f"        user")
    wrapper = broken_wrapper(tmp_path, GRANTS_READ, widened)
    monkeypatch.setattr(resolve, "_landlock", lambda: LandlockSandbox(wrapper=wrapper))
    confine._cached.cache_clear()
    try:
        proof = prove(landlock_settings)
    finally:
        confine._cached.cache_clear()
    assert not proof.ok
    assert proof.detail.endswith("could write through a symlink out of its workspace"), \
        proof.detail


def test_scheduler_reachable_is_announced_by_tick_status_and_board_when_nothing_closes_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Landlock below ABI 9 on an architecture the filter does not know (simulated:
    the choice says nothing closes host sockets) is used, and said loudly."""
    reason = skip_reason("landlock", None)
    if reason:
        pytest.skip(f"landlock cannot run here: {reason}")
    monkeypatch.setattr(resolve, "host_sockets_closed_by", lambda abi, machine=None: None)
    settings = make_home(tmp_path, extra_toml='[sandbox]\nkind = "landlock"\n')
    assert "HOST UNIX SOCKETS REACHABLE" in resolve.in_force(settings.sandbox)
    report = run_tick(settings)
    assert any(note.startswith("SCHEDULER REACHABLE") for note in report.notes)
    status = CliRunner().invoke(main, ["status", "--home", str(settings.home), "--json"])
    assert json.loads(status.output)["sandbox"]["warning"].startswith("SCHEDULER REACHABLE")
    assert "SCHEDULER REACHABLE" in (settings.home / "board" / "CLIMB.md").read_text()


def test_doctor_warns_when_a_bwrap_child_could_reach_a_host_abstract_socket(
        tmp_path: Path) -> None:
    """The gap docs/security.md lists: bwrap shares the network namespace, so a host
    service listening on an abstract socket is reachable from inside; Landlock scopes
    it. doctor names the socket and the fix."""
    reason = skip_reason("bwrap", None)
    if reason:
        pytest.skip(f"bwrap cannot run here: {reason}")
    name = f"outerloop-test-{os.getpid()}"
    with socket.socket(socket.AF_UNIX) as listener:
        listener.bind("\0" + name)
        listener.listen(1)
        checks = check_sandbox(with_kind(make_home(tmp_path), "bwrap"))
    assert checks[0].status == "ok", checks[0]
    (warning,) = [c for c in checks if c.name == "sandbox abstract sockets"]
    assert f"@{name}" in warning.detail and "landlock" in warning.fix
