"""The fake GitHub's API routes: one function per operation, over ``FakeGitHub``'s
state. Each takes ``(fake, login, query, payload, *path groups)`` and returns
``(status, extra headers, JSON body)``; bodies are built by ``FakeGitHub``'s builders
from the official description's examples (see ``fake.py``)."""

from __future__ import annotations

import base64
import copy
import hashlib
import os
import re
import subprocess
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from tests.github.fake import FakeGitHub, RepoState, _git, _stamp


def _not_found() -> tuple[int, dict[str, str], Any]:
    return 404, {}, {"message": "Not Found", "documentation_url": "https://docs.github.com/rest"}


def _repo(fake: FakeGitHub, owner: str, name: str) -> RepoState | None:
    return fake.repos.get(f"{owner}/{name}")


def _page(fake: FakeGitHub, path: str, query: dict[str, list[str]],
          items: list[Any]) -> tuple[int, dict[str, str], Any]:
    per_page = int(query.get("per_page", ["30"])[-1])
    page = int(query.get("page", ["1"])[-1])
    chunk = items[(page - 1) * per_page: page * per_page]
    headers = {}
    if page * per_page < len(items):
        nxt = {k: v[-1] for k, v in query.items()}
        nxt["page"] = str(page + 1)
        headers["Link"] = f'<{fake.base_url}{path}?{urlencode(nxt)}>; rel="next"'
    return 200, headers, chunk


def _since(query: dict[str, list[str]],
           key: str = "updated_at") -> Callable[[dict[str, Any]], bool]:
    since = query.get("since", [""])[-1]
    return lambda item: not since or item[key] >= since


# each handler: (fake, login, query, payload, *path groups) -> (status, headers, body)

def _rate_limit(fake: FakeGitHub, login: str, query: Any, payload: Any) -> Any:
    body = copy.deepcopy(fake._examples["rate"])
    core = {"limit": fake.RATE_LIMIT, "used": fake.RATE_LIMIT - fake.remaining,
            "remaining": fake.remaining, "reset": fake.reset_at}
    body["resources"]["core"] = core
    body["rate"] = core
    return 200, {}, body


def _get_user(fake: FakeGitHub, login: str, query: Any, payload: Any) -> Any:
    body = copy.deepcopy(fake._examples["user"])
    body.update(fake.user(login))
    body["user_view_type"] = "private"  # the description's discriminator for /user
    return 200, {}, body


def _access_token(fake: FakeGitHub, login: str, query: Any, payload: Any,
                  installation: str) -> Any:
    if login != "app-jwt" or int(installation) not in fake.app_installations:
        return _not_found()
    bot, ttl = fake.app_installations[int(installation)]
    token = "ghs_" + hashlib.sha256(f"{time.time()}{fake._next_id()}".encode()).hexdigest()[:36]
    fake.tokens[token] = bot
    fake.minted.append((token, time.time()))
    body = copy.deepcopy(fake._examples["token"])
    body.update(token=token, expires_at=_stamp(time.time() + ttl))
    body.pop("repositories", None)
    return 201, {}, body


def _get_repo(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str) -> Any:
    repo = _repo(fake, o, r)
    return (200, {}, fake.repo_body(repo)) if repo else _not_found()


