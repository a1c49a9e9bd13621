"""The gate's sequential test: how many pairs, and when a gain is credited (pure).

Each pair measures the base and the candidate under one fresh hidden seed; its
*difference* ``d`` is the candidate's gain in the benchmark's direction. A candidate is
credited when the mean of the ``d`` clears the contract's floor **with the contract's
confidence**, judged by a one-sided Student t test on the differences (the noise is
measured from the pairs themselves, never assumed), and its mean gain is at least the
gate's 0.5 % (and the floor).

The test is *group sequential*: it looks at the pairs after ``repeats`` of them (at
least 3), then after twice as many, and so on up to ``max_pairs``. At each look it
credits, stops (the gain is clearly not there: ``t`` below ``FUTILITY_T``) or asks for
more pairs. The error budget ``alpha = 1 - confidence`` is **per run**, spent over the
run's submissions (``submit_alpha``: 70 % on the first, the rest over later ones, so
resubmitting a null buys nothing) and, within a submission, over its looks
(``look_alpha``: Bonferroni, valid however the looks are correlated). The sum over all
submissions and looks of a run is at most ``alpha``: that is the false-credit bound.

With order-balanced couples (``attempt/pairs.py``) the unit is a couple: its ``d`` is
the mean of its two pairs' differences (one with the base first, one with the
candidate first), and ``n`` counts couples. ``order_effect`` estimates, from the same
couples, how much better the side that ran second measured.

Differences that do not vary at all (every pair the same gain) carry no estimate of the
noise; the t test would read them as infinitely sure. They are credited only by an
exact bound that holds for any symmetric noise, discrete metrics included: ``n`` equal
positive differences have probability at most ``2**-n`` under such a null (``4**-n``
when both sides also repeated their numbers exactly, a benchmark the seed does not
move), so they need ``n`` with that bound under the look's alpha.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from functools import lru_cache
from typing import Literal

FIRST_SUBMIT_SHARE = 0.7
"""Of the run's alpha, what the first submission may spend; submission k >= 2 spends
``(1 - FIRST_SUBMIT_SHARE) / (k (k - 1))`` of it (the shares sum to 1)."""
FIRST_LOOK_SHARE = 0.6
"""Of a submission's alpha, what its first look may spend; later looks share the rest."""
FUTILITY_T = 0.5
"""At a look, a t statistic (of the margin over the needed gain) below this stops the
submission: more pairs would very rarely credit it."""
MIN_FIRST_LOOK = 3
DEFAULT_MAX_PAIRS = 12
DEFAULT_CONFIDENCE = 0.99
SAME_SPREAD = 1e-9
"""Differences whose spread is below this fraction of the metric's size are equal."""

Decision = Literal["credit", "stop", "more"]


def submit_alpha(alpha: float, submission: int) -> float:
    """What submission ``submission`` (1-based) of a run may spend of the run's ``alpha``."""
    if submission <= 1:
        return alpha * FIRST_SUBMIT_SHARE
    return alpha * (1 - FIRST_SUBMIT_SHARE) / (submission * (submission - 1))


def look_sizes(first: int, cap: int) -> list[int]:
    """The number of pairs at each look: ``first`` (at least 3), doubling, up to ``cap``."""
    size = max(MIN_FIRST_LOOK, first)
    cap = max(cap, size)
    sizes = [size]
    while sizes[-1] < cap:
        sizes.append(min(cap, sizes[-1] * 2))
    return sizes


def look_alpha(alpha_submit: float, look: int, looks: int) -> float:
    """What look ``look`` (0-based) of ``looks`` may spend of a submission's alpha."""
    if looks <= 1:
        return alpha_submit
    if look == 0:
        return alpha_submit * FIRST_LOOK_SHARE
    return alpha_submit * (1 - FIRST_LOOK_SHARE) / (looks - 1)


# Student's t distribution, from the regularised incomplete beta function -------------


def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the incomplete beta function (modified Lentz)."""
    tiny = 1e-300
    c, d = 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    result = d
    for m in range(1, 400):
        for numerator in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                          -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + numerator * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + numerator / c
            c = c if abs(c) > tiny else tiny
            result *= c * d
        if abs(c * d - 1.0) < 1e-15:
            break
    return result


def _betainc(a: float, b: float, x: float) -> float:
    """The regularised incomplete beta function I_x(a, b)."""
    if x <= 0.0:
        return 0.0
    if x >= 1.0:
        return 1.0
    log_front = (math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b)
                 + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return math.exp(log_front) * _beta_fraction(a, b, x) / a
    return 1.0 - math.exp(log_front) * _beta_fraction(b, a, 1.0 - x) / b


def t_sf(t: float, df: int) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom."""
    if math.isinf(t):
        return 0.0 if t > 0 else 1.0
    tail = 0.5 * _betainc(df / 2.0, 0.5, df / (df + t * t))
    return tail if t >= 0 else 1.0 - tail


@lru_cache(maxsize=4096)
def t_quantile(alpha: float, df: int) -> float:
    """The ``t`` with P(T > t) = ``alpha`` (one-sided critical value), by bisection
    (about 45 ``t_sf``): kept, since a run's looks ask the same few (alpha, df) again."""
    low, high = 0.0, 1.0
    while t_sf(high, df) > alpha:
        low, high = high, high * 2.0
    for _ in range(200):
        middle = (low + high) / 2.0
        if t_sf(middle, df) > alpha:
            low = middle
        else:
            high = middle
        if high - low <= 1e-12 * high:
            break
    return high


