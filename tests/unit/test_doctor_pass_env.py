"""What each tick driver gives the tick, read from the driver's own text (a crontab, a
systemd unit, a batch script): the names ``pass_env`` can copy into jobs. A name the
driver does not set counts as unset, whatever the shell doctor runs in has."""

from __future__ import annotations

from pathlib import Path

import pytest

from outerloop.doctor.base import Options
from outerloop.doctor.pass_env import (
    check_pass_env,
    cron_names,
    driver_envs,
    script_names,
    unit_names,
)
from tests.support import make_home

LINE = ("*/10 * * * * PATH=/opt/venv/bin:/usr/bin NO_PROXY=localhost /opt/venv/bin/python -m "
        "outerloop tick --quiet HTTP_PROXY=late >> /h/cron.log 2>&1 # outerloop tick for /h")


def test_cron_gives_its_own_names_the_crontab_lines_and_the_leading_assignments() -> None:
    names = cron_names(["# proxies", "HTTPS_PROXY=http://proxy:3128", "EMPTY=", LINE], LINE)
    assert {"HOME", "LOGNAME", "SHELL", "PATH", "HTTPS_PROXY", "NO_PROXY"} <= names
    assert "HTTP_PROXY" not in names  # an argument of the command, not its environment
    assert "EMPTY" not in names


def test_cron_gives_only_its_own_names_when_the_line_sets_nothing() -> None:
    line = "*/10 * * * * /usr/bin/python -m outerloop tick # outerloop tick for /h"
    assert cron_names([line], line) == {"HOME", "LOGNAME", "SHELL", "PATH"}


def test_a_unit_gives_its_environment_lines_and_its_environment_file(tmp_path: Path) -> None:
    env_file = tmp_path / "proxy.env"
    env_file.write_text("SSL_CERT_FILE=/etc/ca.pem\nexport NO_PROXY=localhost\n")
    unit = ("[Service]\nEnvironment=OUTERLOOP_HOME=/h\n"
            'Environment="HTTPS_PROXY=http://proxy:3128" "EMPTY="\n'
            f"EnvironmentFile=-{env_file}\nEnvironmentFile=-{tmp_path / 'missing.env'}\n")
    assert unit_names(unit) == {"OUTERLOOP_HOME", "HTTPS_PROXY", "SSL_CERT_FILE", "NO_PROXY"}


def test_a_batch_script_gives_its_exports_and_its_export_option() -> None:
    script = ("#!/bin/bash\n#SBATCH --export=NONE,CA=/etc/ca.pem,FROM_SHELL,UNSET_THERE\n"
              "set -euo pipefail\nexport OUTERLOOP_HOME=/h\nexport HTTPS_PROXY='http://p:1' A=1\n"
              "echo export NOT_THIS=1\n")
    names = script_names(script, {"FROM_SHELL": "x"})
    assert names == {"CA", "FROM_SHELL", "OUTERLOOP_HOME", "HTTPS_PROXY", "A"}


def _with_pass_env(tmp_path: Path, compute: str = "slurm") -> Path:
    settings = make_home(tmp_path, compute=compute)
    config = settings.home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        "[compute]\n", '[compute]\npass_env = ["DOCTOR_PROBE_PROXY"]\n', 1))
    return settings.home


def test_the_resident_chain_carries_a_name_set_in_the_shell_that_starts_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from outerloop.config import load_settings

    home = _with_pass_env(tmp_path)
    monkeypatch.setenv("DOCTOR_PROBE_PROXY", "http://proxy:3128")
    (resident,) = driver_envs(load_settings(home), "resident")
    assert "DOCTOR_PROBE_PROXY" in resident.names
    assert "outerloop start --mode resident" in resident.source
    monkeypatch.delenv("DOCTOR_PROBE_PROXY")
    (check,) = check_pass_env(load_settings(home), Options(driver="resident"))
    assert check.status == "fail" and check.name == "pass_env (resident)"
    assert "DOCTOR_PROBE_PROXY not set" in check.detail and "export" in check.fix


def test_every_driver_the_deploy_files_make_is_read_when_none_is_installed(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from outerloop.config import load_settings

    home = _with_pass_env(tmp_path)
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # no crontab, squeue finds nothing of ours
    monkeypatch.delenv("DOCTOR_PROBE_PROXY", raising=False)
    checks = check_pass_env(load_settings(home), Options())
    assert {c.name for c in checks} <= {"pass_env (cron)", "pass_env (systemd)",
                                        "pass_env (resident)", "pass_env (files)"}
    assert {"pass_env (cron)", "pass_env (files)"} <= {c.name for c in checks}
    assert all(c.status == "fail" for c in checks)


def test_pass_env_is_ok_with_nothing_to_pass(tmp_path: Path) -> None:
    from outerloop.config import load_settings

    settings = make_home(tmp_path)
    (check,) = check_pass_env(load_settings(settings.home), Options(driver="cron"))
    assert check.status == "ok" and "no names listed" in check.detail
