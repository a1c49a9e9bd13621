"""Parsing Slurm's output and deciding states, from the exact strings verified on
Slurm 22.05 (shared/slurm/README.md). No Slurm needed."""

from __future__ import annotations

from datetime import datetime, timedelta
from pathlib import Path

import pytest

from outerloop.compute import jobscript
from outerloop.compute.base import JobSpec, JobState
from outerloop.compute.slurm_parse import (
    SqueueRow,
    build,
    decide,
    expand_tasks,
    parse_duration,
    parse_exit_code,
    parse_limit_minutes,
    parse_sacct,
    parse_squeue,
    sbatch_refused,
    submitted_tasks,
    used_seconds,
)

NOW = datetime(2026, 11, 29, 23, 0, 0)
SUBMIT = "sbatch --parsable --job-name=x --array=0-3%2 /l/job.sbatch"


def acct(job_id: str, state: str, elapsed: int = 0, exit_code: str = "0:0",
         end: str = "Unknown", submit: str = "", limit: str = "5", tres: str = "") -> str:
    raw = job_id.split("_")[0]
    return (f"{job_id}|{raw}|x|{state}|{exit_code}|{elapsed}|Unknown|{end}|{limit}|{tres}|"
            f"{submit}")


def queued(job_id: str, state: str = "RUNNING", elapsed: str = "0:05",
           reason: str = "None", limit: str = "5:00") -> SqueueRow:
    return SqueueRow(job_id=job_id, name="x", state=state, elapsed=elapsed, reason=reason,
                      limit=limit)


def one(job_id: str, queue: list[SqueueRow], sacct_lines: list[str],
        now: datetime = NOW) -> tuple[JobState, int, str | None]:
    seen = build([job_id], queue, parse_sacct("\n".join(sacct_lines)), now).jobs[job_id]
    return seen.state, seen.elapsed_s, seen.reason


@pytest.mark.parametrize(("text", "seconds"), [
    ("0:05", 5), ("1:02:03", 3723), ("2-00:00:00", 172800), ("UNLIMITED", 0), ("", 0)])
def test_duration_is_read_in_seconds_when_squeue_prints_it(text: str, seconds: int) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize(("text", "minutes"), [
    ("1:00", 1), ("1:30:00", 90), ("2-00:00:00", 2880), ("90", 90), ("UNLIMITED", None),
    ("Partition_Limit", None)])
def test_limit_is_read_in_minutes_when_given_as_squeue_or_sacct_prints_it(
        text: str, minutes: int | None) -> None:
    assert parse_limit_minutes(text) == minutes


@pytest.mark.parametrize(("text", "code"), [("0:0", 0), ("1:0", 1), ("3:0", 3), ("0:9", 137),
                                            ("", None)])
def test_exit_code_adds_128_when_the_job_was_killed_by_a_signal(text: str,
                                                                code: int | None) -> None:
    assert parse_exit_code(text) == code


def test_squeue_rows_are_parsed_when_in_the_documented_format() -> None:
    text = ("81|lsv-fmt|PENDING|0:00|debug|2026-11-29T22:38:53|JobHeldUser|N/A|UNLIMITED\n"
            "62_0|arr|RUNNING|0:05|debug|2026-11-29T22:38:53|None|N/A|1:00\n"
            "garbage line\n")
    rows = parse_squeue(text)
    assert [r.job_id for r in rows] == ["81", "62_0"]
    assert rows[1].elapsed_s == 5 and rows[0].reason == "JobHeldUser"


def test_sacct_submit_line_keeps_its_pipes_when_it_is_the_last_field() -> None:
    (row,) = parse_sacct("5|5|x|COMPLETED|0:0|1|a|b|2|cpu=1|sbatch --wrap='a | b'")
    assert row.submit_line == "sbatch --wrap='a | b'" and row.limit_minutes == 2


def test_cancelled_by_uid_reads_cancelled_when_accounting_adds_who() -> None:
    assert one("40", [], [acct("40", "CANCELLED by 0")])[0] == JobState.CANCELLED


@pytest.mark.parametrize(("word", "state"), [
    ("COMPLETED", JobState.COMPLETED), ("FAILED", JobState.FAILED),
    ("TIMEOUT", JobState.TIMEOUT), ("OUT_OF_MEMORY", JobState.OUT_OF_MEMORY),
    ("NODE_FAIL", JobState.NODE_FAIL), ("BOOT_FAIL", JobState.NODE_FAIL),
    ("PREEMPTED", JobState.INTERRUPTED), ("DEADLINE", JobState.TIMEOUT)])
