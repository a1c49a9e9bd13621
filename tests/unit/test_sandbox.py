"""The sandbox's pure parts and the Landlock wrapper's refusals (the confinement
itself is proved by tests/security)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.config import Settings
from outerloop.sandbox import SandboxError
from outerloop.sandbox.base import CWD, Grants, shell_words
from outerloop.sandbox.bwrap import BwrapSandbox
from outerloop.sandbox.landlock import WRAPPER
from outerloop.sandbox.links import escaping_links
from outerloop.sandbox.policy import grants
from outerloop.sandbox.secrets import known_secrets, neutralise_markers, secrets_in


def test_wrapper_exits_126_and_never_runs_the_child_when_its_arguments_are_bad(
        tmp_path: Path) -> None:
    flag = tmp_path / "ran"
    done = subprocess.run([sys.executable, "-I", "-S", str(WRAPPER), "--bogus", "x", "--",
                           "touch", str(flag)], capture_output=True, text=True)
    assert done.returncode == 126 and "refused to start the child" in done.stderr
    assert not flag.exists()


def test_wrapper_exits_126_and_never_runs_the_child_when_a_grant_cannot_be_made(
        tmp_path: Path) -> None:
    flag = tmp_path / "ran"
    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = subprocess.run([sys.executable, "-I", "-S", str(WRAPPER), "--rw",
                           str(blocker / "sub"), "--", "touch", str(flag)],
                          capture_output=True, text=True)
    assert done.returncode == 126 and not flag.exists()


def test_symlinks_are_refused_when_they_leave_the_workspace_or_the_scope() -> None:
    links = {"solver/a": "/etc/passwd", "solver/b": "../../keys/forge-token",
             "solver/c": "../README.md", "solver/d": "helper.py", "solver/e": "../.git/config"}
    bad = escaping_links(links, lambda p: p.startswith("solver/"))
    assert [b.split(" ")[0] for b in bad] == ["solver/a", "solver/b", "solver/c", "solver/e"]


def test_markers_in_agent_text_are_neutralised_when_posted() -> None:
    text = neutralise_markers("hi\n<!-- outerloop:report key=r1 -->\n")
    assert "<!--" not in text and "&lt;!-- outerloop:report" in text


def test_secret_is_found_when_it_is_escaped_inside_json() -> None:
    assert secrets_in({"report": "a\"b-SECRET-VALUE"}, ['b-SECRET-VALUE'])
    assert secrets_in({"m": ['x "quoted" secret']}, ['"quoted" secret'])
    assert not secrets_in({"report": "clean"}, ["b-SECRET-VALUE"])


def test_known_secrets_hold_every_key_file_and_pem_line_when_keys_exist(
        tmp_path: Path) -> None:
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "forge-token").write_text("ghp_abcdefghijklmnop\n")
    (keys / "app.pem").write_text("-----BEGIN KEY-----\nMIIEabcdefghijklmnop\n"
                                  "qrstuvwxyz0123456789\n-----END KEY-----\n")
    for key in keys.iterdir():
        key.chmod(0o600)
    found = known_secrets(Settings(home=tmp_path))
    assert {"ghp_abcdefghijklmnop", "MIIEabcdefghijklmnop", "qrstuvwxyz0123456789"} <= set(found)


def test_known_secrets_hold_config_values_and_revealed_rclone_passwords_when_configured(
        tmp_path: Path) -> None:
    rclone = shutil.which("rclone") or str(Path(sys.executable).parent / "rclone")
    obscured = subprocess.run([rclone, "obscure", "PLAINpassword123"], capture_output=True,
                              text=True, check=True).stdout.strip()
    keys = tmp_path / "keys"
    keys.mkdir()
    (keys / "rclone.conf").write_text(
        f"[store]\ntype = s3\nregion = us-east-1\nsecret_access_key = SECRETaccess0123\n"
        f"pass = {obscured}\ntoken = {{\"access_token\":\"ya29.TOKENvalue\"}}\n"
        f"key_file = /etc/not-a-secret-path\n")
    outside = tmp_path / "elsewhere.conf"
    outside.write_text("[arc]\nclient_secret = CLIENTsecret0123\n")
    for key in (keys / "rclone.conf", outside):
        key.chmod(0o600)
    settings = Settings(home=tmp_path, archive={"rclone_config": str(outside)})
    found = set(known_secrets(settings))
    assert {"SECRETaccess0123", obscured, "PLAINpassword123", "ya29.TOKENvalue",
            "CLIENTsecret0123"} <= found
    assert not {"us-east-1", "/etc/not-a-secret-path", "type = s3"} & found


def test_bwrap_drops_every_capability_and_binds_only_grants_when_wrapping() -> None:
    argv = BwrapSandbox("/usr/bin/bwrap").wrap(
        ["bash", "-c", "x"], Grants(("/usr",), ("/home/h/runs/r/ws", CWD)))
    assert argv[argv.index("--cap-drop") + 1] == "ALL"
    assert "--unshare-pid" in argv
    binds = [argv[i + 1] for i, w in enumerate(argv) if w in ("--bind", "--ro-bind-try")]
    assert binds == ["/usr", "/home/h/runs/r/ws", CWD]
    with_gpu = BwrapSandbox("/usr/bin/bwrap").wrap(
        ["true"], Grants((), (), devices=("/dev/null", "/dev/nvidia0")))
    assert with_gpu[with_gpu.index("--dev-bind-try") + 1] == "/dev/nvidia0"
    assert '"$PWD"' in shell_words(argv)


def test_wrapper_skips_devices_missing_on_this_node_and_creates_none_when_confining(
        tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    done = subprocess.run([sys.executable, "-I", "-S", str(WRAPPER), "--ro", "/usr",
                           "--rw", str(ws), "--dev", "/dev/null", "--dev", "/dev/nvidia15",
                           "--", "/bin/true"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert ws.is_dir() and not Path("/dev/nvidia15").exists()


def test_own_grant_is_refused_when_it_is_the_home_or_an_ancestor(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    for own in (home, tmp_path):
        with pytest.raises(SandboxError, match="ancestor"):
            grants((), (), [own], home)
    assert str(home / "runs") in grants((), (), [home / "runs"], home).read_write


def test_wrapper_closes_inherited_descriptors_when_it_execs_the_child(tmp_path: Path) -> None:
    ledger = tmp_path / "ledger.jsonl"
    ledger.write_text("kept\n")
    with ledger.open("a") as handle:
        fd = handle.fileno()
        probe = (f"import os\ntry:\n    os.write({fd}, b'LEAKED')\n    print('leaked')\n"
                 f"except OSError:\n    print('closed')")
        done = subprocess.run([sys.executable, "-I", "-S", str(WRAPPER), "--ro", "/usr",
                               "--ro", sys.base_prefix, "--ro", sys.prefix, "--",
                               sys.executable, "-I", "-c", probe],
                              capture_output=True, text=True, pass_fds=(fd,))
    assert done.stdout.strip() == "closed", done.stderr
    assert ledger.read_text() == "kept\n"
