"""Model API refusals: which failures are outages, and how long a role pauses after one.

An outage is the model provider saying no (bad key, no credit, rate limit, overload),
not the agent failing. The run ends ``stuck`` without charging its attempt cap, and
admission starts no new session for that role until the cooldown has passed, so one
run per cooldown re-probes the API instead of every queued run burning a claim.

Account refusals (``auth``, ``credit``) will not fix themselves soon: 45 minutes.
Throttling (``rate_limit``, ``overload``) usually clears in minutes: 5 minutes.
Anything else (a 400 about the request, a crash) is an ordinary error, not an outage.
"""

from __future__ import annotations

import re

from outerloop.harness.base import RefusalKind

ACCOUNT_COOLDOWN_MIN = 45
THROTTLE_COOLDOWN_MIN = 5
ACCOUNT_REFUSALS: frozenset[str] = frozenset({"auth", "credit"})

_CREDIT_WORDS = ("credit balance", "insufficient_quota", "quota", "billing", "credit")
_STATUS_RE = re.compile(r"(?:status[: ]+|\b)([45]\d\d)\b")


def classify(status: int | None, message: str = "") -> RefusalKind | None:
    """The refusal kind of an API failure, or None when it is not an outage.

    ``status`` is the HTTP status when the CLI reports one; ``message`` the error text
    (credit refusals come as 400/402 with a telling message). 5xx other than overload
    counts as ``overload``: the provider is down, which is not the agent's fault.
    """
    text = message.lower()
    if status is None:
        found = _STATUS_RE.search(text)
        status = int(found.group(1)) if found else None
    if status == 402 or (status in (400, 403, 429) and any(w in text for w in _CREDIT_WORDS)):
        return "credit"
    if status in (401, 403) or "authentication_error" in text or "invalid api key" in text:
        return "auth"
    if status == 429 or "rate_limit" in text or "rate limit" in text:
        return "rate_limit"
    if status is not None and status >= 500:
        return "overload"
    if "overloaded" in text:
        return "overload"
    return None


def cooldown_minutes(kind: str | None) -> int:
    """How long the role pauses after a refusal of ``kind`` (an unknown or missing kind
    is treated as throttling: the short pause errs toward re-probing)."""
    return ACCOUNT_COOLDOWN_MIN if kind in ACCOUNT_REFUSALS else THROTTLE_COOLDOWN_MIN
