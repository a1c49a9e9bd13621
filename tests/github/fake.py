"""A stateful fake GitHub on ``127.0.0.1:0``, in the test process.

It models what outerloop touches: repositories backed by real bare git repos (served
over smart HTTP by ``git http-backend``), issues, comments, labels with a timeline,
pull requests, reviews, review comments, collaborators and permissions, the rate
limit, and GitHub App installation tokens. Bodies start from the official
description's own examples (so every field GitHub sends is there) with the state
written over them; every response is checked against the description
(``validator.check_response``) and a mismatch is recorded in ``violations`` (tests
assert it stays empty). Requests are checked as warnings (``request_warnings``).

Humans act through the API too, with their own tokens (``token_for``), so the fake
sees exactly what GitHub would: ``author_association`` is computed from the repo owner
and collaborator permissions, the timeline records who applied a label.

Routes live in ``fake_routes.py``. Faults: ``fail(method, path_regex, status, times,
after_effect=...)`` answers the
next matching requests with an error (after performing the effect, when asked, to
model a 5xx whose write happened); a rate limit is a ``fail`` with 403/429, GitHub's
message and its ``X-RateLimit-*`` / ``Retry-After`` headers. A ``fail`` matching a git
path (``r"[.]git/"``) answers git's smart HTTP with that status and no body.

Latency: ``latency_s`` is slept before each API request is answered, outside the
state lock, so concurrent requests overlap as they would on GitHub; ``max_in_flight``
is the most API requests that were waiting out that latency at once.
"""

from __future__ import annotations

import base64
import copy
import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import SplitResult, parse_qs, urlsplit

from tests.github import validator

API = "https://api.github.com"
GIT = "git"
_EXAMPLES: dict[str, str] = {
    "repo": "full-repository-default-response",
    "issue": "issue",
    "comment": "issue-comment",
    "pull": "pull-request",
    "review": "pull-request-review",
    "review_comment": "pull-request-review-comment-items",
    "timeline": "timeline-issue-events",
    "ref": "git-ref",
    "rate": "rate-limit-overview",
    "content": "content-file-response-if-content-is-a-file",
    "token": "installation-token",
    "permission": "repository-collaborator-permission-response-if-user-has-admin-permissions",
    "user": "private-user-response-with-public-and-private-profile-information",
    "label": "label",
}


