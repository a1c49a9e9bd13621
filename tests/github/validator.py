"""Check the fake's traffic against GitHub's official REST description (trimmed copy).

Responses are checked **strictly**: any mismatch is a failure of the test that caused
it (the fake must never drift from the real API's shapes). Requests PyGithub or the
forge send are checked as **warnings**: the description is stricter than GitHub in a
few documented places, listed in ``REQUEST_ALLOWLIST`` with the reason.

Two gaps of openapi-core are bridged here, not hidden:
- parameters marked ``x-multi-segment`` (a git ref ``heads/a/b``, a file path ``a/b``)
  may hold slashes, which openapi-core's path matching does not allow; the slashes
  inside such a parameter are percent-encoded before matching;
- GitHub answers ``304 Not Modified`` to any conditional GET, while the description
  lists 304 for few operations; an empty-bodied 304 is accepted for every GET, and
  checked against the description where it lists one;
- GitHub can answer any operation with a 5xx, a rate-limit 403/429 or a 401, while the
  description lists these for few operations; such an answer (only the fake's
  injected faults produce them) must still carry GitHub's ``basic-error`` body, which
  is checked when the operation does not list the status.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any
from urllib.parse import quote

from openapi_core import OpenAPI
from openapi_core.configurations import Config
from openapi_core.templating.responses.exceptions import ResponseNotFound
from openapi_core.testing import MockRequest, MockResponse

DESCRIPTION = Path(__file__).resolve().parent / "api.github.com.trimmed.json"
SERVER = "https://api.github.com"

REQUEST_ALLOWLIST: tuple[tuple[str, str, str], ...] = (
    ("POST", r"^/repos/[^/]+/[^/]+/issues/\d+/labels$",
     "PyGithub's add_to_labels sends a bare JSON array; GitHub accepts it (the "
     "description's own text says so) but its schema lists only the object form"),
    ("PUT", r"^/repos/[^/]+/[^/]+/issues/\d+/labels$",
     "PyGithub's set_labels sends a bare JSON array, as above"),
)

_MULTI_SEGMENT = (
    re.compile(r"^(/repos/[^/]+/[^/]+/git/ref/)(.+)$"),
    re.compile(r"^(/repos/[^/]+/[^/]+/contents/)(.+)$"),
)


@cache
def description() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(DESCRIPTION.read_text())
    return data


@cache
def openapi() -> OpenAPI:
    return OpenAPI.from_dict(description(), config=Config(spec_validator_cls=None))


def _matchable(path: str) -> str:
    for pattern in _MULTI_SEGMENT:
        match = pattern.match(path)
        if match:
            return match.group(1) + quote(match.group(2), safe="")
    return path


@dataclass
class Checked:
    method: str
    path: str
    status: int
    problem: str


def _describe(exc: Exception) -> str:
    parts = [f"{type(exc).__name__}: {str(exc)[:200]}"]
    cause: BaseException | None = exc.__cause__
    while cause is not None:
        errors = getattr(cause, "schema_errors", None)
        if errors:
            parts.extend(f"  - {e.message} at {list(e.absolute_path)}" for e in errors[:5])
        else:
            parts.append(f"  - {str(cause)[:300]}")
        cause = cause.__cause__
    return "\n".join(parts)


def check_response(method: str, path: str, query: dict[str, list[str]], status: int,
                   body: bytes, content_type: str | None) -> str | None:
    """None when the response matches the description, else what is wrong."""
    if status == 304 and not body and method == "GET":
        return None
    request = MockRequest(SERVER, method.lower(), _matchable(path),
                          args={k: v[-1] for k, v in query.items()})
    response = MockResponse(body, status_code=status,
                            content_type=content_type or "application/json")
    try:
        openapi().validate_response(request, response)
    except ResponseNotFound as exc:
        if status in _ANY_OPERATION_STATUSES or status >= 500:
            return _basic_error(body)
        return _describe(exc)
    except Exception as exc:
        return _describe(exc)
    return None


_ANY_OPERATION_STATUSES = frozenset({401, 403, 429})


def _basic_error(body: bytes) -> str | None:
    """None when ``body`` is GitHub's ``basic-error`` shape."""
    try:
        data = json.loads(body)
    except ValueError:
        return "error body is not JSON"
    schema = description()["components"]["schemas"]["basic-error"]
    if not isinstance(data, dict):
        return "error body is not an object"
    for key, spec in schema["properties"].items():
        if key in data and spec.get("type") == "string" and not isinstance(data[key], str):
            return f"basic-error field {key} is not a string"
    if not isinstance(data.get("message"), str):
        return "basic-error without a message"
    return None


def check_request(method: str, path: str, query: dict[str, list[str]], body: bytes,
                  content_type: str | None) -> str | None:
    """None when the request matches (or is allowlisted), else the warning text."""
    for verb, pattern, _why in REQUEST_ALLOWLIST:
        if verb == method and re.match(pattern, path):
            try:
                if isinstance(json.loads(body or b"null"), list):
                    return None
            except ValueError:
                pass
    request = MockRequest(SERVER, method.lower(), _matchable(path),
                          args={k: v[-1] for k, v in query.items()},
                          data=body or None, content_type=content_type or "application/json")
    try:
        openapi().validate_request(request)
    except Exception as exc:
        return _describe(exc)
    return None