def test_terminal_accounting_state_maps_when_the_queue_no_longer_lists_the_job(
        word: str, state: JobState) -> None:
    assert one("40", [], [acct("40", word)])[0] == state


def test_queue_wins_when_accounting_already_reads_a_final_state() -> None:
    assert one("40", [queued("40", "COMPLETING")], [acct("40", "COMPLETED", 4)])[0] == \
        JobState.COMPLETING


def test_live_accounting_state_is_unknown_not_gone_when_the_queue_dropped_the_job() -> None:
    state, _, reason = one("40", [], ["40|40|allocation|PENDING|0:0|0|Unknown|Unknown|5|"])
    assert state == JobState.UNKNOWN and reason is not None and "lag" in reason


def test_job_is_gone_when_neither_queue_nor_accounting_has_a_record() -> None:
    assert one("40", [], [])[0] == JobState.GONE


def test_just_started_job_reads_running_when_accounting_still_says_allocation_pending() -> None:
    line = "40|40|allocation|PENDING|0:0|0|Unknown|Unknown|5|"
    assert one("40", [queued("40", "RUNNING")], [line])[0] == JobState.RUNNING


def test_requeued_job_stays_pending_and_keeps_the_first_attempts_time_when_requeued() -> None:
    state, elapsed, reason = one("40", [queued("40", "PENDING", "0:00", "BeginTime")],
                                 [acct("40", "REQUEUED", 30), acct("40", "PENDING", 0)])
    assert (state, elapsed) == (JobState.PENDING, 30)
    assert reason is not None and "BeginTime" in reason and "attempt 2" in reason


def test_job_requeued_after_its_node_failed_says_so_when_pending_again() -> None:
    """Issue 51: ``JobRequeue`` after a node failure; accounting may not list the next
    attempt yet (the live job's last record is the failed one)."""
    for lines in ([acct("40", "NODE_FAIL", 4)],
                  [acct("40", "NODE_FAIL", 4), acct("40", "PENDING", 0)]):
        state, _, reason = one("40", [queued("40", "PENDING", "0:00", "BeginTime")], lines)
        assert state == JobState.PENDING
        assert reason is not None and "attempt 2 (requeued 1x)" in reason, (lines, reason)


def test_elapsed_sums_every_attempt_when_the_job_was_preempted_twice() -> None:
    lines = [acct("40", "PREEMPTED", 30), acct("40", "REQUEUED", 20),
             acct("40", "COMPLETED", 50)]
    assert one("40", [], lines)[:2] == (JobState.COMPLETED, 100)


def test_running_attempt_counts_the_queues_time_when_accounting_lags() -> None:
    rows = parse_sacct("\n".join([acct("40", "PREEMPTED", 30), acct("40", "PENDING", 0)]))
    assert used_seconds(rows, queued("40", "RUNNING", "0:12")) == 42


def test_preempted_job_is_interrupted_when_the_queue_no_longer_lists_it() -> None:
    state, _, reason = one("40", [], [acct("40", "PREEMPTED", 30)])
    assert state == JobState.INTERRUPTED and reason is not None and "infrastructure" in reason


def test_preempted_job_is_still_waited_on_when_the_queue_lists_it_again() -> None:
    assert one("40", [queued("40", "PENDING", "0:00")],
               [acct("40", "PREEMPTED", 30)])[0] == JobState.PENDING


def test_overrun_is_flagged_when_attempts_used_more_than_twice_the_limit() -> None:
    rows = parse_sacct("\n".join([acct("40", "PREEMPTED", 250, limit="2"),
                                  acct("40", "RUNNING", 0, limit="2")]))
    assert decide(queued("40", "RUNNING", "0:05", limit="2:00"), rows).overrun
    assert not decide(queued("40", "RUNNING", "0:05", limit="2:00"), rows[1:]).overrun


def test_overrun_job_reads_interrupted_when_it_was_cut_off() -> None:
    sacct = parse_sacct("\n".join([acct("40", "PREEMPTED", 250, limit="2"),
                                   acct("40", "RUNNING", 0, limit="2")]))
    queue = [queued("40", "RUNNING", "0:05", limit="2:00")]
    assert build(["40"], queue, sacct, NOW).overrun == ["40"]
    cut = build(["40"], queue, sacct, NOW, cut_off=frozenset({"40"})).jobs["40"]
    assert cut.state == JobState.INTERRUPTED and cut.elapsed_s == 255


