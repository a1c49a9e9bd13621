"""One research run end to end through real ticks, real git and real local jobs."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from outerloop.text import duration
from tests.support import (
    AGENTS,
    TARGET,
    ended,
    forge,
    in_review,
    make_home,
    open_issue,
    state_of,
    tick_until,
)

pytestmark = pytest.mark.e2e


def test_issue_becomes_merged_run_when_agent_improves_and_reviewer_merges(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path, confidence=0.99)  # the PR states it
    issue = open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, in_review)
    (run,) = state.runs.values()
    assert run.pr_number is not None and run.issue == issue
    local = forge(settings)
    pr = local.get_pr(TARGET, run.pr_number)
    assert f"Closes #{issue}." in pr.body and "Addresses" not in pr.body
    assert "## Measured" in pr.body and "## Experiments" in pr.body
    # 3 couples, or 6 when the run's small share of the target's budget needs a second look
    assert re.search(r"pairs: (3 couples, 6|6 couples, 12) pair jobs \(each couple under "
                     r"its own hidden seed, run twice: the base first in one job, the "
                     r"candidate first in the other\)", pr.body), pr.body
    assert "- false-credit budget: this run may spend alpha `" in pr.body
    assert "(99% confidence)" in pr.body
    assert "gain interval: `" in pr.body and "- submissions in this run: 1" in pr.body
    gate = re.search(r"- the gate: (\d+) eval jobs in (\S+)", pr.body)
    assert gate is not None and int(gate[1]) >= 3, pr.body  # at least a job per pair
    assert "- the run: " in pr.body and "no GPUs" in pr.body
    assert pr.title.startswith(f"[{run.agent}] 2-opt after nearest neighbour (tour: "), pr.title
    (launch,) = run.launches
    assert launch.array == 2 and launch.concurrency == 1
    legs = settings.home / "runs" / run.run_id / "legs"
    first_wake = (legs / "002-prompt.md").read_text()
    assert "`try-2opt`, task 0" in first_wake and "`try-2opt`, task 1" in first_wake
    assert first_wake.count("mean_tour_length") >= 2

    local.comment_as(TARGET, run.pr_number, "Does 2-opt keep the runtime small?", "maintainer")
    tick_until(settings, lambda s: any(
        "Thanks for the review" in c.body for c in
        local.list_comments(TARGET, run.pr_number)))
    replies = [c for c in local.list_comments(TARGET, run.pr_number)
               if c.author == settings.forge.login and "outerloop:reply" in c.body]
    assert len(replies) == 1
    wake_prompts = sorted((settings.home / "runs" / run.run_id / "legs").glob("*-prompt.md"))
    assert "Does 2-opt keep the runtime small?" in wake_prompts[-1].read_text()

    assert f"Closes #{issue}." in local.get_pr(TARGET, run.pr_number).body
    local.merge_pr(TARGET, run.pr_number)
    assert local.get_issue(TARGET, issue).state == "closed"  # the merge closes the issue
    state = tick_until(settings, ended)
    (run,) = state.runs.values()
    assert run.ending == "merged"
    leader = state.leaders[(TARGET, "tour")]
    assert leader.run == run.run_id
    tick_until(settings, lambda s: any(
        "outerloop:report" in c.body for c in local.list_comments(TARGET, issue)))
    reports = [c for c in local.list_comments(TARGET, issue) if "outerloop:report" in c.body]
    assert len(reports) == 1 and "merged" in reports[0].body
    assert len([c for c in local.list_comments(TARGET, run.pr_number)
                if "outerloop:reply" in c.body]) == 1


def test_each_array_task_shows_its_own_elapsed_in_the_wake_and_the_pr_table(
        tmp_path: Path) -> None:
    script = tmp_path / "slow-tasks.yaml"
    text = (AGENTS / "tinytsp-2opt.yaml").read_text()
    launch = "-- python evaluate.py --bench tour --json'"
    assert launch in text
    script.write_text(text.replace(launch, "-- bash -c \"sleep 2 && python evaluate.py "
                                           "--bench tour --json\"'"))
    settings = make_home(tmp_path, script)
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state = tick_until(settings, in_review)
    (run,) = state.runs.values()
    (launch_done,) = run.launches
    job = state.jobs[launch_done.job_id]
    each = job.task_elapsed_s
    assert sorted(each) == [0, 1] and all(each[k] >= 2 for k in each)
    assert job.elapsed_s == each[0] + each[1]  # the compute the array used
    wake = (settings.home / "runs" / run.run_id / "legs" / "002-prompt.md").read_text()
    shown = re.findall(r"^- job .*elapsed (.+)$", wake, flags=re.M)
    assert shown == [duration(each[0]), duration(each[1])]
    assert duration(job.elapsed_s) not in shown
    body = forge(settings).get_pr(TARGET, run.pr_number or 0).body
    (row,) = [line for line in body.splitlines() if line.startswith("| 1 | `try-2opt` |")]
    assert row.rsplit("|", 2)[0].endswith(f"| per task: {each[0]}s, {each[1]}s ")


def test_candidate_without_gain_ends_negative_result_without_pr(tmp_path: Path) -> None:
    settings = make_home(tmp_path, "tinytsp-noop.yaml")
    open_issue(settings, "Tidy", "A comment-only change to the tour solver.")
    state = tick_until(settings, ended)
    (run,) = state.runs.values()
    assert run.ending == "negative-result"
    assert run.pr_number is None
    assert forge(settings).list_prs(TARGET, "all") == []


def test_edit_outside_scope_is_refused_before_anything_is_launched(tmp_path: Path) -> None:
    settings = make_home(tmp_path, "tinytsp-outside-scope.yaml")
    open_issue(settings, "Faster eval", "Change how tour is evaluated.")
    state = tick_until(settings, ended)
    (run,) = state.runs.values()
    assert run.launches == []
    assert [j.purpose for j in state.jobs.values() if j.run == run.run_id] == ["climb"]
    prompts = sorted((settings.home / "runs" / run.run_id / "legs").glob("*-prompt.md"))
    assert "outside the scope" in prompts[1].read_text()
    assert not any(v for v in run.verdicts)


def test_issue_naming_two_benchmarks_is_not_claimed(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    open_issue(settings, "Both", "Improve tour and spread at once.")
    from outerloop.kernel.tick import run_tick

    run_tick(settings)
    run_tick(settings)
    assert state_of(settings).runs == {}
