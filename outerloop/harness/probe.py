"""Ask a model endpoint whether it is up (``[endpoints.NAME] probe``).

``probe = "models"`` asks the model API's own list-models call with the endpoint's key
(``GET <base>/models`` when the base URL ends in ``/v1``, else ``<base>/v1/models``; the
key is sent both as ``x-api-key`` with ``anthropic-version``, as Anthropic's API wants,
and as a bearer token, as OpenAI's does: one call serves either wire protocol). A URL
probe is a plain ``GET`` without the key. What counts as down: no answer at all, or
an answer ``harness/outage.py`` classes as a refusal (401/403 auth, 402 credit, 429,
5xx); any other answer (200, even 404 from an API without the call) is up. The
tick probes while runs use the endpoint (``kernel/observe.py``), ``doctor`` always.
"""

from __future__ import annotations

import urllib.error
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from outerloop.errors import ConfigError
from outerloop.fleet import Endpoint
from outerloop.fleet_settings import MODELS_PROBE
from outerloop.harness.outage import classify
from outerloop.private_files import read_key
from outerloop.text import one_line, redact

PROBE_TIMEOUT_S = 5.0
MAX_DETAIL_CHARS = 200


@dataclass(frozen=True)
class ProbeResult:
    """What one probe saw: up or not, the refusal kind when refused, in words."""

    up: bool
    detail: str
    refusal: str | None = None


def probe_url(endpoint: Endpoint) -> str:
    """The URL the probe asks (``models``: the list-models call under the base URL)."""
    if endpoint.probe != MODELS_PROBE:
        return endpoint.probe or ""
    base = (endpoint.base_url or "").rstrip("/")
    return f"{base}/models" if base.endswith("/v1") else f"{base}/v1/models"


def _request(endpoint: Endpoint, home: Path) -> tuple[urllib.request.Request, str]:
    url = probe_url(endpoint)
    request = urllib.request.Request(url, method="GET")
    key = ""
    if endpoint.probe == MODELS_PROBE and endpoint.key_file:
        path = Path(endpoint.key_file).expanduser()
        key = read_key(path if path.is_absolute() else home / path)
        request.add_header("x-api-key", key)
        request.add_header("anthropic-version", "2023-06-01")
        request.add_header("Authorization", f"Bearer {key}")
    return request, key


def probe(endpoint: Endpoint, home: Path, timeout_s: float = PROBE_TIMEOUT_S) -> ProbeResult:
    """Probe ``endpoint`` once. Never raises: an unreadable key is an account refusal
    (the endpoint cannot be used until the operator fixes it)."""
    try:
        request, key = _request(endpoint, home)
    except ConfigError as exc:
        return ProbeResult(False, one_line(str(exc), MAX_DETAIL_CHARS), "auth")
    url = request.full_url
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as answer:
            return ProbeResult(True, f"{url} answered {answer.status}")
    except urllib.error.HTTPError as exc:
        body = exc.read(2000).decode("utf-8", "replace") if exc.fp is not None else ""
        refusal = classify(exc.code, body)
        words = redact(one_line(f"{url} answered {exc.code}: {body}", MAX_DETAIL_CHARS),
                       [key] if key else [])
        return ProbeResult(refusal is None, words, refusal)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return ProbeResult(False, one_line(f"{url} did not answer ({reason})",
                                           MAX_DETAIL_CHARS))


def probe_all(endpoints: list[Endpoint], home: Path,
              timeout_s: float = PROBE_TIMEOUT_S) -> dict[str, ProbeResult]:
    """Each endpoint probed at once (the slowest bounds the wait, not their sum)."""
    if not endpoints:
        return {}
    with ThreadPoolExecutor(max_workers=min(8, len(endpoints))) as pool:
        found = pool.map(lambda e: probe(e, home, timeout_s), endpoints)
        return {e.name: result for e, result in zip(endpoints, found, strict=True)}
