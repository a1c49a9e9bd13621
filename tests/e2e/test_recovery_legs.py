"""Recovery of a run whose leg or eval died: the next session is told what it needs, and
an interrupted measurement is taken again, once."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from outerloop.config import Settings
from outerloop.forge.local import LocalForge
from outerloop.ledger.state import RunRecord, State
from outerloop.run.paths import RunPaths
from tests.e2e.explain_check import check_explained
from tests.support import AGENTS, TARGET, ended, make_home, open_issue, tick_until

pytestmark = pytest.mark.e2e

def _recovery_explained(settings: Settings, run_id: str) -> list[dict[str, object]]:
    """``explain`` of the run, checked against its ledger: it tells the recovery leg as
    one, submitted by the tick after the job before it died."""
    decisions = check_explained(settings.home, run_id)
    names = [d["decision"] for d in decisions]
    assert "submit-recover" in names, names
    recoveries = [d for d in decisions if d["decision"] == "leg"
                  and "a recovery (the job before it died)" in str(d["reason"])]
    assert len(recoveries) == 1, names
    assert names.index("submit-recover") < decisions.index(recoveries[0])
    return decisions


STALL_ONCE = "test -e .outerloop/stalled || { touch .outerloop/stalled; sleep 300; }"
"""The first time, the leg stalls (the test then kills its job: a node failure)."""


def _kill_job(settings: object, job_id: str) -> None:
    """SIGKILL a local job's runner and its tasks' process groups (a node failure)."""
    import contextlib
    import os
    import signal

    from outerloop.compute.local import LocalCompute
    from outerloop.compute.local_records import read_record

    home = settings.home  # type: ignore[attr-defined]
    record = read_record(LocalCompute(home / "jobs").job_dir(job_id))
    assert record is not None and record.runner_pid is not None
    os.kill(record.runner_pid, signal.SIGKILL)
    for task in record.tasks.values():
        if task.pgid:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(task.pgid, signal.SIGKILL)


def test_first_leg_recovery_gets_the_brief_when_the_first_leg_died(tmp_path: Path) -> None:
    script = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())
    script["legs"][0] = [{"shell": STALL_ONCE}, {"expect": "# Research brief"},
                         *script["legs"][0]]
    path = tmp_path / "dies-in-leg-1.yaml"
    path.write_text(yaml.safe_dump(script))
    settings = make_home(tmp_path, path)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, lambda s: any(
        (RunPaths.of(settings.home, r.run_id).ws / ".outerloop" / "stalled").exists()
        for r in s.runs.values()), timeout_s=120)
    (climb,) = [j for j in state.jobs.values() if j.purpose == "climb"]
    _kill_job(settings, climb.job_id)

    state = tick_until(settings, lambda s: ended(s) or any(
        r.legs >= 2 and not r.leg_open and r.sleeps >= 1 for r in s.runs.values()),
        timeout_s=240)

    (run,) = state.runs.values()
    legs = RunPaths.of(settings.home, run.run_id).legs
    second = (legs / "002-prompt.md").read_text()
    assert second.startswith("# Research brief")
    assert "previous session was interrupted" in second
    assert run.launches and run.launches[0].name == "try-2opt"
    decisions = _recovery_explained(settings, run.run_id)
    (recovery,) = [d for d in decisions if "a recovery" in str(d["reason"])]
    assert "with the brief (no session had ended yet)" in str(recovery["reason"])
    assert any(d["decision"] == "job-ended" and climb.job_id in str(d["reason"])
               for d in decisions)


WORDS = "Does 2-opt keep the runtime small?"


def _in_review_with_a_comment(tmp_path: Path, review_leg: list[dict[str, str]],
                              answer_expects: list[dict[str, str]]
                              ) -> tuple[Settings, RunRecord, LocalForge]:
    """A run in review whose script's review leg is ``review_leg`` and whose next leg
    answers (after ``answer_expects``); the maintainer has just commented ``WORDS``."""
    from tests.support import TARGET, forge, in_review

    script = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())
    answer = [step for step in script["legs"][2] if "expect" not in step]
    script["legs"][2] = review_leg
    script["legs"].append([*answer_expects, *answer])
    path = tmp_path / "review-script.yaml"
    path.write_text(yaml.safe_dump(script))
    settings = make_home(tmp_path, path)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, lambda s: in_review(s) or ended(s), timeout_s=240)
    (run,) = state.runs.values()
    assert run.pr_number is not None
    local = forge(settings)
    local.comment_as(TARGET, run.pr_number, WORDS, "maintainer")
    return settings, run, local


def test_review_leg_is_resumed_when_its_session_died_before_answering(tmp_path: Path) -> None:
    from tests.support import TARGET

    settings, run, local = _in_review_with_a_comment(
        tmp_path, [{"expect": "Reviewer feedback"}, {"shell": "kill -9 0"}],
        answer_expects=[])  # the resumed session answers

    def settled(s: object) -> bool:
        replied = any("outerloop:reply" in c.body for c in
                      local.list_comments(TARGET, run.pr_number or 0))
        quiet = state_quiet(s)
        return replied or quiet

    def state_quiet(s: object) -> bool:
        (now,) = s.runs.values()  # type: ignore[attr-defined]
        live = [j for j in s.jobs.values() if not j.terminal]  # type: ignore[attr-defined]
        return (now.park_reason == "review" and not now.undelivered and now.legs >= 3
                and not live)

    tick_until(settings, settled, timeout_s=240)
    tick_until(settings, lambda s: True)  # post what the last leg left in the outbox
    comments = local.list_comments(TARGET, run.pr_number)
    assert any("outerloop:reply" in c.body and "2-opt" in c.body for c in comments)


def test_feedback_reaches_the_recovery_leg_when_the_wake_job_died(tmp_path: Path) -> None:
    """The review wake's job dies mid-leg (a node failure): the reviewer's words were in
    a prompt no leg finished with, so they are still undelivered and the recovery leg
    carries them (a wake that marked them delivered as it began lost them)."""
    from tests.support import TARGET

    settings, run, local = _in_review_with_a_comment(
        tmp_path, [{"expect": "Reviewer feedback"}, {"shell": STALL_ONCE}],
        answer_expects=[{"expect": WORDS}])  # the recovery leg answers
    ws = RunPaths.of(settings.home, run.run_id).ws
    state = tick_until(settings, lambda s: (ws / ".outerloop" / "stalled").exists(),
                       timeout_s=120)
    (wake,) = [j for j in state.jobs.values() if j.purpose == "wake" and not j.terminal]
    _kill_job(settings, wake.job_id)

    def replied(_: object) -> bool:
        return any("outerloop:reply" in c.body for c in
                   local.list_comments(TARGET, run.pr_number or 0))

    state = tick_until(settings, lambda s: replied(s) or ended(s), timeout_s=240)
    (run,) = state.runs.values()
    assert not run.ended, run.report
    legs = RunPaths.of(settings.home, run.run_id).legs
    recovery = (legs / "004-prompt.md").read_text()
    assert "previous session was interrupted" in recovery
    assert WORDS in recovery
    assert not run.undelivered
    assert any(j.purpose == "recover" for j in state.jobs.values())
    (recovery,) = [d for d in _recovery_explained(settings, run.run_id)
                   if "a recovery" in str(d["reason"])]
    assert "carrying feedback" in str(recovery["reason"])


STALL_FIRST_CANDIDATE_EVAL = '''

def _stall_while_flagged() -> None:
    """Test only: a candidate eval stalls while the test's flag exists, so the test
    can kill its job (the session's workspace and launch checkouts are left alone)."""
    import os
    import pathlib
    import sys
    import time

    here = os.getcwd()
    if pathlib.Path("{flag}").exists() and "/trees/" in here and "-s1-" not in here:
        print("stalling", file=sys.stderr, flush=True)
        time.sleep(300)


_stall_while_flagged()
'''


def test_candidate_eval_killed_by_a_node_failure_is_measured_again_once(
        tmp_path: Path) -> None:
    """An eval pair job dies mid-run (SIGKILL: a node failure) while its candidate
    side runs. The wake runs the pair again once (same commits, same seed and order,
    ``-r1``) and judges on the retry: one verdict, credited, and the PR opens; nothing
    is lost to the dead job. The pair is one half of a couple: the retry keeps the
    couple's seed and place (its ``EvalPair.couple``), the other half, which ran the
    sides in the other order, is measured once and never again."""
    from outerloop.attempt.exits import RETRY_SUFFIX
    from tests.support import in_review

    shared = tmp_path / "shared"  # read-only to every sandboxed child: the test's flag
    shared.mkdir()
    flag = shared / "stall"
    flag.touch()
    script = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())
    (write,) = [step for step in script["legs"][0] if "write" in step]
    write["write"]["content"] += STALL_FIRST_CANDIDATE_EVAL.format(flag=flag)
    path = tmp_path / "eval-dies.yaml"
    path.write_text(yaml.safe_dump(script))
    settings = make_home(tmp_path, path,
                         extra_toml=f'[sandbox]\nread_only = ["{shared}"]\n')
    runs = settings.home / "runs"

    def stalled(state: State) -> bool:
        return ended(state) or any("stalling" in p.read_text()
                                   for p in runs.glob("*/jobs/*/[01]/stderr"))

    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, stalled, timeout_s=240)
    assert not ended(state), "no candidate eval ever started"
    stalling = {p.parents[1].name for p in runs.glob("*/jobs/*/[01]/stderr")
                if "stalling" in p.read_text()}
    # the submission's 6 pair jobs (3 couples) run one after another: the first stalls
    live = [j for j in state.jobs.values() if j.purpose == "eval" and not j.terminal
            and j.name in stalling]
    assert len(live) == 1
    flag.unlink()
    _kill_job(settings, live[0].job_id)

    state = tick_until(settings, lambda s: in_review(s) or ended(s), timeout_s=240)
    (run,) = state.runs.values()
    assert [v.verdict for v in run.verdicts] == ["improved"], run.report
    assert run.pr_number is not None
    evals = [j for j in state.jobs.values() if j.purpose == "eval"]
    retried = sorted(j.name for j in evals if j.name.endswith(RETRY_SUFFIX))
    assert retried == [live[0].name + RETRY_SUFFIX]
    assert {j.name + RETRY_SUFFIX for j in evals if j.state == "node_fail"} == set(retried)
    names = [d["decision"] for d in check_explained(settings.home, run.run_id)]
    assert names.count("submit-eval") == len(evals) and names.count("verdict") == 1
    _couple_kept_across_the_retry(settings, state, run, live[0].name, RETRY_SUFFIX)


def _couple_kept_across_the_retry(settings: Settings, state: State, run: RunRecord,
                                  killed: str, suffix: str) -> None:
    """The killed pair's retry is the same half of the same couple: its seed, its
    order, its couple index; the couple's other half is the job it was, run once."""
    import json

    from outerloop.attempt import pairs
    from outerloop.ledger.book import run_file

    paths = RunPaths.of(settings.home, run.run_id)
    ids = {j.name: j.job_id for j in state.jobs.values()}
    plans = {name: pairs.read_plan(paths, name) for name in (killed, killed + suffix)}
    first, again = plans[killed], plans[killed + suffix]
    assert first is not None and again is not None
    assert again.seed == first.seed and again.seed in run.seeds[1]
    assert [side.role for side in again.sides] == [side.role for side in first.sides]
    parks = [json.loads(line) for line in run_file(settings.home, TARGET, run.run_id)
             .read_text().splitlines() if '"kind":"parked"' in line.replace(" ", "")]
    evals = [park["evals"] for park in parks if park.get("reason") == "eval"]
    before, after = evals[0], evals[1]  # the submission's park, then the retry's
    assert [p.get("couple") for p in before] == [p.get("couple") for p in after]
    (index,) = [i for i, p in enumerate(before) if p["base"] == ids[killed]]
    assert after[index]["base"] == ids[killed + suffix]
    assert after[index]["first"] == before[index]["first"]
    (mate,) = [i for i, p in enumerate(before)
               if p.get("couple") == before[index]["couple"] and i != index]
    assert after[mate] == before[mate] and before[mate]["first"] != before[index]["first"]
    mate_name = next(name for name, job in ids.items() if job == before[mate]["base"])
    mate_plan = pairs.read_plan(paths, mate_name)
    assert mate_plan is not None and mate_plan.seed == first.seed
    assert not any(name == mate_name + suffix for name in ids)


def test_verdict_reaches_the_recovery_leg_when_its_wake_job_died(tmp_path: Path) -> None:
    """The wake telling the agent "no-improvement" dies mid-leg (a node failure). The
    recovery leg resumes the session of the last ended leg, which never saw the verdict:
    its prompt tells it again, and the agent stops on it."""
    script = yaml.safe_load((AGENTS / "tinytsp-noop.yaml").read_text())
    script["legs"][1] = [{"expect": "no-improvement"}, {"shell": STALL_ONCE}]
    script["legs"].append([{"expect": "no-improvement"}, {"syscall": "stop --report report.md"}])
    path = tmp_path / "verdict-wake-dies.yaml"
    path.write_text(yaml.safe_dump(script))
    settings = make_home(tmp_path, path)
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, lambda s: ended(s) or any(
        (RunPaths.of(settings.home, r.run_id).ws / ".outerloop" / "stalled").exists()
        for r in s.runs.values()), timeout_s=240)
    (run,) = state.runs.values()
    assert not run.ended, run.report
    (wake,) = [j for j in state.jobs.values() if j.purpose == "wake" and not j.terminal]
    _kill_job(settings, wake.job_id)

    state = tick_until(settings, ended, timeout_s=240)
    (run,) = state.runs.values()
    assert run.ending == "negative-result", run.report
    legs = RunPaths.of(settings.home, run.run_id).legs
    recovery = (legs / "003-prompt.md").read_text()
    assert "previous session was interrupted" in recovery
    assert "no-improvement" in recovery
    assert [v.verdict for v in run.verdicts] == ["no-improvement"]
    (end,) = [d for d in _recovery_explained(settings, run.run_id) if d["decision"] == "ended"]
    assert "negative-result" in str(end["reason"])
