"""What must hold before a run's job starts an agent leg.

- before the first leg, the deployment (``deployment_holds``): no time cap of the
  settings is below what the run's jobs need (``time_caps``), the harness the settings
  name can be made, its agent CLI is on this node and every command a session needs
  starts confined here; else ``DeploymentError``: the run waits for the operator's
  fix instead of ending as a failed start that spends a claim (or, later, as a
  research verdict on a hypothesis that never ran);
- before every leg, the agent CLI is still on this node (``cli_on_node``: a later job
  may land on another node);
- before every leg (``leg_held``): the agent's model endpoint is not held down (the
  run waits for it) and the run's money is not spent (the run ends, since a leg's cost
  is known only once it has run).
"""

from __future__ import annotations

from outerloop import money
from outerloop.attempt import endpoint_gate
from outerloop.attempt.context import RunContext
from outerloop.attempt.exits import end
from outerloop.clock import now
from outerloop.config import Settings
from outerloop.contract import Contract
from outerloop.errors import ConfigError, DeploymentError
from outerloop.fleet import Seat, seat_of
from outerloop.harness.agent_cli import not_on_node
from outerloop.harness.factory import make_harness
from outerloop.harness.needs import broken_environment
from outerloop.kinds import MODEL_CLIS
from outerloop.ledger.state import Ending, RunRecord
from outerloop.time_caps import shortfalls


def deployment_holds(settings: Settings, run: RunRecord, contract: Contract) -> None:
    """Before a run's first leg: the time caps leave the run's jobs what they need, the
    harness the settings name can be made, its CLI is on this node and every command a
    session needs starts confined here. Any failing is the deployment's (the operator's
    settings, the node's install), not the run's nor the issue's: ``DeploymentError``,
    and the run waits for the fix (``infra.DEPLOY_EXIT``) instead of ending as a failed
    start that spends a claim."""
    short = shortfalls(settings, run.target, contract)
    if short:
        raise DeploymentError("; ".join(short))
    seat = seat_of(settings, run.target, run.agent)
    try:
        make_harness(settings, seat)
    except ConfigError as exc:
        raise DeploymentError(f"the agents' harness cannot start: {exc}") from None
    cli_on_node(seat)
    broken = broken_environment(settings)
    if broken:  # every session would fail as if the agent gave up: say why instead
        raise DeploymentError(broken)


def cli_on_node(seat: Seat) -> None:
    """The seat's agent CLI (a model harness) is found on this node; else
    ``DeploymentError`` naming the node, where it was looked for and the fix."""
    if seat.harness.kind not in MODEL_CLIS:
        return
    missing = not_on_node(seat.harness.binary or MODEL_CLIS[seat.harness.kind].binary)
    if missing is not None:
        raise DeploymentError(missing)


def leg_held(ctx: RunContext, job_id: str | None, seat: Seat) -> str | None:
    """Why no leg starts now, having recorded it (the run waits on its endpoint, or
    ends with its money spent), as the job's one-line account; None: start the leg."""
    why = endpoint_gate.held(ctx, seat.endpoint, job_id)
    if why is not None and seat.endpoint is not None:
        return endpoint_gate.wait(ctx, job_id, seat.endpoint, why)
    spent = money.refusal(ctx.state, ctx.run, money.money_caps(ctx.limits, ctx.settings),
                          now())
    if spent is not None:  # before the leg: its cost is known only once it has run
        return end(ctx, Ending.BUDGET_EXHAUSTED, f"no further leg was started: {spent}")
    return None
