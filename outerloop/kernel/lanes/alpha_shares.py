"""A target's false-credit shares as one tick's admission plans them (pure).

Each run admitted on a target gets its share of the target's budget
(``alpha_budget.run_alpha``) fixed at admission, recorded before anything of it runs.
The shares already held (``History.alpha_holders``: live runs and settled runs that
looked) are read once per target and tick; each run planned in this tick then counts
as a holder for the next, so runs admitted together never share one index.
"""

from __future__ import annotations

from outerloop import alpha_budget
from outerloop.contract import Contract
from outerloop.ledger import events as ev
from outerloop.ledger.history import History, Runs


class AlphaShares:
    """The holders of ``repo``'s shares, counted once and moved on by each ``fix``."""

    def __init__(self, runs: Runs, repo: str, contract: Contract) -> None:
        self._runs, self._repo, self._contract = runs, repo, contract
        self._holders: tuple[int, float] | None = None

    def fix(self, benchmark: str) -> ev.RunAlpha | None:
        """The next run's share (on ``benchmark``), counted as held from now on; None
        when its benchmark is not in the contract (the run's job says so and ends)."""
        bench = self._contract.benchmark(benchmark)
        if bench is None:
            return None
        if self._holders is None:
            self._holders = History.of(self._runs, self._repo).alpha_holders()
        count, held = self._holders
        budget = 1.0 - bench.confidence
        fixed = ev.RunAlpha(alpha=alpha_budget.run_alpha(budget, count), budget=budget,
                            index=count + 1, held=held)
        self._holders = (count + 1, held + fixed.alpha)
        return fixed
