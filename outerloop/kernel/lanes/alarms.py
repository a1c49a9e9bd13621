"""Alarms: tell a target's maintainers, on their own forge, that the kernel cannot work.

A contract that fails to load (missing, invalid YAML, schema errors) never crashes
the tick: the target is skipped (intake and admission need a contract) and each
failing tick is recorded (``contract_failed``, with the errors), so a broken target is
never mistaken for a quiet one. After ``ALARM_AFTER_TICKS`` consecutive failing ticks,
one issue is opened on the target listing the errors (fenced: a contract is the
target's text, not ours). When the contract validates again, ``contract_recovered`` is
recorded and the alarm issue gets a short comment and is closed, once.

Exactly once across crashes: the issue carries ``<!-- outerloop:alarm key=contract -->``
and its key numbers the failing streak, so a dangling intent is settled by finding the
kernel's open issue with that marker. A target the forge could not be asked about this
tick is neither failing nor recovered: nothing is concluded.
"""

from __future__ import annotations

from outerloop.kernel.actions import Action, CloseIssue, OpenIssue, PostComment, RecordEvent
from outerloop.kernel.lanes.common import step_due
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import TargetObservation
from outerloop.ledger import events as ev
from outerloop.ledger.state import ContractHealth
from outerloop.text import cap, fence

ALARM_AFTER_TICKS = 3
ALARM_KIND = "alarm"
CONTRACT_KEY = "contract"
MAX_ERRORS_CHARS = 20_000
ALARM_TITLE = "outerloop: the contract does not validate"


def alarm_body(repo: str, errors: list[str], ticks: int) -> str:
    listing = cap("\n".join(errors), MAX_ERRORS_CHARS)
    return (f"outerloop has skipped `{repo}` for {ticks} ticks in a row: its "
            f"`.outerloop.yaml` on the default branch does not load, so no issue is taken "
            f"up and no run starts. Runs already under way continue.\n\n"
            f"The errors (field path: problem):\n\n{fence(listing)}\n\n"
            f"Fix the contract on the default branch (`outerloop contract check "
            f".outerloop.yaml` shows the same errors locally). This issue is closed "
            f"automatically once the contract validates.")


def _failing(view: TickView, repo: str, seen: TargetObservation,
             health: ContractHealth) -> list[Action]:
    errors = seen.contract_problems or [str(seen.contract_error)]
    actions: list[Action] = [RecordEvent(
        target=repo, event=ev.ContractFailed(target=repo, errors=errors))]
    ticks = health.failing + 1
    if ticks < ALARM_AFTER_TICKS or health.alarm is not None:
        return actions
    streak = health.streak + (1 if health.failing == 0 else 0)
    issue = OpenIssue(target=repo, title=ALARM_TITLE, body=alarm_body(repo, errors, ticks),
                      marker_kind=ALARM_KIND, marker_key=CONTRACT_KEY, n=streak)
    if step_due(view, issue):
        actions.append(issue)
    return actions


def _recovered(view: TickView, repo: str, health: ContractHealth) -> list[Action]:
    actions: list[Action] = []
    if health.failing:
        actions.append(RecordEvent(target=repo,
                                   event=ev.ContractRecovered(target=repo)))
    if health.alarm is None:
        return actions
    post = PostComment(target=repo, number=health.alarm, marker_kind="status",
                       marker_key="contract-valid",
                       body="The contract validates again; outerloop resumes work on this "
                            "repository. Closing.")
    close = CloseIssue(target=repo, number=health.alarm, why="the contract validates")
    actions.extend(a for a in (post, close) if step_due(view, a))
    return actions


def plan(view: TickView, planned: list[Action]) -> list[Action]:
    actions: list[Action] = []
    for target in view.settings.targets:
        seen = view.obs.targets.get(target.repo)
        if seen is None or seen.error:
            continue  # the forge could not be asked: conclude nothing
        health = view.state.contracts.get(target.repo) or ContractHealth(target.repo)
        if seen.contract_error is not None:
            actions.extend(_failing(view, target.repo, seen, health))
        elif seen.contract is not None:
            actions.extend(_recovered(view, target.repo, health))
    return actions