@pytest.mark.parametrize(("spec", "tasks"), [
    ("2-3%2", [2, 3]), ("1,3,5-7", [1, 3, 5, 6, 7]), ("0-15:4", [0, 4, 8, 12]), ("7", [7])])
def test_array_spec_expands_to_its_tasks_when_folded_or_stepped(spec: str,
                                                                 tasks: list[int]) -> None:
    assert expand_tasks(spec) == tasks


def test_submit_line_names_the_arrays_tasks_when_it_has_an_array_option() -> None:
    assert submitted_tasks(SUBMIT) == {0, 1, 2, 3}
    assert submitted_tasks("sbatch -a 0-1 s.sh") == {0, 1}
    assert submitted_tasks("sbatch --account=x s.sh") == set()


def test_array_is_failed_when_one_task_failed_and_the_rest_completed() -> None:
    lines = [acct("22_0", "COMPLETED", 2, submit=SUBMIT, end="2026-11-29T22:00:00"),
             acct("22_1", "COMPLETED", 2, submit=SUBMIT),
             acct("22_2", "FAILED", 2, "1:0", submit=SUBMIT),
             acct("22_3", "COMPLETED", 2, submit=SUBMIT)]
    seen = build(["22"], [], parse_sacct("\n".join(lines)), NOW).jobs["22"]
    assert seen.state == JobState.FAILED and seen.exit_code == 1 and seen.elapsed_s == 8
    assert seen.tasks[2] == JobState.FAILED


def test_array_is_running_while_any_task_runs_and_others_wait() -> None:
    queue = [queued("22_2", "RUNNING"), queued("22_3", "PENDING", "0:00", "JobArrayTaskLimit")]
    lines = [acct("22_0", "COMPLETED", 2, submit=SUBMIT),
             acct("22_1", "FAILED", 2, "1:0", submit=SUBMIT)]
    seen = build(["22"], queue, parse_sacct("\n".join(lines)), NOW).jobs["22"]
    assert seen.state == JobState.RUNNING
    assert seen.tasks == {0: JobState.COMPLETED, 1: JobState.FAILED, 2: JobState.RUNNING,
                          3: JobState.PENDING}


def test_array_task_without_record_is_unknown_while_its_record_may_still_arrive() -> None:
    lines = [acct(f"22_{k}", "COMPLETED", 2, submit=SUBMIT, end="2026-11-29T22:59:50")
             for k in (0, 1, 3)]
    seen = build(["22"], [], parse_sacct("\n".join(lines)), NOW).jobs["22"]
    assert seen.state == JobState.UNKNOWN and seen.tasks[2] == JobState.UNKNOWN


def test_array_task_without_record_is_cancelled_when_the_array_ended_long_ago() -> None:
    lines = [acct(f"22_{k}", "COMPLETED", 2, submit=SUBMIT, end="2026-11-29T22:00:00")
             for k in (0, 1, 3)]
    rows = parse_sacct("\n".join(lines))
    seen = build(["22", "22_2"], [], rows, NOW + timedelta(hours=1)).jobs
    assert seen["22"].state == JobState.CANCELLED
    assert seen["22_2"].state == JobState.CANCELLED


def test_folded_pending_tasks_read_cancelled_when_the_whole_array_was_cancelled() -> None:
    lines = [acct("22_0", "COMPLETED", 2, submit=SUBMIT),
             acct("22_[1-3%2]", "CANCELLED by 0", submit=SUBMIT)]
    seen = build(["22"], [], parse_sacct("\n".join(lines)), NOW).jobs["22"]
    assert seen.state == JobState.CANCELLED
    assert seen.tasks == {0: JobState.COMPLETED, 1: JobState.CANCELLED,
                          2: JobState.CANCELLED, 3: JobState.CANCELLED}


def test_one_task_is_observed_on_its_own_when_asked_by_task_id() -> None:
    lines = [acct("22_1", "FAILED", 2, "2:0", submit=SUBMIT)]
    seen = build(["22_1"], [queued("22_0")], parse_sacct("\n".join(lines)), NOW).jobs["22_1"]
    assert (seen.state, seen.exit_code) == (JobState.FAILED, 2)


def spec(tmp_path: Path, **fields: object) -> JobSpec:
    base: dict[str, object] = {"name": "ol-r1-launch-1", "command": "python train.py",
                               "workdir": str(tmp_path / "tree"), "log_dir": str(tmp_path / "log"),
                               "time_minutes": 30}
    base.update(fields)
    return JobSpec(**base)  # type: ignore[arg-type]