def _get_ref(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str,
             ref: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None or not ref.startswith("heads/"):
        return _not_found()
    sha = fake.branch_head(f"{o}/{r}", ref.removeprefix("heads/"))
    if sha is None:
        return _not_found()
    body = copy.deepcopy(fake._examples["ref"])
    body.update(ref=f"refs/{ref}", url=f"{fake.base_url}/repos/{o}/{r}/git/refs/{ref}",
                object={"type": "commit", "sha": sha,
                        "url": f"{fake.base_url}/repos/{o}/{r}/git/commits/{sha}"})
    return 200, {}, body


def _get_contents(fake: FakeGitHub, login: str, query: dict[str, list[str]], payload: Any,
                  o: str, r: str, path: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None:
        return _not_found()
    ref = query.get("ref", [repo.default_branch])[-1]
    try:
        kind = _git(["cat-file", "-t", f"{ref}:{path}"], cwd=repo.bare)
        raw = subprocess.run(["git", "cat-file", "blob", f"{ref}:{path}"], cwd=repo.bare,
                             check=True, capture_output=True).stdout if kind == "blob" else b""
        sha = _git(["rev-parse", f"{ref}:{path}"], cwd=repo.bare)
    except subprocess.CalledProcessError:
        return _not_found()
    if kind != "blob":
        return _not_found()
    body = copy.deepcopy(fake._examples["content"])
    url = f"{fake.base_url}/repos/{o}/{r}/contents/{path}?ref={ref}"
    body.update(type="file", encoding="base64", size=len(raw), name=path.rsplit("/", 1)[-1],
                path=path, content=base64.b64encode(raw).decode(), sha=sha, url=url,
                git_url=None, html_url=None, download_url=None,
                _links={"self": url, "git": None, "html": None})
    return 200, {}, body


def _permission(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str,
                user: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None:
        return _not_found()
    permission = repo.permissions.get(user, "read")
    body = copy.deepcopy(fake._examples["permission"])
    body.update(permission=permission, role_name=permission, user=fake.user(user))
    body["user"]["permissions"] = {"admin": permission == "admin",
                                   "push": permission in ("admin", "write"),
                                   "pull": True, "maintain": False, "triage": False}
    body["user"]["role_name"] = permission
    body["user"].pop("user_view_type", None)
    return 200, {}, body


def _list_issues(fake: FakeGitHub, login: str, query: dict[str, list[str]], payload: Any,
                 o: str, r: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None:
        return _not_found()
    state = query.get("state", ["open"])[-1]
    keep = _since(query)
    items = [i for i in repo.issues.values()
             if (state == "all" or i["state"] == state) and keep(i)]
    reverse = query.get("direction", ["desc"])[-1] == "desc"
    items.sort(key=lambda i: (i["created_at"], i["number"]), reverse=reverse)
    return _page(fake, f"/repos/{o}/{r}/issues", query,
                 [fake.issue_body(repo, i) for i in items])


def _new_issue(fake: FakeGitHub, repo: RepoState, login: str, title: str, body: str,
               is_pr: bool = False) -> dict[str, Any]:
    now = _stamp()
    issue = {"id": fake._next_id(), "number": repo.next_number, "title": title,
             "body": body, "author": login, "state": "open", "labels": [],
             "created_at": now, "updated_at": now, "is_pr": is_pr}
    repo.issues[repo.next_number] = issue
    repo.timeline[repo.next_number] = []
    repo.next_number += 1
    return issue


def _create_issue(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None:
        return _not_found()
    if not payload or not payload.get("title"):
        return 422, {}, {"message": "Validation Failed",
                         "documentation_url": "https://docs.github.com/rest",
                         "errors": [{"resource": "Issue", "code": "missing_field",
                                     "field": "title"}]}
    issue = _new_issue(fake, repo, login, payload["title"], payload.get("body") or "")
    return 201, {}, fake.issue_body(repo, issue)


def _get_issue(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str,
               n: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None or int(n) not in repo.issues:
        return _not_found()
    return 200, {}, fake.issue_body(repo, repo.issues[int(n)])


def _patch_issue(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str,
                 n: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None or int(n) not in repo.issues:
        return _not_found()
    issue = repo.issues[int(n)]
    for key in ("title", "body", "state"):
        if key in payload:
            issue[key] = payload[key]
    issue["updated_at"] = _stamp()
    if payload.get("state") == "closed":
        issue["closed_at"] = issue["updated_at"]
    return 200, {}, fake.issue_body(repo, issue)


def _list_comments(fake: FakeGitHub, login: str, query: dict[str, list[str]], payload: Any,
                   o: str, r: str, n: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None or int(n) not in repo.issues:
        return _not_found()
    keep = _since(query)
    items = [fake.comment_body(repo, c) for c in repo.comments
             if c["_issue"] == int(n) and keep(c)]
    return _page(fake, f"/repos/{o}/{r}/issues/{n}/comments", query, items)


def _create_comment(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str,
                    n: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None or int(n) not in repo.issues:
        return _not_found()
    now = _stamp()
    comment = {"id": fake._next_id(), "_issue": int(n), "author": login,
               "body": payload["body"], "created_at": now, "updated_at": now}
    repo.comments.append(comment)
    repo.issues[int(n)]["updated_at"] = now
    return 201, {}, fake.comment_body(repo, comment)


def _edit_comment(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str,
                  cid: str) -> Any:
    repo = _repo(fake, o, r)
    found = None if repo is None else next(
        (c for c in repo.comments if c["id"] == int(cid)), None)
    if repo is None or found is None:
        return _not_found()
    if found["author"] != login:
        return 403, {}, {"message": "Must have admin rights to Repository."}
    found["body"], found["updated_at"] = payload["body"], _stamp()
    return 200, {}, fake.comment_body(repo, found)


def _add_labels(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str,
                n: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None or int(n) not in repo.issues:
        return _not_found()
    names = payload if isinstance(payload, list) else payload.get("labels", [])
    issue = repo.issues[int(n)]
    for name in names:
        if name in issue["labels"]:
            continue
        issue["labels"].append(name)
        issue["updated_at"] = _stamp()
        event = copy.deepcopy(next(e for e in fake._examples["timeline"]
                                   if e["event"] == "labeled"))
        eid = fake._next_id()
        event.update(id=eid, node_id=f"LE_{eid}", url=f"{fake.base_url}/events/{eid}",
                     actor=fake.user(login), created_at=issue["updated_at"],
                     label={"name": name, "color": "ededed"}, performed_via_github_app=None,
                     commit_id=None, commit_url=None)
        repo.timeline[int(n)].append(event)
    return 200, {}, fake._labels(issue["labels"])


def _timeline(fake: FakeGitHub, login: str, query: dict[str, list[str]], payload: Any,
              o: str, r: str, n: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None or int(n) not in repo.issues:
        return _not_found()
    return _page(fake, f"/repos/{o}/{r}/issues/{n}/timeline", query, repo.timeline[int(n)])


def _list_pulls(fake: FakeGitHub, login: str, query: dict[str, list[str]], payload: Any,
                o: str, r: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None:
        return _not_found()
    state = query.get("state", ["open"])[-1]
    head = query.get("head", [""])[-1]
    items = []
    for pr in sorted(repo.pulls.values(), key=lambda p: p["number"]):
        issue = repo.issues[pr["number"]]
        if state != "all" and issue["state"] != state:
            continue
        if head and head != f"{o}:{pr['head']}":
            continue
        items.append(fake.pull_simple(repo, pr))
    return _page(fake, f"/repos/{o}/{r}/pulls", query, items)


def _create_pull(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None:
        return _not_found()
    full = f"{o}/{r}"
    head, base = payload["head"].split(":")[-1], payload["base"]
    sha = fake.branch_head(full, head)
    error = None
    if sha is None or fake.branch_head(full, base) is None:
        error = {"resource": "PullRequest", "code": "invalid", "field": "head"}
    elif any(p["head"] == head and repo.issues[p["number"]]["state"] == "open"
             for p in repo.pulls.values()):
        error = {"resource": "PullRequest", "code": "custom",
                 "message": f"A pull request already exists for {o}:{head}."}
    if error:
        return 422, {}, {"message": "Validation Failed", "errors": [error],
                         "documentation_url": "https://docs.github.com/rest"}
    issue = _new_issue(fake, repo, login, payload["title"], payload.get("body") or "", True)
    pr = {"number": issue["number"], "head": head, "base": base, "head_sha": sha,
          "draft": bool(payload.get("draft")), "merged_at": None, "merge_sha": None}
    repo.pulls[issue["number"]] = pr
    return 201, {}, fake.pull_body(repo, pr)


def _get_pull(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str,
              n: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None or int(n) not in repo.pulls:
        return _not_found()
    return 200, {}, fake.pull_body(repo, repo.pulls[int(n)])


def _patch_pull(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str,
                n: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None or int(n) not in repo.pulls:
        return _not_found()
    issue = repo.issues[int(n)]
    for key in ("title", "body", "state"):
        if key in payload:
            issue[key] = payload[key]
    issue["updated_at"] = _stamp()
    if payload.get("state") == "closed":
        issue["closed_at"] = issue["updated_at"]
        repo.pulls[int(n)]["head_sha"] = fake.branch_head(f"{o}/{r}", repo.pulls[int(n)]["head"])
    return 200, {}, fake.pull_body(repo, repo.pulls[int(n)])


def _merge_pull(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str,
                n: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None or int(n) not in repo.pulls:
        return _not_found()
    pr, issue = repo.pulls[int(n)], repo.issues[int(n)]
    if issue["state"] != "open" or repo.permissions.get(login) not in ("admin", "write"):
        return 405, {}, {"message": "Pull Request is not mergeable",
                         "documentation_url": "https://docs.github.com/rest"}
    full = f"{o}/{r}"
    head_sha = fake.branch_head(full, pr["head"])
    base_sha = fake.branch_head(full, pr["base"])
    tree = _git(["merge-tree", "--write-tree", str(base_sha), str(head_sha)], cwd=repo.bare)
    env = {**os.environ, "GIT_AUTHOR_NAME": login, "GIT_AUTHOR_EMAIL": "h@example.com",
           "GIT_COMMITTER_NAME": login, "GIT_COMMITTER_EMAIL": "h@example.com"}
    merged = subprocess.run(
        ["git", "commit-tree", tree.splitlines()[0], "-p", str(base_sha), "-p", str(head_sha),
         "-m", f"Merge pull request #{n}"], cwd=repo.bare, env=env, check=True,
        capture_output=True, text=True).stdout.strip()
    _git(["update-ref", f"refs/heads/{pr['base']}", merged, str(base_sha)], cwd=repo.bare)
    now = _stamp()
    pr.update(merged_at=now, merge_sha=merged, head_sha=head_sha)
    issue.update(state="closed", closed_at=now, updated_at=now)
    if pr["base"] == repo.default_branch:  # GitHub's closing keywords in the body
        for ref in re.findall(r"(?<![\w-])(?:close[sd]?|fix(?:e[sd])?|resolve[sd]?):?\s+#(\d+)\b",
                              issue.get("body") or "", flags=re.IGNORECASE):
            closed = repo.issues.get(int(ref))
            if closed is not None and int(ref) not in repo.pulls and closed["state"] == "open":
                closed.update(state="closed", closed_at=now, updated_at=now)
    return 200, {}, {"sha": merged, "merged": True, "message": "Pull Request successfully merged"}


def _review_body(fake: FakeGitHub, repo: RepoState, rv: dict[str, Any]) -> dict[str, Any]:
    body = copy.deepcopy(fake._examples["review"])
    base = f"{fake.base_url}/repos/{repo.owner}/{repo.name}/pulls/{rv['_pr']}"
    body.update(id=rv["id"], node_id=f"PRR_{rv['id']}", user=fake.user(rv["author"]),
                body=rv["body"], state=rv["state"], submitted_at=rv["submitted_at"],
                pull_request_url=base, html_url=f"{base}#pullrequestreview-{rv['id']}",
                author_association=fake.association(repo, rv["author"]),
                commit_id=rv["commit_id"])
    return body


def _list_reviews(fake: FakeGitHub, login: str, query: dict[str, list[str]], payload: Any,
                  o: str, r: str, n: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None or int(n) not in repo.pulls:
        return _not_found()
    items = [_review_body(fake, repo, rv) for rv in repo.reviews if rv["_pr"] == int(n)]
    return _page(fake, f"/repos/{o}/{r}/pulls/{n}/reviews", query, items)


def _create_review(fake: FakeGitHub, login: str, query: Any, payload: Any, o: str, r: str,
                   n: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None or int(n) not in repo.pulls:
        return _not_found()
    pr = repo.pulls[int(n)]
    now = _stamp()
    state = {"COMMENT": "COMMENTED", "APPROVE": "APPROVED",
             "REQUEST_CHANGES": "CHANGES_REQUESTED"}.get(payload.get("event", ""), "PENDING")
    rv = {"id": fake._next_id(), "_pr": int(n), "author": login, "body": payload.get("body", ""),
          "state": state, "submitted_at": now,
          "commit_id": fake.branch_head(f"{o}/{r}", pr["head"]) or pr["head_sha"]}
    repo.reviews.append(rv)
    for c in payload.get("comments") or []:
        repo.review_comments.append({
            "id": fake._next_id(), "_pr": int(n), "review": rv["id"], "author": login,
            "path": c["path"], "line": c.get("line"), "body": c["body"],
            "created_at": now, "updated_at": now, "commit_id": rv["commit_id"]})
    repo.issues[int(n)]["updated_at"] = now
    return 200, {}, _review_body(fake, repo, rv)


def _list_review_comments(fake: FakeGitHub, login: str, query: dict[str, list[str]],
                          payload: Any, o: str, r: str, n: str) -> Any:
    repo = _repo(fake, o, r)
    if repo is None or int(n) not in repo.pulls:
        return _not_found()
    template = fake._examples["review_comment"][0]
    keep = _since(query)
    items = []
    base = f"{fake.base_url}/repos/{o}/{r}/pulls"
    for c in repo.review_comments:
        if c["_pr"] != int(n) or not keep(c):
            continue
        body = copy.deepcopy(template)
        body.update(id=c["id"], node_id=f"PRRC_{c['id']}", url=f"{base}/comments/{c['id']}",
                    pull_request_review_id=c["review"], path=c["path"], line=c["line"],
                    original_line=c["line"], body=c["body"], user=fake.user(c["author"]),
                    created_at=c["created_at"], updated_at=c["updated_at"],
                    author_association=fake.association(repo, c["author"]),
                    commit_id=c["commit_id"], original_commit_id=c["commit_id"],
                    pull_request_url=f"{base}/{n}", in_reply_to_id=None)
        body.pop("in_reply_to_id", None)
        items.append(body)
    return _page(fake, f"/repos/{o}/{r}/pulls/{n}/comments", query, items)


_SEG = r"([^/]+)"
_R = rf"^/repos/{_SEG}/{_SEG}"
ROUTES: list[tuple[str, re.Pattern[str], Callable[..., Any]]] = [
    (m, re.compile(p), h) for m, p, h in [
        ("GET", r"^/rate_limit$", _rate_limit),
        ("GET", r"^/user$", _get_user),
        ("POST", r"^/app/installations/(\d+)/access_tokens$", _access_token),
        ("GET", _R + "$", _get_repo),
        ("GET", _R + r"/git/ref/(.+)$", _get_ref),
        ("GET", _R + r"/contents/(.+)$", _get_contents),
        ("GET", _R + rf"/collaborators/{_SEG}/permission$", _permission),
        ("GET", _R + r"/issues$", _list_issues),
        ("POST", _R + r"/issues$", _create_issue),
        ("GET", _R + r"/issues/(\d+)$", _get_issue),
        ("PATCH", _R + r"/issues/(\d+)$", _patch_issue),
        ("GET", _R + r"/issues/(\d+)/comments$", _list_comments),
        ("POST", _R + r"/issues/(\d+)/comments$", _create_comment),
        ("PATCH", _R + r"/issues/comments/(\d+)$", _edit_comment),
        ("POST", _R + r"/issues/(\d+)/labels$", _add_labels),
        ("GET", _R + r"/issues/(\d+)/timeline$", _timeline),
        ("GET", _R + r"/pulls$", _list_pulls),
        ("POST", _R + r"/pulls$", _create_pull),
        ("GET", _R + r"/pulls/(\d+)$", _get_pull),
        ("PATCH", _R + r"/pulls/(\d+)$", _patch_pull),
        ("PUT", _R + r"/pulls/(\d+)/merge$", _merge_pull),
        ("GET", _R + r"/pulls/(\d+)/reviews$", _list_reviews),
        ("POST", _R + r"/pulls/(\d+)/reviews$", _create_review),
        ("GET", _R + r"/pulls/(\d+)/comments$", _list_review_comments),
    ]
]
