"""What the next tick does with an issue, and why: intake's own rule, asked now.

The ledger holds why an issue waited (``issue_waits``) or what the kernel told its
author (a ``status`` comment: "it names 2 benchmarks"), but not the rules that say
nothing anywhere: an author without standing, an issue whose claims are spent, a target
skipped because its contract does not load, an older issue claimed first. This module
reads what a tick would read for the issue's target (the forge pass of
``kernel.observe``, the folded ledger, ``HOLD`` and the environment check) and asks
intake's ``outlook``, so ``outerloop explain --issue`` says why an issue that never got
a run has none. It writes nothing to the ledger and acts on nothing; a forge it cannot
read is said as the target's skip, as a tick would.

It is a forecast, not a fact: what an earlier lane of the same tick plans (a run
admission starts first) is not counted, and the forge may change before the tick.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from outerloop import clock
from outerloop.config import load_settings
from outerloop.errors import NotFound
from outerloop.kernel.executor import Effects
from outerloop.kernel.lanes import intake
from outerloop.kernel.lanes.view import TickView
from outerloop.kernel.observations import Observations
from outerloop.kernel.observe import observe_target
from outerloop.kernel.tick import admission_holds
from outerloop.ledger.book import rebuild


@dataclass(frozen=True, slots=True)
class Outlook:
    """Intake's decision on the issue at the next tick (``intake.IssueDecision.kind``)
    and why, as of ``at``."""

    at: str
    decision: str
    reason: str


def issue_outlook(home: Path, repo: str, number: int) -> Outlook:
    """The next tick's decision on ``repo#number``. ``ConfigError`` when the home has no
    settings; ``NotFound`` when the forge has no such issue; ``ForgeError`` when it
    cannot be asked."""
    settings = load_settings(home)
    state = rebuild(settings.home, save_cache=False)
    fx = Effects(settings)
    try:
        issue = fx.forge().get_issue(repo, number)
    except NotFound as exc:
        raise NotFound(f"no issue {repo}#{number} on the forge: {exc}") from None
    obs = Observations(now=clock.now())
    if repo in {t.repo for t in settings.targets}:
        obs.targets[repo] = observe_target(repo, state, fx)
    hold, environment = admission_holds(settings)
    view = TickView(state=state, obs=obs, settings=settings, hold=hold,
                    environment=environment)
    decided = intake.outlook(view, repo, issue)
    return Outlook(at=clock.stamp(obs.now), decision=decided.kind, reason=decided.why)
