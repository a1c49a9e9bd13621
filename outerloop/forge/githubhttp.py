"""HTTP beneath the GitHub forge: retries, rate limits, conditional requests, errors.

PyGithub does the REST calls; this module shapes how they travel:

- **Retries** (``ForgeRetry``): reads (GET/HEAD) are retried with backoff on 5xx and on
  connection errors. Writes (POST/PATCH/PUT/DELETE) are never re-sent after a 5xx or
  a broken connection, because GitHub may have performed them: the caller makes a
  comment or a PR safe by looking up its marker or head instead. A rate-limited write
  (403/429 with a rate-limit message or ``Retry-After``) was refused, not performed,
  so it is retried like a read. Waits honour ``X-RateLimit-Reset`` (primary) and
  ``Retry-After`` (secondary) up to ``max_rate_limit_wait_s``; a longer wait raises.
- **Conditional requests** (``ConditionalAdapter``): every GET remembers its ETag in an
  on-disk cache under the home; the next identical GET sends ``If-None-Match`` and a
  304 (which costs no rate limit) is answered from the cache. File contents read at a
  full commit sha never change and are served from the cache without a request.
- **Unchanged since the list** (``Stamps``): a read of one issue or pull request, or of
  its comments, timeline, reviews or review comments, is answered from the cache without
  a request when the issue list read this tick shows the issue (a PR is one) with the
  ``updated_at`` it had when the cached answer was fetched, that answer was fetched at
  least ``SETTLE_S`` after that stamp (by GitHub's ``Date``: its listings may lag a
  change, and the stamp is to the second) and less than ``UNCHANGED_MAX_AGE_S`` ago (an
  edit that does not move the issue's stamp is seen that late at worst). A write to the
  issue forgets its stamp for the rest of the tick, so the kernel reads its own writes.
  A quiet tick thus costs a few requests per target, not per open issue and PR.
  A collaborator's permission (who applied a label may write) is answered from the cache
  for ``PERMISSION_FRESH_S`` after it was read: access granted or revoked on GitHub is
  seen that late at worst.
- **Budget** (``RateBudget``): the latest ``X-RateLimit-*`` headers; once the remaining
  core budget is below the operator's ``min_rate_remaining`` the forge refuses further
  work for this tick with ``ForgeUnavailable`` naming the reset time.
- **Errors** (``translate``): retries exhausted (``requests.exceptions.RetryError``),
  network errors, 5xx and rate limits become ``ForgeUnavailable`` (the tick defers and
  concludes nothing); 404 becomes ``NotFound``; any other refusal ``ForgeError`` with
  GitHub's own message.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import datetime
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import requests
import requests.adapters
from github import GithubException, GithubRetry
from github.GithubException import (
    BadCredentialsException,
    RateLimitExceededExceedsMaxWait,
    RateLimitExceededException,
    UnknownObjectException,
)
from requests.structures import CaseInsensitiveDict

from outerloop.clock import stamp_seconds
from outerloop.errors import (
    ForgeConflict,
    ForgeError,
    ForgeForbidden,
    ForgeUnavailable,
    NotFound,
)

READ_METHODS = frozenset({"GET", "HEAD"})
RATE_LIMIT_STATUSES = frozenset({403, 429})
READ_RETRIES = 3
READ_BACKOFF_S = 0.5
MAX_RATE_LIMIT_WAIT_S = 90.0
SECONDARY_RATE_WAIT_S = 60.0
CACHE_MAX_AGE_S = 14 * 86400
SETTLE_S = 60
UNCHANGED_MAX_AGE_S = 3600
PERMISSION_FRESH_S = 300
_PERMISSION = re.compile(r"/repos/[^/]+/[^/]+/collaborators/[^/]+/permission$")
_ONE_ISSUE = re.compile(r"/repos/([^/]+/[^/]+)/(?:issues|pulls)/(\d+)(?:/|$)")
_CACHED_HEADERS = ("ETag", "Last-Modified", "Link", "Content-Type")
_RATE_HEADERS = ("X-RateLimit-Limit", "X-RateLimit-Remaining", "X-RateLimit-Reset",
                 "X-RateLimit-Used", "X-RateLimit-Resource")
_SHA_LEN = 40


class RateLimited(ForgeUnavailable):
    """GitHub refused for rate limit: the request was not performed."""


class ForgeRetry(GithubRetry):
    """``GithubRetry`` that never re-sends a write GitHub may have performed.

    Status retries: 5xx only for reads; 403/429 for every method (GithubRetry then
    retries a 403 only when it is a rate limit, and raises for any other 403).
    Connection errors before the request was sent are retried for every method; read
    errors (the request may have arrived) only for reads."""

    def __init__(self, **kwargs: Any) -> None:
        kwargs.setdefault("total", READ_RETRIES)
        kwargs.setdefault("backoff_factor", READ_BACKOFF_S)
        kwargs.setdefault("allowed_methods", READ_METHODS)
        kwargs.setdefault("status_forcelist", [*range(500, 600), 429])
        kwargs.setdefault("max_rate_limit_wait", MAX_RATE_LIMIT_WAIT_S)
        kwargs.setdefault("secondary_rate_wait", SECONDARY_RATE_WAIT_S)
        kwargs.setdefault("raise_on_status", True)
        super().__init__(**kwargs)

    def is_retry(self, method: str, status_code: int, has_retry_after: bool = False) -> bool:
        if status_code in RATE_LIMIT_STATUSES:
            return True
        return bool(super().is_retry(method, status_code, has_retry_after))


@dataclass
class RateBudget:
    """The core budget as GitHub last reported it, and the floor below which a tick
    stops forge work."""

    floor: int
    remaining: int | None = None
    limit: int | None = None
    reset_at: float | None = None
    stopped: str | None = None

    def note(self, headers: Mapping[str, str]) -> None:
        resource = headers.get("X-RateLimit-Resource", "core")
        if resource != "core":
            return
        remaining = headers.get("X-RateLimit-Remaining")
        reset = headers.get("X-RateLimit-Reset")
        limit = headers.get("X-RateLimit-Limit")
        if remaining is not None and remaining.isdigit():
            self.remaining = int(remaining)
        if reset is not None and reset.isdigit():
            self.reset_at = float(reset)
        if limit is not None and limit.isdigit():
            self.limit = int(limit)

    def check(self) -> None:
        """``ForgeUnavailable`` once the budget is below the floor (sticky for the
        forge's life, which is one tick): better to defer than to starve humans and
        the next ticks of requests."""
        if self.stopped:
            raise RateLimited(self.stopped)
        if self.remaining is None or self.remaining >= self.floor:
            return
        if self.reset_at is not None and self.reset_at <= time.time():
            return
        when = stamp_seconds(self.reset_at or time.time())
        self.stopped = (
            f"GitHub rate limit low: {self.remaining} requests left, below "
            f"min_rate_remaining {self.floor}; forge work stops for this tick (resets at "
            f"{when}); fix: wait, or lower [forge] min_rate_remaining")
        raise RateLimited(self.stopped)


@dataclass
class Counters:
    """What a forge instance spent: requests that cost rate limit, 304s, cache hits."""

    costly: int = 0
    not_modified: int = 0
    served_from_cache: int = 0
    unchanged: int = 0
    requests: list[tuple[str, str, int]] = field(default_factory=list)


class Stamps:
    """The ``updated_at`` of each issue and PR as this tick's issue list showed it, by
    (repository, number); see "Unchanged since the list" in the module docstring."""

    def __init__(self) -> None:
        self._seen: dict[tuple[str, int], str] = {}
        self._lock = threading.Lock()

    def note(self, repo: str, number: int, updated_at: str) -> None:
        with self._lock:
            self._seen[(repo.casefold(), number)] = updated_at

    def forget(self, repo: str, number: int) -> None:
        with self._lock:
            self._seen.pop((repo.casefold(), number), None)

    def of(self, url: str) -> tuple[tuple[str, int] | None, str | None]:
        """The (repository, number) ``url`` reads one issue's detail of, and its stamp."""
        found = _ONE_ISSUE.search(urlsplit(url).path)
        if found is None:
            return None, None
        key = (found.group(1).casefold(), int(found.group(2)))
        with self._lock:
            return key, self._seen.get(key)


def _settled(stamp: str | None, date: str | None) -> bool:
    """Whether an answer GitHub dated ``date`` was fetched ``SETTLE_S`` after ``stamp``."""
    if not stamp or not date:
        return False
    try:
        fetched = parsedate_to_datetime(date).timestamp()
        changed = datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except (TypeError, ValueError):
        return False
    return fetched - changed >= SETTLE_S


class ResponseCache:
    """ETag cache on disk: one JSON file per (URL, Accept), pruned past 14 days.
    A missing or unreadable entry is a miss, never an error."""

    def __init__(self, root: Path | None) -> None:
        self.root = root
        self.memory: dict[str, dict[str, Any]] = {}
        if root is not None:
            root.mkdir(parents=True, exist_ok=True, mode=0o700)
            self._prune()

    def _prune(self) -> None:
        assert self.root is not None
        cutoff = time.time() - CACHE_MAX_AGE_S
        for path in self.root.glob("*.json"):
            try:
                if path.stat().st_mtime < cutoff:
                    path.unlink()
            except OSError:
                continue

    @staticmethod
    def key(url: str, accept: str) -> str:
        return hashlib.sha256(f"{url}\n{accept}".encode()).hexdigest()[:40]

    def get(self, key: str) -> dict[str, Any] | None:
        if key in self.memory:
            return self.memory[key]
        if self.root is None:
            return None
        try:
            entry: dict[str, Any] = json.loads((self.root / f"{key}.json").read_text())
        except (OSError, ValueError):
            return None
        self.memory[key] = entry
        return entry

    def put(self, key: str, entry: dict[str, Any]) -> None:
        self.memory[key] = entry
        if self.root is None:
            return
        tmp = self.root / f".{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        try:
            tmp.write_text(json.dumps(entry))
            os.replace(tmp, self.root / f"{key}.json")
        except OSError:
            tmp.unlink(missing_ok=True)


def _immutable(url: str) -> bool:
    """A contents read pinned to a full commit sha: its answer never changes."""
    parts = urlsplit(url)
    if "/contents/" not in parts.path:
        return False
    ref = parse_qs(parts.query).get("ref", [""])[0]
    return len(ref) == _SHA_LEN and all(c in "0123456789abcdef" for c in ref)


class ConditionalAdapter(requests.adapters.HTTPAdapter):
    """A ``requests`` adapter adding ETag revalidation, counting and budget notes."""

    def __init__(self, cache: ResponseCache, budget: RateBudget, counters: Counters,
                 stamps: Stamps | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.cache = cache
        self.budget = budget
        self.counters = counters
        self.stamps = stamps or Stamps()
        self.counting = threading.Lock()  # the forge's threads share one adapter

    def send(self, request: requests.PreparedRequest, *args: Any,
             **kwargs: Any) -> requests.Response:
        method = (request.method or "GET").upper()
        url = request.url or ""
        key = self.cache.key(url, str(request.headers.get("Accept", "")))
        entry = self.cache.get(key) if method == "GET" else None
        issue, stamp = self.stamps.of(url)
        if issue is not None and method != "GET":
            self.stamps.forget(*issue)  # read its own writes: ask GitHub from now on
            stamp = None
        if entry is not None and entry.get("immutable"):
            with self.counting:
                self.counters.served_from_cache += 1
            return self._from_cache(request, entry, {})
        age = time.time() - float(entry.get("at", 0)) if entry is not None else 0.0
        if entry is not None and (
                (stamp is not None and entry.get("parent") == stamp and entry.get("settled")
                 and age < UNCHANGED_MAX_AGE_S)
                or (_PERMISSION.search(urlsplit(url).path) and age < PERMISSION_FRESH_S)):
            with self.counting:
                self.counters.unchanged += 1
            return self._from_cache(request, entry, {})
        if entry is not None and entry.get("etag"):
            request.headers["If-None-Match"] = str(entry["etag"])
        response = super().send(request, *args, **kwargs)
        self.budget.note(response.headers)
        path = urlsplit(url).path
        not_modified = response.status_code == 304 and entry is not None
        with self.counting:
            self.counters.requests.append((method, path, response.status_code))
            if not_modified:
                self.counters.not_modified += 1
            elif not path.endswith("/rate_limit"):
                self.counters.costly += 1
        settled = _settled(stamp, response.headers.get("Date"))
        if not_modified:
            assert entry is not None
            if issue is not None or _PERMISSION.search(path):  # revalidated now
                self.cache.put(key, {**entry, "parent": stamp, "settled": settled,
                                     "at": time.time()})
            fresh = {h: response.headers[h] for h in _RATE_HEADERS if h in response.headers}
            return self._from_cache(request, entry, fresh)
        if method == "GET" and response.status_code == 200 and "ETag" in response.headers:
            self.cache.put(key, {
                "etag": response.headers["ETag"], "immutable": _immutable(url),
                "headers": {h: response.headers[h] for h in _CACHED_HEADERS
                            if h in response.headers},
                "body": response.content.decode("utf-8", "replace"),
                "parent": stamp, "settled": settled, "at": time.time(),
            })
        return response

    @staticmethod
    def _from_cache(request: requests.PreparedRequest, entry: dict[str, Any],
                    fresh: dict[str, str]) -> requests.Response:
        response = requests.Response()
        response.status_code = 200
        response.reason = "OK"
        response.headers = CaseInsensitiveDict({**entry.get("headers", {}), **fresh})
        response._content = str(entry.get("body", "")).encode("utf-8")
        response.encoding = "utf-8"
        response.url = request.url or ""
        response.request = request
        return response


def _message(exc: GithubException) -> str:
    data = exc.data
    if isinstance(data, dict):
        text = str(data.get("message") or "")
        errors = data.get("errors")
        if errors:
            text += f" ({json.dumps(errors)[:300]})"
        return text or str(exc.status)
    return str(data)[:300] if data else str(exc.status)


@contextmanager
def translate(what: str) -> Iterator[None]:
    """Map PyGithub and ``requests`` failures onto outerloop's forge errors."""
    try:
        yield
    except (RateLimitExceededExceedsMaxWait, RateLimitExceededException) as exc:
        raise RateLimited(
            f"GitHub rate limit while {what}: {_message(exc)}; forge work waits for the "
            f"next tick") from None
    except requests.exceptions.RetryError as exc:
        raise ForgeUnavailable(f"GitHub kept failing while {what} (retries exhausted: "
                               f"{str(exc)[:200]}); the tick defers") from None
    except (requests.exceptions.ConnectionError, requests.exceptions.Timeout,
            requests.exceptions.ChunkedEncodingError) as exc:
        raise ForgeUnavailable(f"GitHub unreachable while {what} ({type(exc).__name__}); "
                               f"the tick defers") from None
    except BadCredentialsException:
        raise ForgeForbidden(f"GitHub refused the credentials while {what}; fix: put a valid "
                         f"token in the [forge] token_file (mode 600)") from None
    except UnknownObjectException as exc:
        raise NotFound(f"GitHub: not found while {what} ({_message(exc)}); fix: check the "
                       f"repository name and the token's access") from None
    except GithubException as exc:
        if exc.status >= 500:
            raise ForgeUnavailable(f"GitHub failed ({exc.status}) while {what}; the tick "
                                   f"defers") from None
        refused = {401: ForgeForbidden, 403: ForgeForbidden, 409: ForgeConflict}.get(
            exc.status, ForgeError)
        raise refused(f"GitHub refused {what}: {exc.status} {_message(exc)}") from None


def is_ambiguous(exc: BaseException) -> bool:
    """Whether a failed write may still have happened on GitHub's side (a 5xx, a
    timeout or a connection lost after sending): the caller must look before retrying."""
    return isinstance(exc, ForgeUnavailable) and not isinstance(exc, RateLimited)
