"""A target's false-credit budget: each run's alpha, fixed at its admission (pure).

The gate's sequential test (``attempt/sequential.py``) bounds false credit *per run*
by the run's alpha. A target lives for years, and the same null candidate can be
opened as issue after issue: at 1 % a run, 50 runs give a 39 % chance of at least one
false pull request on the target. So the target has one budget ``B`` (the run's
benchmark's ``1 - confidence``) spread over all its runs by a decreasing sequence: the
run admitted while ``held`` runs of the target hold a share gets

    alpha = B * share(held + 1),    share(k) = k^-DECAY - (k + 1)^-DECAY.

The shares telescope: ``share(1) + ... + share(n) = 1 - (n + 1)^-DECAY < 1``.

Why the holders' alphas never sum past ``B``, with runs live at once and runs giving
their share back: a run *holds* its share from admission on, and gives it back only
once it has settled with no look of its sequential test on record (it measured
nothing, so no credit was ever possible). Holding is never taken up again. Order the
holders at any moment by admission: the i-th had at least i - 1 holders before it when
it was admitted (those admitted before it that hold now held then), so its index is at
least i and its share at most ``share(i)``; the n holders' alphas sum to at most
``B * (share(1) + ... + share(n)) < B``. Every run that ever looked holds forever, so
what all the target's runs together can spend stays below ``B``, and by the union bound
(each run's test holds its alpha given everything before it: its seeds are fresh) the
chance that a candidate with no true gain is ever credited on the target is below
``B``. Runs admitted in one tick are counted as they are planned (one writer).

Smaller alphas need more pairs for the same power: a run's own cap on pairs is the
contract's ``max_pairs`` scaled by ``pairs_scale`` (at most ``MAX_PAIRS_SCALE`` times).
"""

from __future__ import annotations

import math
from statistics import NormalDist

DECAY = 0.5
"""The share sequence's exponent: run k gets about ``DECAY * k^-(1 + DECAY)`` of the
budget. 0.5: the 1st run 29 %, the 10th 1.5 %, the 100th 0.05 %, the 300th 0.0096 %
(``bench/gate_trials.py --targets`` prints what it costs in power and pairs)."""
POWER = 0.8
"""The power ``pairs_scale`` keeps when the alpha shrinks."""
MAX_PAIRS_SCALE = 4.0
"""A run's cap on pairs is at most this many times the contract's ``max_pairs``."""
_NORMAL = NormalDist()


def share(index: int) -> float:
    """The part of the target's budget the run with holder index ``index`` (1-based) gets."""
    k = max(1, index)
    return math.pow(k, -DECAY) - math.pow(k + 1, -DECAY)


def run_alpha(budget: float, held: int) -> float:
    """The alpha of a run admitted while ``held`` runs of the target hold a share."""
    return budget * share(held + 1)


def spent_bound(budget: float, holders: int) -> float:
    """What ``holders`` holders can hold at most together: ``B (1 - (n + 1)^-DECAY)``."""
    return budget * (1.0 - math.pow(holders + 1, -DECAY))


def pairs_scale(alpha: float, contract_alpha: float) -> float:
    """How many times the pairs a normal test at ``contract_alpha`` needs for ``POWER``
    a test at the smaller ``alpha`` needs: ``((z_a + z_p) / (z_A + z_p))^2``, between 1
    and ``MAX_PAIRS_SCALE``."""
    if not 0.0 < alpha < contract_alpha < 1.0:
        return 1.0
    z_power = _NORMAL.inv_cdf(POWER)
    ratio = (_NORMAL.inv_cdf(1.0 - alpha) + z_power) / (
        _NORMAL.inv_cdf(1.0 - contract_alpha) + z_power)
    return min(MAX_PAIRS_SCALE, max(1.0, ratio * ratio))


def max_pairs_at(max_pairs: int, alpha: float, contract_alpha: float) -> int:
    """A run's own cap on pairs per submission: the contract's ``max_pairs`` (set for
    ``contract_alpha``) scaled for the run's ``alpha`` (``pairs_scale``)."""
    return max(max_pairs, math.ceil(max_pairs * pairs_scale(alpha, contract_alpha) - 1e-9))
