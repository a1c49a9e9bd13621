"""LocalCompute hands out stand-in GPUs and applies the operator's job environment
(``pass_env``, ``setup``) as Slurm jobs get them: real processes, no mocks."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from outerloop.compute.base import JobState
from outerloop.compute.jobenv import SETUP_FAILED_EXIT
from outerloop.compute.local import LocalCompute
from outerloop.config import ComputeSettings
from outerloop.errors import ComputeError
from tests.integration.test_local_compute import make_spec, wait_for, wait_state


def _compute(tmp_path: Path, **settings: object) -> LocalCompute:
    return LocalCompute(tmp_path / "jobs", seconds_per_minute=1.0,
                        settings=ComputeSettings.model_validate(settings))


@pytest.fixture
def leftovers() -> Iterator[list[LocalCompute]]:
    made: list[LocalCompute] = []
    yield made
    for local in made:
        for row in local.queue():
            local.cancel(row.job_id)
        wait_for(lambda: not local.queue(), "leftover jobs to end")  # noqa: B023


def test_gpu_job_sees_its_stand_in_devices_when_local_gpus_are_configured(
        tmp_path: Path, leftovers: list[LocalCompute]) -> None:
    local = _compute(tmp_path, local_gpus=4)
    leftovers.append(local)
    spec = make_spec(tmp_path, "two", 'echo "$CUDA_VISIBLE_DEVICES"', gpus=2)
    job = local.submit(spec)
    seen = wait_state(local, job)
    assert seen.state == JobState.COMPLETED
    assert (spec.log_path / "stdout").read_text().strip() == "0,1"


def test_gpu_tasks_wait_for_free_devices_when_more_ask_than_exist(
        tmp_path: Path, leftovers: list[LocalCompute]) -> None:
    local = _compute(tmp_path, local_gpus=2)
    leftovers.append(local)
    probe = tmp_path / "probe"
    probe.mkdir()
    command = (f'T=$OUTERLOOP_ARRAY_TASK_ID; echo "$CUDA_VISIBLE_DEVICES" > {probe}/$T.dev; '
               f'touch {probe}/$T.start; ls {probe} | grep -c start > {probe}/$T.seen; '
               f'sleep 1; rm {probe}/$T.start')
    spec = make_spec(tmp_path, "arr", command, gpus=1, array_size=4, array_concurrency=4)
    job = local.submit(spec)
    wait_for(lambda: local.observe([job])[job].state.terminal, "the array", timeout=30)
    seen = local.observe([job])[job]
    assert seen.state == JobState.COMPLETED
    assert max(int((probe / f"{k}.seen").read_text()) for k in range(4)) <= 2
    assert {(probe / f"{k}.dev").read_text().strip() for k in range(4)} == {"0", "1"}
    assert seen.gpu_seconds >= 4


def test_gpu_job_is_refused_when_it_asks_for_more_than_the_machine_has(tmp_path: Path) -> None:
    local = _compute(tmp_path, local_gpus=1)
    with pytest.raises(ComputeError, match="local_gpus"):
        local.submit(make_spec(tmp_path, "big", "true", gpus=2))


def test_job_environment_carries_pass_env_and_setup_when_the_operator_sets_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, leftovers: list[LocalCompute]) -> None:
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    monkeypatch.setenv("UNLISTED_VAR", "must-not-pass")
    local = _compute(tmp_path, pass_env=["HTTPS_PROXY"],
                     setup=["export FROM_SETUP=module-loaded"])
    leftovers.append(local)
    spec = make_spec(tmp_path, "env", "env")
    job = local.submit(spec)
    assert wait_state(local, job).state == JobState.COMPLETED
    env = (spec.log_path / "stdout").read_text()
    assert "HTTPS_PROXY=http://proxy.example:3128" in env.splitlines()
    assert "FROM_SETUP=module-loaded" in env.splitlines()
    assert "UNLISTED_VAR" not in env


def test_job_fails_naming_the_line_when_a_setup_line_fails(
        tmp_path: Path, leftovers: list[LocalCompute]) -> None:
    local = _compute(tmp_path, setup=["false", "touch should-not-run"])
    leftovers.append(local)
    spec = make_spec(tmp_path, "bad", "echo work")
    job = local.submit(spec)
    seen = wait_state(local, job)
    assert seen.state == JobState.FAILED and seen.exit_code == SETUP_FAILED_EXIT
    assert "setup line 1 failed: false" in (spec.log_path / "stderr").read_text()
    assert (spec.log_path / "stdout").read_text() == ""
