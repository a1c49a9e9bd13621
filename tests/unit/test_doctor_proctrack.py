"""The process-tracking check reads ``scontrol show config``: ``proctrack/cgroup`` is
ok, anything else a warning naming the setting and the fix. ``scontrol`` here is a
stand-in script on PATH (the real Slurm's check is in ``tests/slurm``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from outerloop.doctor.slurm import parse_config, proctrack_check

CONFIG = """Configuration data as of 2026-12-01T09:00:00
AccountingStorageType   = accounting_storage/slurmdbd
ProctrackType           = {proctrack}
TaskPlugin              = {task}
"""


def _scontrol(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, proctrack: str,
              task: str) -> None:
    script = tmp_path / "scontrol"
    script.write_text("#!/bin/sh\ncat <<'END'\n" + CONFIG.format(proctrack=proctrack, task=task)
                      + "END\n")
    script.chmod(0o755)
    monkeypatch.setenv("PATH", f"{tmp_path}:/usr/bin:/bin")


@pytest.mark.parametrize("proctrack", ["proctrack/linuxproc", "proctrack/pgid"])
def test_proctrack_check_warns_with_the_fix_when_it_is_not_cgroup(
        proctrack: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _scontrol(tmp_path, monkeypatch, proctrack, "task/none")
    check = proctrack_check()
    assert check.status == "warn"
    assert f"ProctrackType={proctrack}" in check.detail and "task/none" in check.detail
    assert "ProctrackType=proctrack/cgroup" in check.fix


def test_proctrack_check_is_ok_when_slurm_kills_the_job_cgroup(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _scontrol(tmp_path, monkeypatch, "proctrack/cgroup", "task/affinity,task/cgroup")
    check = proctrack_check()
    assert check.status == "ok", check.line()


def test_parse_config_reads_key_value_lines_when_scontrol_pads_them() -> None:
    config = parse_config(CONFIG.format(proctrack="proctrack/cgroup", task="task/cgroup"))
    assert config["ProctrackType"] == "proctrack/cgroup"
    assert config["TaskPlugin"] == "task/cgroup"
    assert "Configuration data as of 2026-12-01T09:00:00" not in config