def test_sbatch_argv_leaves_out_placement_when_none_is_configured(tmp_path: Path) -> None:
    argv = jobscript.sbatch_argv(spec(tmp_path), tmp_path / "log" / "job.sbatch")
    assert argv[:2] == ["sbatch", "--parsable"]
    assert argv[-1] == str(tmp_path / "log" / "job.sbatch")
    assert "--export=NONE" in argv and "--time=30" in argv and "--open-mode=append" in argv
    assert not any(a.startswith(("--partition", "--account", "--qos", "--nice", "--array",
                                 "--dependency", "--requeue", "--gres", "--mem", "--gpus",
                                 "--nodes", "--constraint"))
                   for a in argv)


def test_sbatch_argv_carries_every_option_when_the_spec_asks_for_it(tmp_path: Path) -> None:
    argv = jobscript.sbatch_argv(spec(
        tmp_path, partition="gpu", account="lab", qos="low", nice=100, array_size=16,
        array_concurrency=4, after_any=("12", "13_2"), singleton=True, begin="now+60",
        requeue=True, gpus=2, mem_mb=4000, cpus=8), tmp_path / "s")
    for option in ("--partition=gpu", "--account=lab", "--qos=low", "--nice=100",
                   "--array=0-15%4", "--dependency=afterany:12:13_2,singleton",
                   "--begin=now+60", "--requeue", "--gpus-per-node=2", "--mem=4000M",
                   "--cpus-per-task=8"):
        assert option in argv
    assert f"--output={tmp_path / 'log' / 'slurm-%A_%a.out'}" in argv


def test_job_script_appends_and_forwards_term_when_rendered(tmp_path: Path) -> None:
    text = jobscript.render_script(spec(tmp_path, env={"OUTERLOOP_RUN": "r1"}),
                                   {"PATH": "/bin", "GITHUB_TOKEN": "secret", "LANG": "C"})
    assert "#SBATCH --open-mode=append" in text
    assert "trap '' TERM" in text and "srun" in text and "kill -TERM" in text
    assert "export OUTERLOOP_RUN=r1" in text and "export LANG=C" in text
    assert "secret" not in text and "GITHUB_TOKEN" not in text
    assert f"export HOME={tmp_path / 'log' / 'home'}" in text


def test_array_job_script_writes_results_per_task_when_the_spec_is_an_array(
        tmp_path: Path) -> None:
    text = jobscript.render_script(spec(tmp_path, array_size=4), {})
    assert f'OUTERLOOP_LOG={tmp_path / "log"}/"$SLURM_ARRAY_TASK_ID"' in text


@pytest.mark.parametrize(("tres", "gpus"), [
    ("billing=1,cpu=1,gres/gpu=2,node=1", 2), ("cpu=4,gres/gpu:a100=4,node=1", 4),
    ("cpu=4,gres/gpu=3,gres/gpu:a100=3,node=1", 3), ("billing=1,cpu=1,node=1", 0), ("", 0)])
def test_gpus_are_read_from_alloc_tres_when_accounting_lists_them(tres: str, gpus: int) -> None:
    (row,) = parse_sacct(acct("7", "COMPLETED", 10, tres=tres))
    assert row.alloc_gpus == gpus


def test_gpu_seconds_sum_every_attempt_when_a_gpu_job_was_preempted_and_requeued() -> None:
    gpu2 = "billing=1,cpu=1,gres/gpu=2,node=1"
    rows = [acct("40", "PREEMPTED", 30, tres=gpu2), acct("40", "COMPLETED", 12, tres=gpu2)]
    seen = build(["40"], [], parse_sacct("\n".join(rows)), NOW).jobs["40"]
    assert seen.gpu_seconds == 2 * (30 + 12)


def test_gpu_seconds_of_a_running_attempt_come_from_the_queue_when_accounting_lags() -> None:
    running = SqueueRow(job_id="41", name="x", state="RUNNING", elapsed="0:20",
                         gres="gres:gpu:2", limit="5:00")
    seen = build(["41"], [running], parse_sacct(acct("41", "PENDING", 0)), NOW).jobs["41"]
    assert seen.gpu_seconds == 40


