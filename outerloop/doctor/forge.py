"""The forge: for GitHub, the token file (present, 0600), the token (valid), the login
(equal to ``[forge] login``), push permission on each target, and what the token itself
may write there (``forge_rights``: writes GitHub refuses by design)."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok
from outerloop.doctor.forge_rights import missing_rights
from outerloop.errors import ConfigError
from outerloop.private_files import read_key

TIMEOUT_S = 10


def check_forge(settings: Settings) -> list[Check]:
    if settings.forge.kind == "local":
        return [ok("forge", f"local forge under {settings.home / 'forge'} (no token needed)")]
    path = settings.path(settings.forge.token_file)
    try:
        token = read_key(path)
    except ConfigError as exc:
        problem, _, fix = str(exc).partition("; fix: ")
        return [fail("forge token", problem, fix or f"write the token to {path}, chmod 600")]
    if not token:
        return [fail("forge token", f"{path} is empty", f"write the token to {path}")]
    results = [ok("forge token", f"{path} (0600)")]
    try:
        user = _get(settings, "/user", token)
    except (urllib.error.URLError, OSError, ValueError) as exc:
        return [*results, fail("forge token valid", f"{settings.forge.api_url}/user: "
                               f"{getattr(exc, 'code', '')} {getattr(exc, 'reason', exc)}",
                               "create a new token (repo scope, or a fine-grained token with "
                               "contents/issues/pull requests write) and write it to " + str(path))]
    login = str(user.get("login", ""))
    if login != settings.forge.login:
        results.append(fail("forge login", f"the token belongs to {login!r}, [forge] login "
                            f"is {settings.forge.login!r}", f"set [forge] login = \"{login}\" "
                            f"(markers count only on the kernel's own posts)"))
    else:
        results.append(ok("forge login", f"token of {login}"))
    for target in settings.targets:
        try:
            repo = _get(settings, f"/repos/{target.repo}", token)
        except (urllib.error.URLError, OSError, ValueError) as exc:
            results.append(fail(f"forge target {target.repo}", f"cannot read it "
                                f"({getattr(exc, 'code', '')} {getattr(exc, 'reason', exc)})",
                                f"give {login} access to {target.repo}"))
            continue
        if not _can_push(settings, target.repo, login, token, repo):
            results.append(fail(f"forge target {target.repo}", f"{login} cannot push",
                                f"give {login} write access to {target.repo}"))
            continue
        lacks = missing_rights(settings.forge.api_url, target.repo,
                               str(repo.get("clone_url") or ""),
                               str(repo.get("default_branch") or "main"), token)
        if lacks:
            results.append(fail(f"forge target {target.repo}", f"{login} may push, but the "
                                f"token in {path} may not: it lacks {'; '.join(lacks)}",
                                f"give the token those rights on {target.repo} (a "
                                f"fine-grained token: Contents, Pull requests and Issues "
                                f"read and write; a classic one: the repo scope)"))
        else:
            results.append(ok(f"forge target {target.repo}", f"{login} can push, and the "
                              f"token may push, open pull requests and post (asked GitHub)"))
    return results


PUSH_ROLES = frozenset({"admin", "maintain", "write"})


def _can_push(settings: Settings, repo_name: str, login: str, token: str,
              repo: dict[str, Any]) -> bool:
    """The login's collaborator permission on the repository (admin, maintain or
    write can push); where the token may not read it, ``permissions.push`` of the
    repository as the token sees it."""
    try:
        answer = _get(settings, f"/repos/{repo_name}/collaborators/{login}/permission", token)
        return str(answer.get("permission")) in PUSH_ROLES
    except (urllib.error.URLError, OSError, ValueError):
        permissions = repo.get("permissions")
        return isinstance(permissions, dict) and bool(permissions.get("push"))


def _get(settings: Settings, path: str, token: str) -> dict[str, Any]:
    request = urllib.request.Request(settings.forge.api_url.rstrip("/") + path, headers={
        "Authorization": f"token {token}", "Accept": "application/vnd.github+json",
        "User-Agent": "outerloop-doctor"})
    with urllib.request.urlopen(request, timeout=TIMEOUT_S) as answer:
        data = json.loads(answer.read().decode("utf-8"))
    if not isinstance(data, dict):
        raise ValueError("not a JSON object")
    return data