# One look --------------------------------------------------------------------------


@dataclass(frozen=True)
class Look:
    """What one look at a submission's pairs decided, with the numbers it decided on."""

    decision: Decision
    pairs: int
    mean_gain: Decimal
    sd: float
    """The sample standard deviation of the paired differences (the noise measured)."""
    low: float
    high: float
    """The interval the test read: ``mean -+ critical * sd / sqrt(n)``."""
    t: float
    critical: float
    alpha: float
    """What this look spent of the run's error budget."""
    reason: str


def _mean(values: Sequence[Decimal]) -> Decimal:
    return sum(values, Decimal(0)) / Decimal(len(values))


def _sd(values: Sequence[Decimal], mean: Decimal) -> float:
    if len(values) < 2:
        return 0.0
    square = sum(((v - mean) ** 2 for v in values), Decimal(0)) / Decimal(len(values) - 1)
    return math.sqrt(float(square))


def _equal_bound(pairs: Sequence[tuple[Decimal, Decimal]], unit: str) -> tuple[float, str]:
    """(the chance bound of ``n`` equal positive differences under a symmetric null, what
    kind of repetition it is)."""
    n = len(pairs)
    fixed = len({b for b, _ in pairs}) == 1 and len({c for _, c in pairs}) == 1
    if fixed:
        return 4.0 ** -n, "both sides gave the same numbers under every seed"
    return 2.0 ** -n, f"every {unit.removesuffix('s')} gave the same difference"


@dataclass(frozen=True)
class OrderEffect:
    """How much better, in the benchmark's direction, the side that ran second in its
    pair job measured than the same side run first: half the mean, over the couples,
    of (the gain with the base first - the gain with the candidate first); ``low`` and
    ``high`` its interval at the look's alpha (``mean -+ critical * sd / sqrt(n)``)."""

    mean: Decimal
    low: float
    high: float


def order_effect(halves: Sequence[Decimal], alpha: float) -> OrderEffect | None:
    """The order effect of ``halves`` (one per couple: half of its base-first gain
    minus its candidate-first gain) at ``alpha``, two-sided like the gain's interval;
    None under two couples (no spread to read)."""
    n = len(halves)
    if n < 2:
        return None
    mean = _mean(halves)
    half_width = t_quantile(alpha, n - 1) * _sd(halves, mean) / math.sqrt(n)
    return OrderEffect(mean, float(mean) - half_width, float(mean) + half_width)


def look(gains: Sequence[Decimal], pairs: Sequence[tuple[Decimal, Decimal]], *,
         floor: Decimal, needed: Decimal, alpha: float, last: bool,
         unit: str = "pairs") -> Look:
    """Decide at one look over ``gains`` (the paired differences, in the benchmark's
    direction; ``pairs`` their (base, candidate) values; ``unit`` what one is called in
    the reasons: ``pairs``, or ``couples``): credit when the mean gain clears ``floor``
    with confidence ``1 - alpha`` and is at least ``needed``; stop when it clearly does
    not or this is the ``last`` look; else ask for more."""
    n = len(gains)
    mean = _mean(gains)
    sd = _sd(gains, mean)
    scale = max((abs(float(v)) for pair in pairs for v in pair), default=0.0)
    if sd <= SAME_SPREAD * max(scale, 1e-300):
        return _equal_look(gains, pairs, mean, floor=floor, needed=needed, alpha=alpha,
                           last=last, unit=unit)
    se = sd / math.sqrt(n)
    critical = t_quantile(alpha, n - 1)
    t = float(mean - floor) / se
    low, high = float(mean) - critical * se, float(mean) + critical * se
    margin_t = float(mean - max(needed, floor)) / se

    def told(decision: Decision, reason: str) -> Look:
        return Look(decision, n, mean, sd, low, high, t, critical, alpha, reason)

    if t >= critical and mean >= needed:
        return told("credit", f"t {t:.3g} >= {critical:.3g} at {n} {unit}")
    if last:
        return told("stop", f"t {t:.3g} < {critical:.3g} at {n} {unit}, the last look"
                    if t < critical else f"the mean gain {mean} is below the gate's "
                    f"minimum {needed}")
    if margin_t < FUTILITY_T:
        return told("stop", f"t {t:.3g} at {n} {unit}: the gain is not there")
    return told("more", f"t {t:.3g} < {critical:.3g} at {n} {unit}: not sure yet")


def _equal_look(gains: Sequence[Decimal], pairs: Sequence[tuple[Decimal, Decimal]],
                mean: Decimal, *, floor: Decimal, needed: Decimal, alpha: float,
                last: bool, unit: str) -> Look:
    n = len(gains)
    inf = math.inf if mean > floor else -math.inf
    value = float(mean)

    def told(decision: Decision, reason: str) -> Look:
        return Look(decision, n, mean, 0.0, value, value, inf, math.inf, alpha, reason)

    if mean <= floor or mean < needed:
        return told("stop", f"every pair gained {mean}, not above the floor {floor} "
                            f"and the minimum {needed}")
    bound, kind = _equal_bound(pairs, unit)
    if bound <= alpha:
        return told("credit", f"{kind} ({n} {unit}: chance under noise <= {bound:.2g})")
    if last:
        return told("stop", f"{kind}, but {n} {unit} are too few to rule out noise "
                            f"(bound {bound:.2g} > {alpha:.2g})")
    return told("more", f"{kind}; {n} {unit} cannot yet rule out noise")