def _stamp(moment: float | None = None) -> str:
    return datetime.fromtimestamp(moment or time.time(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _git(args: list[str], cwd: Path | None = None, **kw: Any) -> str:
    env = {**os.environ, "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True,
                          text=True, **kw).stdout.strip()


@dataclass
class Fault:
    method: str
    pattern: re.Pattern[str]
    status: int
    times: int
    after_effect: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=lambda: {"message": "Server Error"})
    drop: bool = False


@dataclass
class RepoState:
    owner: str
    name: str
    bare: Path
    default_branch: str = "main"
    next_number: int = 1
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    comments: list[dict[str, Any]] = field(default_factory=list)
    timeline: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    reviews: list[dict[str, Any]] = field(default_factory=list)
    review_comments: list[dict[str, Any]] = field(default_factory=list)
    permissions: dict[str, str] = field(default_factory=dict)


class FakeGitHub:
    """See the module docstring. ``start()`` serves; ``base_url`` is the API root."""

    RATE_LIMIT = 5000

    def __init__(self, root: Path) -> None:
        self.root = root
        self.root.mkdir(parents=True, exist_ok=True)
        spec = validator.description()["components"]["examples"]
        self._examples = {k: spec[v]["value"] for k, v in _EXAMPLES.items()}
        self.repos: dict[str, RepoState] = {}
        self.tokens: dict[str, str] = {}
        self.read_only_tokens: set[str] = set()
        self.app_installations: dict[int, tuple[str, float]] = {}
        self.minted: list[tuple[str, float]] = []
        self.lock = threading.RLock()
        self.ids = 1000
        self.remaining = self.RATE_LIMIT
        self.reset_at = int(time.time()) + 3600
        self.faults: list[Fault] = []
        self.violations: list[str] = []
        self.request_warnings: list[str] = []
        self.log: list[tuple[str, str, int]] = []
        self.auth_headers: list[str] = []
        self.validate = True
        self.latency_s = 0.0
        self.in_flight = 0
        self.max_in_flight = 0
        self.mutate: Callable[[str, str, Any], Any] | None = None
        self.server: ThreadingHTTPServer | None = None
        self.base_url = ""

    # ----- lifecycle

    def start(self) -> FakeGitHub:
        fake = self

        class Handler(_Handler):
            owner = fake

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    # ----- setup helpers (test side, no HTTP)

    def token_for(self, login: str, read_only: bool = False) -> str:
        """A token of ``login``; ``read_only``: a fine-grained token with read access
        only (every API write and every push answered 403, as GitHub does)."""
        salt = "-read-only" if read_only else ""
        token = "ghp_" + hashlib.sha256(f"{login}-{id(self)}{salt}".encode()).hexdigest()[:36]
        self.tokens[token] = login
        if read_only:
            self.read_only_tokens.add(token)
        return token

    def add_app_installation(self, installation_id: int, login: str, ttl_s: float) -> None:
        self.app_installations[installation_id] = (login, ttl_s)

    def create_repo(self, full: str, source: Path, owner_login: str | None = None,
                    default_branch: str = "main") -> RepoState:
        """A repository holding the files of ``source`` (a directory, or a git repo
        whose ``default_branch`` is pushed)."""
        owner, name = full.split("/")
        bare = self.root / owner / f"{name}.git"
        bare.parent.mkdir(parents=True, exist_ok=True)
        _git(["init", "--bare", "--quiet", f"--initial-branch={default_branch}", str(bare)])
        _git(["config", "http.receivepack", "true"], cwd=bare)
        _git(["config", "uploadpack.allowAnySHA1InWant", "true"], cwd=bare)
        work = self.root / f".import-{owner}-{name}"
        if (source / ".git").exists():
            _git(["push", "--quiet", str(bare), f"HEAD:refs/heads/{default_branch}"], cwd=source)
        else:
            shutil.copytree(source, work, ignore=shutil.ignore_patterns("__pycache__"))
            _git(["init", "--quiet", f"--initial-branch={default_branch}"], cwd=work)
            _git(["add", "-A", "."], cwd=work)
            _git(["-c", "user.name=maintainer", "-c", "user.email=m@example.com", "commit",
                  "--quiet", "-m", "Import"], cwd=work)
            _git(["push", "--quiet", str(bare), f"HEAD:refs/heads/{default_branch}"], cwd=work)
            shutil.rmtree(work)
        state = RepoState(owner, name, bare, default_branch)
        state.permissions[owner_login or owner] = "admin"
        self.repos[full] = state
        return state

    def grant(self, full: str, login: str, permission: str) -> None:
        self.repos[full].permissions[login] = permission

    def fail(self, method: str, path: str, status: int = 502, times: int = 1, *,
             after_effect: bool = False, headers: dict[str, str] | None = None,
             body: dict[str, Any] | None = None, drop: bool = False) -> None:
        self.faults.append(Fault(method, re.compile(path), status, times, after_effect,
                                 headers or {}, body or {"message": "Server Error"}, drop))

    def branch_head(self, full: str, branch: str) -> str | None:
        try:
            return _git(["rev-parse", "--verify", "--quiet", f"refs/heads/{branch}"],
                        cwd=self.repos[full].bare)
        except subprocess.CalledProcessError:
            return None

    def file_at(self, full: str, ref: str, path: str) -> str | None:
        try:
            return _git(["show", f"{ref}:{path}"], cwd=self.repos[full].bare)
        except subprocess.CalledProcessError:
            return None

    def comments_on(self, full: str, number: int) -> list[dict[str, Any]]:
        return [c for c in self.repos[full].comments if c["_issue"] == number]

    def open_pr_heads(self, full: str) -> dict[int, str | None]:
        repo = self.repos[full]
        return {n: self.branch_head(full, pr["head"]) for n, pr in list(repo.pulls.items())
                if repo.issues[n]["state"] == "open"}

    def costly_requests(self) -> int:
        return self.RATE_LIMIT - self.remaining

    # ----- body builders

    def _next_id(self) -> int:
        with self.lock:
            self.ids += 1
            return self.ids

    def _rewrite(self, value: Any) -> Any:
        text = json.dumps(value).replace(API, self.base_url)
        return json.loads(text)

    def user(self, login: str) -> dict[str, Any]:
        user = copy.deepcopy(self._examples["issue"]["user"])
        uid = int(hashlib.sha256(login.encode()).hexdigest()[:6], 16)
        user.update(login=login, id=uid, node_id=f"U_{uid}",
                    url=f"{self.base_url}/users/{login}",
                    html_url=f"{self.base_url}/{login}",
                    type="Bot" if login.endswith("[bot]") else "User")
        return user

    def association(self, repo: RepoState, login: str) -> str:
        if login.casefold() == repo.owner.casefold():
            return "OWNER"
        if repo.permissions.get(login) in ("admin", "write", "maintain"):
            return "COLLABORATOR"
        return "NONE"

    def _labels(self, names: list[str]) -> list[dict[str, Any]]:
        out = []
        for name in names:
            label = copy.deepcopy(self._examples["label"])
            label.update(name=name, id=int(hashlib.sha256(name.encode()).hexdigest()[:6], 16),
                         url=f"{self.base_url}/labels/{name}", default=False)
            out.append(label)
        return out

    def issue_body(self, repo: RepoState, issue: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(self._examples["issue"])
        url = f"{self.base_url}/repos/{repo.owner}/{repo.name}/issues/{issue['number']}"
        comments = len(self.comments_on(f"{repo.owner}/{repo.name}", issue["number"]))
        body.update(
            id=issue["id"], node_id=f"I_{issue['id']}", url=url,
            repository_url=f"{self.base_url}/repos/{repo.owner}/{repo.name}",
            labels_url=url + "/labels{/name}", comments_url=url + "/comments",
            events_url=url + "/events", html_url=url.replace("/repos/", "/"),
            number=issue["number"], state=issue["state"], title=issue["title"],
            body=issue["body"], user=self.user(issue["author"]),
            labels=self._labels(issue["labels"]), assignee=None, assignees=[],
            milestone=None, locked=False, comments=comments, closed_at=issue.get("closed_at"),
            created_at=issue["created_at"], updated_at=issue["updated_at"],
            author_association=self.association(repo, issue["author"]), closed_by=None,
        )
        for extra in ("pinned_comment", "type", "sub_issues_summary", "issue_dependencies_summary",
                      "state_reason"):
            body.pop(extra, None)
        if issue.get("is_pr"):
            body["pull_request"] = {
                "url": f"{self.base_url}/repos/{repo.owner}/{repo.name}/pulls/{issue['number']}",
                "html_url": None, "diff_url": None, "patch_url": None}
        else:
            body.pop("pull_request", None)
        return body

    def comment_body(self, repo: RepoState, c: dict[str, Any]) -> dict[str, Any]:
        body = copy.deepcopy(self._examples["comment"])
        base = f"{self.base_url}/repos/{repo.owner}/{repo.name}"
        body.update(id=c["id"], node_id=f"IC_{c['id']}", url=f"{base}/issues/comments/{c['id']}",
                    html_url=f"{base}/issues/{c['_issue']}#issuecomment-{c['id']}",
                    issue_url=f"{base}/issues/{c['_issue']}", body=c["body"],
                    user=self.user(c["author"]), created_at=c["created_at"],
                    updated_at=c["updated_at"],
                    author_association=self.association(repo, c["author"]))
        body.pop("pin", None)
        return body

    def pull_body(self, repo: RepoState, pr: dict[str, Any]) -> dict[str, Any]:
        full = f"{repo.owner}/{repo.name}"
        issue = repo.issues[pr["number"]]
        body = copy.deepcopy(self._examples["pull"])
        base = f"{self.base_url}/repos/{full}"
        head_sha = pr["head_sha"] if issue["state"] != "open" else (
            self.branch_head(full, pr["head"]) or pr["head_sha"])
        repo_body = self.repo_body(repo)
        owner = self.user(repo.owner)
        body.update(
            url=f"{base}/pulls/{pr['number']}", id=issue["id"], node_id=f"PR_{issue['id']}",
            number=pr["number"], state=issue["state"], title=issue["title"],
            body=issue["body"], user=self.user(issue["author"]), labels=[], milestone=None,
            created_at=issue["created_at"], updated_at=issue["updated_at"],
            closed_at=issue.get("closed_at"), merged_at=pr.get("merged_at"),
            merge_commit_sha=pr.get("merge_sha"), assignee=None, assignees=[],
            requested_reviewers=[], requested_teams=[],
            head={"label": f"{repo.owner}:{pr['head']}", "ref": pr["head"], "sha": head_sha,
                  "user": owner, "repo": repo_body},
            base={"label": f"{repo.owner}:{pr['base']}", "ref": pr["base"],
                  "sha": self.branch_head(full, pr["base"]) or head_sha, "user": owner,
                  "repo": repo_body},
            author_association=self.association(repo, issue["author"]), auto_merge=None,
            draft=pr["draft"], merged=bool(pr.get("merged_at")), mergeable=True,
            mergeable_state="clean", merged_by=None,
            comments=len(self.comments_on(full, pr["number"])),
            review_comments=len([c for c in repo.review_comments if c["_pr"] == pr["number"]]),
        )
        n = pr["number"]
        links = {
            "html_url": f"{self.base_url}/{full}/pull/{n}", "diff_url": f"{base}/pulls/{n}.diff",
            "patch_url": f"{base}/pulls/{n}.patch", "issue_url": f"{base}/issues/{n}",
            "commits_url": f"{base}/pulls/{n}/commits",
            "review_comments_url": f"{base}/pulls/{n}/comments",
            "review_comment_url": f"{base}/pulls/comments{{/number}}",
            "comments_url": f"{base}/issues/{n}/comments",
            "statuses_url": f"{base}/statuses/{head_sha}",
        }
        body.update(links)
        body["_links"] = {
            "self": {"href": body["url"]}, "html": {"href": links["html_url"]},
            "issue": {"href": links["issue_url"]}, "comments": {"href": links["comments_url"]},
            "review_comments": {"href": links["review_comments_url"]},
            "review_comment": {"href": links["review_comment_url"]},
            "commits": {"href": links["commits_url"]},
            "statuses": {"href": links["statuses_url"]}}
        return body

    def pull_simple(self, repo: RepoState, pr: dict[str, Any]) -> dict[str, Any]:
        body = self.pull_body(repo, pr)
        for key in ("merged", "mergeable", "rebaseable", "mergeable_state", "merged_by",
                    "comments", "review_comments", "maintainer_can_modify", "commits",
                    "additions", "deletions", "changed_files"):
            body.pop(key, None)
        return body

    def repo_body(self, repo: RepoState) -> dict[str, Any]:
        body = copy.deepcopy(self._examples["repo"])
        full = f"{repo.owner}/{repo.name}"
        for key in list(body):
            if key in ("organization", "parent", "source", "template_repository",
                       "code_of_conduct", "security_and_analysis"):
                body.pop(key)
        body.update(
            name=repo.name, full_name=full, owner=self.user(repo.owner),
            url=f"{self.base_url}/repos/{full}", html_url=f"{self.base_url}/{full}",
            clone_url=f"{self.base_url}/{full}.git", git_url=f"{self.base_url}/{full}.git",
            default_branch=repo.default_branch, private=False, language="Python",
        )
        return body

    # ----- request handling

    def handle(self, method: str, path: str, query: dict[str, list[str]], body: bytes,
               headers: dict[str, str]) -> tuple[int, dict[str, str], Any]:
        """Route one API request; returns (status, headers, JSON body or None)."""
        from tests.github.fake_routes import ROUTES

        login = self._authenticate(headers)
        if login is None:
            return 401, {}, {"message": "Bad credentials",
                             "documentation_url": "https://docs.github.com/rest"}
        if method != "GET" and self._read_only(headers.get("authorization", "")):
            return 403, {}, {"message": "Resource not accessible by personal access token",
                             "documentation_url": "https://docs.github.com/rest"}
        for route_method, pattern, handler in ROUTES:
            if route_method != method:
                continue
            match = pattern.match(path)
            if match:
                payload = json.loads(body) if body else None
                with self.lock:
                    return handler(self, login, query, payload, *match.groups())
        return 404, {}, {"message": "Not Found",
                         "documentation_url": "https://docs.github.com/rest"}

    def _read_only(self, value: str) -> bool:
        """Whether an ``Authorization`` value (``token X`` or git's ``Basic``) carries a
        read-only token."""
        scheme, _, token = value.partition(" ")
        if scheme.lower() == "basic":
            token = base64.b64decode(token).decode().partition(":")[2]
        return token in self.read_only_tokens

    def _authenticate(self, headers: dict[str, str]) -> str | None:
        value = headers.get("authorization", "")
        self.auth_headers.append(value)
        scheme, _, token = value.partition(" ")
        if scheme.lower() == "bearer" and token.count(".") == 2:
            return "app-jwt"
        if scheme.lower() == "token":
            return self.tokens.get(token)
        return None


_GIT_PATH = re.compile(r"^/([^/]+)/([^/]+)\.git(/.*)$")


class _Handler(BaseHTTPRequestHandler):
    owner: FakeGitHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        return

    def _read(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        if length:
            return self.rfile.read(length)
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            chunks = []
            while True:
                size = int(self.rfile.readline().strip() or b"0", 16)
                if size == 0:
                    self.rfile.readline()
                    break
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
            return b"".join(chunks)
        return b""

    def _dispatch(self) -> None:
        fake = self.owner
        parts = urlsplit(self.path)
        body = self._read()
        if _GIT_PATH.match(parts.path):
            fault = self._fault(self.command, parts.path)
            if fault is not None:  # the forge's git failing (a 502 on a fetch)
                self.send_response(fault.status)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self._git(parts.path, parts.query, body)
            return
        with fake.lock:  # counted while waiting, so one client's next request (sent
            fake.in_flight += 1  # once this one is answered) never overlaps it
            fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
        try:
            if fake.latency_s:
                time.sleep(fake.latency_s)
        finally:
            with fake.lock:
                fake.in_flight -= 1
        self._dispatch_api(parts, body)

    def _dispatch_api(self, parts: SplitResult, body: bytes) -> None:
        fake = self.owner
        query = parse_qs(parts.query)
        headers = {k.lower(): v for k, v in self.headers.items()}
        method = self.command
        if fake.validate:
            warning = validator.check_request(method, parts.path, query, body,
                                              headers.get("content-type"))
            if warning:
                fake.request_warnings.append(f"{method} {parts.path}: {warning}")
        fault = self._fault(method, parts.path)
        if fault is not None and fault.drop and not fault.after_effect:
            self.close_connection = True
            self.connection.shutdown(2)
            return
        if fault is not None and not fault.after_effect:
            self._send_api(method, parts.path, query, fault.status, fault.headers, fault.body)
            return
        status, extra, payload = fake.handle(method, parts.path, query, body, headers)
        if fault is not None:
            if fault.drop:
                self.close_connection = True
                self.connection.shutdown(2)
                return
            status, extra, payload = fault.status, fault.headers, fault.body
        if fake.mutate is not None and status < 300:
            payload = fake.mutate(method, parts.path, payload)
        self._send_api(method, parts.path, query, status, extra, payload,
                       headers.get("if-none-match"))

    def _fault(self, method: str, path: str) -> Fault | None:
        with self.owner.lock:
            for fault in self.owner.faults:
                if fault.times > 0 and fault.method == method and fault.pattern.search(path):
                    fault.times -= 1
                    return fault
        return None

    def _send_api(self, method: str, path: str, query: dict[str, list[str]], status: int,
                  extra: dict[str, str], payload: Any, if_none_match: str | None = None) -> None:
        fake = self.owner
        data = b"" if payload is None else json.dumps(payload).replace(
            API, fake.base_url).encode()
        etag = None
        if method == "GET" and status == 200:
            etag = '"' + hashlib.sha1(data).hexdigest() + '"'
            if if_none_match == etag:
                status, data = 304, b""
        with fake.lock:
            if status != 304 and path != "/rate_limit" and status not in (401,):
                fake.remaining = max(0, fake.remaining - 1)
            fake.log.append((method, path, status))
        if fake.validate:
            problem = validator.check_response(method, path, query, status, data,
                                               "application/json" if data else None)
            if problem:
                fake.violations.append(f"{method} {path} -> {status}: {problem}")
        self.send_response(status)
        headers = {
            "X-RateLimit-Limit": str(fake.RATE_LIMIT),
            "X-RateLimit-Remaining": str(fake.remaining),
            "X-RateLimit-Reset": str(fake.reset_at),
            "X-RateLimit-Used": str(fake.RATE_LIMIT - fake.remaining),
            "X-RateLimit-Resource": "core",
            **extra,
        }
        if data:
            headers["Content-Type"] = "application/json; charset=utf-8"
        if etag:
            headers["ETag"] = etag
        for key, value in headers.items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _git(self, path: str, query: str, body: bytes) -> None:
        """Smart HTTP through ``git http-backend`` (CGI), token required."""
        fake = self.owner
        match = _GIT_PATH.match(path)
        assert match is not None
        full = f"{match.group(1)}/{match.group(2)}"
        auth = self.headers.get("Authorization", "")
        fake.auth_headers.append(auth)
        login = None
        if auth.startswith("Basic "):
            user, _, token = base64.b64decode(auth[6:]).decode().partition(":")
            login = fake.tokens.get(token) if user == "x-access-token" else None
        if full not in fake.repos or login is None:
            self.send_response(401 if login is None else 404)
            self.send_header("WWW-Authenticate", 'Basic realm="fake"')
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        wants_push = "git-receive-pack" in path or "service=git-receive-pack" in query
        if wants_push and (fake._read_only(auth) or fake.repos[full].permissions.get(
                login) not in ("admin", "maintain", "write")):
            said = f"remote: Permission to {full}.git denied to {login}.\n".encode()
            self.send_response(403)
            self.send_header("Content-Length", str(len(said)))
            self.end_headers()
            self.wfile.write(said)
            return
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "GIT_PROJECT_ROOT": str(fake.root), "GIT_HTTP_EXPORT_ALL": "1",
            "REQUEST_METHOD": self.command, "PATH_INFO": path, "QUERY_STRING": query,
            "CONTENT_TYPE": self.headers.get("Content-Type", ""),
            "CONTENT_LENGTH": str(len(body)), "REMOTE_USER": login, "REMOTE_ADDR": "127.0.0.1",
            "GIT_HTTP_MAX_REQUEST_BUFFER": "100M",
            "HTTP_GIT_PROTOCOL": self.headers.get("Git-Protocol", ""),
            "GIT_CONFIG_NOSYSTEM": "1", "GIT_CONFIG_GLOBAL": "/dev/null",
        }
        if self.headers.get("Content-Encoding") == "gzip":
            env["HTTP_CONTENT_ENCODING"] = "gzip"
        pushing = path.endswith("/git-receive-pack")
        before = fake.open_pr_heads(full) if pushing else {}
        out = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True,
                             check=False).stdout
        if pushing:  # GitHub moves a PR's updated_at when its head moves (synchronize)
            after = fake.open_pr_heads(full)
            with fake.lock:
                for number in [n for n, sha in after.items() if before.get(n) != sha]:
                    fake.repos[full].issues[number]["updated_at"] = _stamp()
        head, _, payload = out.partition(b"\r\n\r\n")
        status = 200
        lines = head.decode("latin-1").split("\r\n")
        headers = []
        for line in lines:
            key, _, value = line.partition(":")
            if key.lower() == "status":
                status = int(value.strip().split()[0])
            elif key:
                headers.append((key, value.strip()))
        self.send_response(status)
        for key, value in headers:
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _dispatch