def test_array_gpu_seconds_add_up_their_tasks_when_each_task_had_one_gpu() -> None:
    gpu1 = "cpu=1,gres/gpu=1,node=1"
    rows = [acct("22_0", "COMPLETED", 10, tres=gpu1, submit=SUBMIT.replace("0-3%2", "0-1")),
            acct("22_1", "COMPLETED", 15, tres=gpu1)]
    seen = build(["22"], [], parse_sacct("\n".join(rows)), NOW).jobs["22"]
    assert seen.gpu_seconds == 25


@pytest.mark.parametrize(("fields", "flag"), [
    ({"gpus": 2}, "--gpus-per-node=2"),
    ({"gpus": 2, "gpu_type": "a100"}, "--gpus-per-node=a100:2"),
    ({"gpus": 1, "gpu_request": "gres"}, "--gres=gpu:1"),
    ({"gpus": 4, "gpu_request": "gres", "gpu_type": "h100"}, "--gres=gpu:h100:4"),
])
def test_sbatch_argv_asks_for_gpus_in_the_configured_form_when_the_job_needs_gpus(
        tmp_path: Path, fields: dict[str, object], flag: str) -> None:
    argv = jobscript.sbatch_argv(spec(tmp_path, **fields), tmp_path / "s")
    assert flag in argv
    assert sum(a.startswith(("--gres", "--gpus")) for a in argv) == 1


def test_sbatch_argv_spreads_one_task_per_node_when_the_job_spans_nodes(tmp_path: Path) -> None:
    argv = jobscript.sbatch_argv(spec(tmp_path, nodes=2, gpus=8), tmp_path / "s")
    assert "--nodes=2" in argv and "--ntasks-per-node=1" in argv and "--ntasks=1" not in argv


def test_sbatch_argv_carries_constraint_and_extra_options_when_placed(tmp_path: Path) -> None:
    argv = jobscript.sbatch_argv(spec(tmp_path, constraint="a100&ib",
                                      extra_sbatch=("--reservation=ml",)), tmp_path / "s")
    assert "--constraint=a100&ib" in argv and "--reservation=ml" in argv


def test_job_script_runs_setup_lines_before_the_work_when_the_operator_gives_some(
        tmp_path: Path) -> None:
    text = jobscript.render_script(spec(tmp_path, setup=("module load cuda/12.4",
                                                         "source /opt/venv/bin/activate")), {})
    setup_at = text.index("module load cuda/12.4")
    assert setup_at < text.index("source /opt/venv/bin/activate") < text.index("srun")
    assert text.index("unset $(compgen") < setup_at


def test_sbatch_argv_passes_no_requeue_when_the_spec_forbids_requeueing(tmp_path: Path) -> None:
    assert "--no-requeue" in jobscript.sbatch_argv(spec(tmp_path, requeue=False), tmp_path / "s")
    default = jobscript.sbatch_argv(spec(tmp_path), tmp_path / "s")
    assert not any("requeue" in a for a in default)  # the cluster's default applies


@pytest.mark.parametrize("message", [
    "sbatch: error: Batch job submission failed: Invalid qos specification",
    "sbatch: error: Batch job submission failed: Invalid account or account/partition "
    "combination specified",
    "sbatch: error: Batch job submission failed: Invalid partition name specified",
    "sbatch: error: Batch job submission failed: Job violates accounting/QOS policy (job "
    "submit limit, user's size and/or time limits)",
    "sbatch: error: Batch job submission failed: Requested node configuration is not "
    "available",
    "sbatch: error: Batch job submission failed: Requested time limit is invalid (missing "
    "or exceeds some limit)",
    "sbatch: error: Invalid --time specification",
    "sbatch: unrecognized option '--bogus'",
    "sbatch: error: Batch job submission failed: Job dependency problem",
])
def test_sbatch_failure_is_a_refusal_when_slurm_names_the_reason(message: str) -> None:
    assert sbatch_refused(message)


@pytest.mark.parametrize("message", [
    "sbatch: error: Batch job submission failed: Socket timed out on send/recv operation",
    "sbatch: error: Batch job submission failed: Unable to contact slurm controller "
    "(connect failure)",
    "sbatch: error: Batch job submission failed: Zero Bytes were transmitted or received",
    "sbatch: error: Batch job submission failed: Slurm backup controller in standby mode",
    "sbatch: error: Batch job submission failed: Communication connection failure",
    "sbatch: error: slurm_receive_msg: Connection reset by peer",
    "sbatch: error: Batch job submission failed: Unexpected message received",
    "Killed",
    "",
])
def test_sbatch_failure_is_unknown_when_no_refusal_is_clear(message: str) -> None:
    assert not sbatch_refused(message)
