"""What the forge token may really write, asked with writes GitHub refuses by design.

A login with write access can hold a token that cannot write (a fine-grained token
with read access only, a classic one without ``repo``): the collaborator permission
says nothing of the token. So doctor asks GitHub with three requests that cannot
change anything, because GitHub validates them only after it checks the token's
rights: a push's ref advertisement (``info/refs?service=git-receive-pack``: 200 for a
token that may push, 401/403 else), a pull request from a branch that does not exist
(422 with the right, 403 without) and an issue without a title (422 with, 403 without).
Anything else (a 201, a 5xx) is said as it is: not a pass.
"""

from __future__ import annotations

import base64
import json
import secrets
import urllib.error
import urllib.request
from collections.abc import Callable

TIMEOUT_S = 10
VALIDATION_FAILED = 422
PROBE_BRANCH = "outerloop-doctor-no-such-branch-"


def _status(request: urllib.request.Request) -> int:
    """The HTTP status of ``request`` (-1: no answer)."""
    try:
        with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)
    except (urllib.error.URLError, OSError):
        return -1


def _post(api: str, path: str, token: str, body: dict[str, str]) -> int:
    return _status(urllib.request.Request(
        api.rstrip("/") + path, data=json.dumps(body).encode(), method="POST", headers={
            "Authorization": f"token {token}", "Accept": "application/vnd.github+json",
            "Content-Type": "application/json", "User-Agent": "outerloop-doctor"}))


def _can_push(clone_url: str, token: str) -> int:
    basic = base64.b64encode(f"x-access-token:{token}".encode()).decode()
    return _status(urllib.request.Request(
        clone_url + "/info/refs?service=git-receive-pack",
        headers={"Authorization": f"Basic {basic}", "User-Agent": "git/2.39 outerloop-doctor"}))


def missing_rights(api: str, repo: str, clone_url: str, default_branch: str,
                   token: str) -> list[str]:
    """The rights the token lacks on ``repo``, each as a fine-grained token names it
    with what GitHub answered (empty: it may push, open pull requests and post)."""
    probes: list[tuple[str, Callable[[], int], int]] = [
        ("contents: write (push)", lambda: _can_push(clone_url, token), 200),
        ("pull requests: write", lambda: _post(api, f"/repos/{repo}/pulls", token, {
            "title": "outerloop doctor probe", "base": default_branch,
            "head": PROBE_BRANCH + secrets.token_hex(6)}), VALIDATION_FAILED),
        ("issues: write", lambda: _post(api, f"/repos/{repo}/issues", token, {"title": ""}),
         VALIDATION_FAILED),
    ]
    missing = []
    for right, probe, allowed in probes:
        status = probe()
        if status != allowed:
            said = "no answer" if status < 0 else f"HTTP {status}"
            missing.append(f"{right} ({said})")
    return missing
