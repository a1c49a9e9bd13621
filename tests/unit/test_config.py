"""Operator settings: precedence, and refusals that name the path and the fix."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from outerloop.config import ForgeSettings, load_settings
from outerloop.errors import ConfigError
from outerloop.home import init_home
from outerloop.private_files import read_key


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    init_home(home, forge="local", compute="local", harness="scripted", targets=["o/n"])
    return home


def test_env_overrides_file_when_both_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    monkeypatch.setenv("OUTERLOOP_LIMITS_STALE_DAYS", "3")
    assert load_settings(home).limits.stale_days == 3


def test_flag_overrides_env_when_both_set(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    monkeypatch.setenv("OUTERLOOP_COMPUTE_KIND", "slurm")
    assert load_settings(home, {"compute": {"kind": "local"}}).compute.kind == "local"


def test_file_overrides_default_when_set(tmp_path: Path) -> None:
    home = _home(tmp_path)
    text = (home / "outerloop.toml").read_text().replace("tick_minutes = 10", "tick_minutes = 7")
    (home / "outerloop.toml").write_text(text)
    assert load_settings(home).cadence.tick_minutes == 7


def test_bad_setting_names_field_and_fix_when_invalid(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    monkeypatch.setenv("OUTERLOOP_FORGE_KIND", "gitlab")
    with pytest.raises(ConfigError, match=r"forge\.kind") as caught:
        load_settings(home)
    assert "fix" in str(caught.value)


def test_group_writable_home_is_refused_when_loading(tmp_path: Path) -> None:
    home = _home(tmp_path)
    os.chmod(home, 0o775)
    with pytest.raises(ConfigError, match="chmod go-w") as caught:
        load_settings(home)
    assert str(home) in str(caught.value)


def test_key_file_readable_by_others_is_refused_when_read(tmp_path: Path) -> None:
    key = tmp_path / "token"
    key.write_text("secret")
    os.chmod(key, 0o644)
    with pytest.raises(ConfigError, match="chmod 600") as caught:
        read_key(key)
    assert str(key) in str(caught.value)


def test_key_file_is_read_when_private(tmp_path: Path) -> None:
    key = tmp_path / "token"
    key.write_text("secret\n")
    os.chmod(key, 0o600)
    assert read_key(key) == "secret"


def test_cli_prints_one_line_without_traceback_when_home_is_refused(tmp_path: Path) -> None:
    home = _home(tmp_path)
    os.chmod(home, 0o777)
    done = subprocess.run([sys.executable, "-m", "outerloop", "status", "--home", str(home)],
                          capture_output=True, text=True, check=False)
    assert done.returncode == 1
    assert "Traceback" not in done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "chmod go-w" in done.stderr


def test_missing_home_tells_to_init_when_ticking(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-m", "outerloop", "tick", "--home",
                           str(tmp_path / "nope")], capture_output=True, text=True, check=False)
    assert done.returncode == 1 and "outerloop init" in done.stderr


@pytest.mark.parametrize("name", ["GITHUB_TOKEN", "AWS_SECRET_ACCESS_KEY", "DB_PASSWORD",
                                  "api_key", "HF_TOKEN"])
def test_pass_env_refuses_a_name_when_it_looks_like_a_secret(
        tmp_path: Path, name: str) -> None:
    home = _home(tmp_path)
    text = (home / "outerloop.toml").read_text().replace(
        'kind = "local"\n\n[harness]', f'kind = "local"\npass_env = ["HTTPS_PROXY", "{name}"]'
        f'\n\n[harness]')
    (home / "outerloop.toml").write_text(text)
    with pytest.raises(ConfigError) as caught:
        load_settings(home)
    assert "compute.pass_env" in str(caught.value) and "looks like a secret" in str(caught.value)
    assert name in str(caught.value)


def test_placement_of_a_kind_falls_back_to_compute_when_its_own_field_is_unset(
        tmp_path: Path) -> None:
    home = _home(tmp_path)
    text = (home / "outerloop.toml").read_text().replace(
        'kind = "local"\n\n[harness]',
        'kind = "slurm"\npartition = "cpu"\naccount = "lab"\ngpu_request = "gres"\n\n'
        '[compute.eval]\npartition = "gpu"\ngpu_type = "a100"\nextra_sbatch = '
        '["--reservation=ml"]\n\n[compute.kernel]\ntime_minutes = 60\n\n[harness]')
    (home / "outerloop.toml").write_text(text)
    compute = load_settings(home).compute
    evals = compute.placement("eval")
    assert (evals.partition, evals.account, evals.gpu_type, evals.gpu_request) == (
        "gpu", "lab", "a100", "gres")
    assert evals.extra_sbatch == ["--reservation=ml"]
    session = compute.placement("session")
    assert (session.partition, session.account, session.gpu_type) == ("cpu", "lab", None)
    assert compute.placement("kernel").time_minutes == 60


def test_env_overrides_reach_placement_and_lists_when_set(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    monkeypatch.setenv("OUTERLOOP_COMPUTE_EVAL_PARTITION", "gpu-big")
    monkeypatch.setenv("OUTERLOOP_COMPUTE_PASS_ENV", "HTTPS_PROXY,SSL_CERT_FILE")
    monkeypatch.setenv("OUTERLOOP_COMPUTE_SETUP", '["module load cuda/12.4"]')
    compute = load_settings(home).compute
    assert compute.placement("eval").partition == "gpu-big"
    assert compute.pass_env == ["HTTPS_PROXY", "SSL_CERT_FILE"]
    assert compute.setup == ["module load cuda/12.4"]


def test_extra_sbatch_refuses_a_line_when_it_is_not_one_long_option(tmp_path: Path) -> None:
    home = _home(tmp_path)
    text = (home / "outerloop.toml").read_text().replace(
        'kind = "local"\n\n[harness]', 'kind = "local"\nextra_sbatch = ["-p gpu; rm -rf /"]'
        '\n\n[harness]')
    (home / "outerloop.toml").write_text(text)
    with pytest.raises(ConfigError, match=r"compute\.extra_sbatch"):
        load_settings(home)


def test_kernel_logins_are_the_login_then_the_former_ones_when_set() -> None:
    forge = ForgeSettings(login="outerloop-bot", former_logins=["old-bot"])
    assert forge.kernel_logins == ["outerloop-bot", "old-bot"]


def test_kernel_logins_are_empty_when_the_login_is_blank() -> None:
    assert ForgeSettings(login="", former_logins=["old-bot"]).kernel_logins == []


def test_a_blank_former_login_is_refused_naming_the_field_when_loaded(tmp_path: Path) -> None:
    """Claim counting, the executor's marker lookups and the lanes read one login list;
    a blank entry would make some fail closed and others not, so it is refused."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "outerloop.toml").write_text('[forge]\nformer_logins = ["old-bot", " "]\n')
    with pytest.raises(ConfigError, match=r"forge\.former_logins.*blank"):
        load_settings(home)
