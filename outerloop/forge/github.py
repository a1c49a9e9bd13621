"""The GitHub forge: every ``Forge`` verb through PyGithub, git over HTTPS.

Records are built from GitHub's JSON as received (``_rawData``), never through
PyGithub's lazy attributes, which would silently fetch a missing field with one
request per object. The client is built ``lazy=True`` so handles on a repository, an
issue or a pull request cost nothing until a request is really needed.

Safety:
- **Writes are never blindly retried** (``githubhttp.ForgeRetry``). A comment is made
  safe by its marker: before posting, and again after a failure that may have
  happened on GitHub's side (5xx, timeout), the issue's comments are searched for a
  kernel post carrying the same marker, which is returned instead of posting twice.
  A pull request is made safe by its head: after an ambiguous failure, the open PR
  for that head is looked up. An issue by its title and body.
- **Budget**: the first verb of a forge (one per tick) reads ``/rate_limit`` (free);
  below ``min_rate_remaining`` every verb raises ``ForgeUnavailable`` saying so.
- **Identity and standing**: ``author_association`` comes from GitHub as is; a
  ``labeled`` timeline event's actor is checked for write access with the collaborator
  permission endpoint (admin or write), answered once per login per tick.
- **Git**: fetch, push and ``commit_files`` run git over HTTPS with the token in an
  environment-provided header (``githubgit``).

Authentication (``load_auth``): the token file holds either a personal access token,
or a JSON object ``{"app_id": ..., "installation_id": ..., "private_key": "..."}`` for
a GitHub App, whose installation tokens are minted and refreshed five minutes before
they expire. Every token the forge holds is appended to ``secrets`` so the executor
redacts it from the ledger.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from github import Auth, Github
from github import Requester as _requester_module
from github.InstallationAuthorization import InstallationAuthorization
from github.Repository import Repository

from outerloop.clock import stamp_seconds
from outerloop.errors import ConfigError, ForgeError, ForgeUnavailable, NotFound
from outerloop.forge import githubhttp as http
from outerloop.forge.base import (
    Association,
    Comment,
    Issue,
    LabelEvent,
    PullRequest,
    Review,
    ReviewComment,
)
from outerloop.forge.githubgit import GitRemote
from outerloop.forge.markers import Marker, kernel_logins, parse_markers

TOKEN_REFRESH_MARGIN_S = 300
WRITE_PERMISSIONS = frozenset({"admin", "write"})
PER_PAGE = 100
TIMEOUT_S = 30
SECONDS_BETWEEN_WRITES = 1.0


class RefreshingInstallationAuth(Auth.AppInstallationAuth):
    """An App installation token renewed ``TOKEN_REFRESH_MARGIN_S`` before it expires
    (PyGithub's own margin is 20 s, too short for a git push), each new token
    reported through ``on_token`` so it can be redacted."""

    def __init__(self, app_auth: Auth.AppAuth, installation_id: int,
                 on_token: Callable[[str], None]) -> None:
        super().__init__(app_auth, installation_id)
        self._on_token = on_token
        self._current: InstallationAuthorization | None = None
        self._minting = threading.Lock()

    @property
    def token(self) -> str:
        with self._minting:  # the forge's threads share it: one mint, not one each
            now = datetime.now(UTC).timestamp()
            current = self._current
            if current is None or \
                    current.expires_at.timestamp() - TOKEN_REFRESH_MARGIN_S < now:
                current = self._get_installation_authorization()
                self._current = current
                self._on_token(current.token)
            return current.token


def load_auth(secret: str, on_token: Callable[[str], None]) -> Auth.Auth:
    """A PyGithub ``Auth`` from the token file's text (see the module docstring)."""
    text = secret.strip()
    if not text:
        raise ConfigError("the forge token file is empty; fix: write a token into it")
    if not text.startswith("{"):
        on_token(text)
        return Auth.Token(text)
    try:
        data = json.loads(text)
        app = Auth.AppAuth(int(data["app_id"]), str(data["private_key"]))
        installation = int(data["installation_id"])
    except (ValueError, KeyError, TypeError):
        raise ConfigError("the forge token file holds JSON that is not a GitHub App "
                          "credential; fix: {\"app_id\": N, \"installation_id\": N, "
                          "\"private_key\": \"-----BEGIN...\"} or a plain token") from None
    on_token(str(data["private_key"]))
    return RefreshingInstallationAuth(app, installation, on_token)


def _when(value: Any) -> datetime:
    if not value:
        return datetime.fromtimestamp(0, UTC)
    return datetime.fromisoformat(str(value).replace("Z", "+00:00"))


def _login(raw: dict[str, Any] | None) -> str:
    return str((raw or {}).get("login") or "ghost")


def _association(raw: dict[str, Any]) -> Association:
    try:
        return Association(str(raw.get("author_association", "NONE")))
    except ValueError:
        return Association.NONE


def _raw(obj: Any) -> dict[str, Any]:
    data: dict[str, Any] = obj._rawData
    return data


class GitHubForge:
    """The ``Forge`` protocol over the GitHub REST API; see the module docstring.

    Safe to share between threads (the tick observes its targets at once): PyGithub's
    one connection object keeps each call's verb and URL in a per-thread slot here (its
    own keeps them on the object, where two threads would swap them), the ``requests``
    session beneath pools one HTTP connection per thread, and the counters, the cache
    and the budget's first read are locked."""

    def __init__(
        self, api_url: str, login: str, auth: Auth.Auth, *,
        former_logins: Iterable[str] = (), min_rate_remaining: int = 200,
        cache_dir: Path | None = None, retry: http.ForgeRetry | None = None,
        seconds_between_writes: float | None = SECONDS_BETWEEN_WRITES,
        secrets: list[str] | None = None,
    ) -> None:
        self.login = login
        self.logins = kernel_logins(login, former_logins)
        self.api_url = api_url.rstrip("/")
        self.auth = auth
        self.secrets = secrets if secrets is not None else []
        self.budget = http.RateBudget(floor=min_rate_remaining)
        self.counters = http.Counters()
        self.cache = http.ResponseCache(cache_dir)
        self.stamps = http.Stamps()
        self.gh = Github(
            base_url=self.api_url, auth=auth, timeout=TIMEOUT_S, per_page=PER_PAGE,
            retry=retry or http.ForgeRetry(), lazy=True,
            seconds_between_requests=None, seconds_between_writes=seconds_between_writes,
        )
        self._install_adapter()
        self._repos: dict[str, Repository] = {}
        self._repo_raw: dict[str, dict[str, Any]] = {}
        self._can_write: dict[tuple[str, str], bool] = {}
        self._budget_read = False
        self._budget_lock = threading.Lock()

    def _install_adapter(self) -> None:
        """Route PyGithub's HTTP through ``ConditionalAdapter`` (its connection class
        is per requester; a changed PyGithub internals is refused loudly)."""
        requester = self.gh.requester
        attr = "_Requester__connectionClass"
        if not hasattr(requester, attr):
            raise ForgeError("this PyGithub version hides its connection class; fix: "
                             "install PyGithub 2.x as pyproject.toml pins")
        base = (_requester_module.HTTPSRequestsConnectionClass
                if self.api_url.startswith("https:")
                else _requester_module.HTTPRequestsConnectionClass)
        forge = self

        class Connection(base):  # type: ignore[valid-type,misc]
            def __init__(self, *args: Any, **kwargs: Any) -> None:
                super().__init__(*args, **kwargs)
                self.adapter = http.ConditionalAdapter(
                    forge.cache, forge.budget, forge.counters, forge.stamps,
                    max_retries=self.retry,
                    pool_connections=self.pool_size, pool_maxsize=self.pool_size)
                self.session.mount("https://", self.adapter)
                self.session.mount("http://", self.adapter)
                self.call = threading.local()

            def request(self, verb: str, url: str, input: Any, headers: dict[str, str],
                        stream: bool = False) -> None:
                self.call.args = (verb, url, input, headers)

            def getresponse(self) -> Any:
                verb, url, data, headers = self.call.args
                send = getattr(self.session, verb.lower())
                response = send(f"{self.protocol}://{self.host}:{self.port}{url}",
                                headers=headers, data=data, timeout=self.timeout,
                                verify=self.verify, allow_redirects=False)
                return _requester_module.RequestsResponse(response)

        setattr(requester, attr, Connection)

    # ----- plumbing

    def _check(self) -> None:
        """Stop here when the tick's budget is spent (reads ``/rate_limit`` once)."""
        with self._budget_lock:
            if not self._budget_read:
                self._budget_read = True
                with http.translate("reading the rate limit"):
                    overview = self.gh.get_rate_limit()
                if self.budget.remaining is None:
                    core = overview.resources.core
                    self.budget.remaining = core.remaining
                    self.budget.reset_at = core.reset.timestamp()
        self.budget.check()

    def _repo(self, repo: str) -> Repository:
        if repo not in self._repos:
            self._repos[repo] = self.gh.get_repo(repo)
        return self._repos[repo]

    def _repo_data(self, repo: str) -> dict[str, Any]:
        if repo not in self._repo_raw:
            self._check()
            with http.translate(f"reading {repo}"):
                _headers, data = self.gh.requester.requestJsonAndCheck("GET", f"/repos/{repo}")
            self._repo_raw[repo] = data
        return self._repo_raw[repo]

    def _remote(self, repo: str) -> GitRemote:
        url = str(self._repo_data(repo).get("clone_url") or "")
        return GitRemote(url, self._token, self.login)

    def _token(self) -> str:
        token = str(self.auth.token)
        if token not in self.secrets:
            self.secrets.append(token)
        return token

    def _pages(self, what: str, url: str, params: dict[str, Any] | None = None,
               headers: dict[str, str] | None = None) -> list[dict[str, Any]]:
        """Every item of a paginated list, following ``Link: rel="next"``."""
        self._check()
        items: list[dict[str, Any]] = []
        query: dict[str, Any] | None = {"per_page": PER_PAGE, **(params or {})}
        next_url: str | None = url
        with http.translate(what):
            while next_url:
                got_headers, data = self.gh.requester.requestJsonAndCheck(
                    "GET", next_url, parameters=query, headers=headers)
                items.extend(data if isinstance(data, list) else [])
                next_url = _next_link(str(got_headers.get("link") or ""))
                query = None
        return items

    # ----- repositories and git

    def default_branch(self, repo: str) -> str:
        return str(self._repo_data(repo)["default_branch"])

    def branch_head(self, repo: str, branch: str) -> str | None:
        self._check()
        try:
            with http.translate(f"reading branch {branch} of {repo}"):
                _, data = self.gh.requester.requestJsonAndCheck(
                    "GET", f"/repos/{repo}/git/ref/heads/{branch}")
        except NotFound:
            return None
        obj = data.get("object") or {}
        if data.get("ref") != f"refs/heads/{branch}" or obj.get("type") != "commit":
            return None
        return str(obj["sha"])

    def read_file(self, repo: str, path: str, ref: str) -> bytes | None:
        self._check()
        try:
            with http.translate(f"reading {path} at {ref[:12]} in {repo}"):
                content = self._repo(repo).get_contents(path, ref=ref)
        except NotFound:
            return None
        if isinstance(content, list) or _raw(content).get("type") != "file":
            return None
        return bytes(content.decoded_content)

    def fetch(self, repo: str, dest: Path, ref: str) -> str:
        return self._remote(repo).fetch(dest, ref)

    def push(self, repo: str, source: Path, sha: str, branch: str) -> None:
        self._remote(repo).push(source, sha, branch)

    def commit_files(self, repo: str, branch: str, files: dict[str, bytes], message: str,
                     expected_head: str | None) -> str:
        return self._remote(repo).commit_files(branch, files, message, expected_head)

    # ----- issues and comments

    def _issue(self, raw: dict[str, Any]) -> Issue:
        return Issue(
            number=int(raw["number"]), title=str(raw.get("title") or ""),
            body=str(raw.get("body") or ""), author=_login(raw.get("user")),
            author_association=_association(raw), state=str(raw.get("state", "open")),
            labels=tuple(sorted(str(x.get("name")) for x in raw.get("labels") or [])),
            created_at=_when(raw.get("created_at")), updated_at=_when(raw.get("updated_at")),
            is_pull_request="pull_request" in raw,
        )

    def list_issues(self, repo: str, since: datetime | None = None) -> list[Issue]:
        """Open issues, oldest first, in one conditional request per 100 (pull
        requests come in the same list and are dropped)."""
        params: dict[str, Any] = {"state": "open", "sort": "created", "direction": "asc"}
        if since is not None:
            params["since"] = stamp_seconds(since)
        raws = self._pages(f"listing issues of {repo}", f"/repos/{repo}/issues", params)
        for raw in raws:  # open PRs too: what has not changed is not asked again
            if raw.get("updated_at"):
                self.stamps.note(repo, int(raw["number"]), str(raw["updated_at"]))
        return [self._issue(r) for r in raws if "pull_request" not in r]

    def get_issue(self, repo: str, number: int) -> Issue:
        self._check()
        with http.translate(f"reading {repo}#{number}"):
            _, data = self.gh.requester.requestJsonAndCheck(
                "GET", f"/repos/{repo}/issues/{number}")
        return self._issue(data)

    def create_issue(self, repo: str, title: str, body: str) -> Issue:
        self._check()
        try:
            with http.translate(f"opening an issue on {repo}"):
                _, data = self.gh.requester.requestJsonAndCheck(
                    "POST", f"/repos/{repo}/issues", input={"title": title, "body": body})
            return self._issue(data)
        except ForgeUnavailable as exc:
            if not http.is_ambiguous(exc):
                raise
            for issue in self.list_issues(repo):
                if issue.author.casefold() in self.logins and issue.title == title \
                        and issue.body == body:
                    return issue
            raise

    def close_issue(self, repo: str, number: int) -> None:
        self._check()
        with http.translate(f"closing {repo}#{number}"):
            self.gh.requester.requestJsonAndCheck(
                "PATCH", f"/repos/{repo}/issues/{number}", input={"state": "closed"})

    def _comment(self, raw: dict[str, Any], number: int) -> Comment:
        return Comment(
            id=int(raw["id"]), issue_number=number, author=_login(raw.get("user")),
            author_association=_association(raw), body=str(raw.get("body") or ""),
            created_at=_when(raw.get("created_at")), updated_at=_when(raw.get("updated_at")),
        )

    def list_comments(self, repo: str, number: int,
                      since: datetime | None = None) -> list[Comment]:
        """Comments updated at or after ``since`` at GitHub's one-second granularity
        (``since`` is sent truncated to the second): a comment made in the same second
        as the last observed activity is returned again rather than lost; callers
        de-duplicate by id."""
        params = {} if since is None else {"since": stamp_seconds(since)}
        raws = self._pages(f"listing comments of {repo}#{number}",
                           f"/repos/{repo}/issues/{number}/comments", params)
        return [self._comment(r, number) for r in raws]

    def _posted(self, repo: str, number: int, body: str) -> Comment | None:
        """A kernel comment already carrying ``body``'s marker (or, without a
        marker, the identical body): the post happened."""
        markers = parse_markers(body)
        for comment in self.list_comments(repo, number):
            if comment.author.strip().casefold() not in self.logins:
                continue
            if markers and _same_marker(markers[-1], comment.body):
                return comment
            if not markers and comment.body == body:
                return comment
        return None

    def post_comment(self, repo: str, number: int, body: str) -> Comment:
        """Post once: a kernel comment with the same marker is returned instead."""
        if parse_markers(body):
            existing = self._posted(repo, number, body)
            if existing is not None:
                return existing
        self._check()
        try:
            with http.translate(f"commenting on {repo}#{number}"):
                _, data = self.gh.requester.requestJsonAndCheck(
                    "POST", f"/repos/{repo}/issues/{number}/comments", input={"body": body})
            return self._comment(data, number)
        except ForgeUnavailable as exc:
            if not http.is_ambiguous(exc):
                raise
            existing = self._posted(repo, number, body)
            if existing is not None:
                return existing
            raise

    def can_write(self, repo: str, login: str) -> bool:
        """Whether ``login`` has write access to ``repo`` (admin or write), once per
        login per tick; unknown users and failures to find them have none."""
        key = (repo, login.casefold())
        if key not in self._can_write:
            self._check()
            try:
                with http.translate(f"reading {login}'s permission on {repo}"):
                    _, data = self.gh.requester.requestJsonAndCheck(
                        "GET", f"/repos/{repo}/collaborators/{login}/permission")
                self._can_write[key] = str(data.get("permission")) in WRITE_PERMISSIONS
            except NotFound:
                self._can_write[key] = False
        return self._can_write[key]

    def label_events(self, repo: str, number: int) -> list[LabelEvent]:
        """``labeled`` events from the issue's timeline, each with whether its actor
        can write (a ghost or bot without access cannot)."""
        raws = self._pages(f"reading the timeline of {repo}#{number}",
                           f"/repos/{repo}/issues/{number}/timeline")
        events = []
        for raw in raws:
            if raw.get("event") != "labeled" or not raw.get("label"):
                continue
            actor = raw.get("actor")
            login = _login(actor)
            events.append(LabelEvent(
                label=str(raw["label"].get("name")), actor=login,
                actor_can_write=bool(actor) and self.can_write(repo, login),
                created_at=_when(raw.get("created_at"))))
        return events

    # ----- pull requests

    def _pr(self, raw: dict[str, Any]) -> PullRequest:
        head, base = raw.get("head") or {}, raw.get("base") or {}
        return PullRequest(
            number=int(raw["number"]), title=str(raw.get("title") or ""),
            body=str(raw.get("body") or ""), author=_login(raw.get("user")),
            head=str(head.get("ref")), head_sha=str(head.get("sha")), base=str(base.get("ref")),
            state=str(raw.get("state", "open")),
            merged=bool(raw.get("merged")) or raw.get("merged_at") is not None,
            draft=bool(raw.get("draft")),
            created_at=_when(raw.get("created_at")), updated_at=_when(raw.get("updated_at")),
        )

    def open_pr(self, repo: str, head: str, base: str, title: str, body: str,
                draft: bool = False) -> PullRequest:
        """Open a PR; after an ambiguous failure the open PR for ``head`` is looked up
        and returned if GitHub made it after all."""
        self._check()
        try:
            with http.translate(f"opening a pull request from {head} on {repo}"):
                _, data = self.gh.requester.requestJsonAndCheck(
                    "POST", f"/repos/{repo}/pulls",
                    input={"base": base, "head": head, "title": title, "body": body,
                           "draft": draft})
            return self._pr(data)
        except ForgeUnavailable as exc:
            if not http.is_ambiguous(exc):
                raise
            existing = self.find_open_pr(repo, head)
            if existing is not None:
                return existing
            raise

    def edit_comment(self, repo: str, number: int, comment_id: int, body: str) -> Comment:
        """PATCH the comment's body: the same body twice is the same comment (a retry
        after an ambiguous failure does no harm)."""
        self._check()
        with http.translate(f"editing comment {comment_id} on {repo}#{number}"):
            _, data = self.gh.requester.requestJsonAndCheck(
                "PATCH", f"/repos/{repo}/issues/comments/{comment_id}", input={"body": body})
        return self._comment(data, number)

    def update_pr(self, repo: str, number: int, title: str | None = None,
                  body: str | None = None) -> PullRequest:
        self._check()
        fields = {k: v for k, v in (("title", title), ("body", body)) if v is not None}
        with http.translate(f"updating {repo}#{number}"):
            _, data = self.gh.requester.requestJsonAndCheck(
                "PATCH", f"/repos/{repo}/pulls/{number}", input=fields)
        return self._pr(data)

    def close_pr(self, repo: str, number: int) -> None:
        self._check()
        with http.translate(f"closing {repo}#{number}"):
            self.gh.requester.requestJsonAndCheck(
                "PATCH", f"/repos/{repo}/pulls/{number}", input={"state": "closed"})

    def get_pr(self, repo: str, number: int) -> PullRequest:
        self._check()
        with http.translate(f"reading {repo}#{number}"):
            _, data = self.gh.requester.requestJsonAndCheck(
                "GET", f"/repos/{repo}/pulls/{number}")
        return self._pr(data)

    def find_open_pr(self, repo: str, head: str) -> PullRequest | None:
        owner = repo.split("/")[0]
        raws = self._pages(f"finding the pull request for {head} on {repo}",
                           f"/repos/{repo}/pulls", {"state": "open", "head": f"{owner}:{head}"})
        found = [self._pr(r) for r in raws if (r.get("head") or {}).get("ref") == head]
        return min(found, key=lambda p: p.number) if found else None

    def find_prs(self, repo: str, head: str) -> list[PullRequest]:
        owner = repo.split("/")[0]
        raws = self._pages(f"finding the pull requests from {head} on {repo}",
                           f"/repos/{repo}/pulls", {"state": "all", "head": f"{owner}:{head}"})
        found = [self._pr(r) for r in raws if (r.get("head") or {}).get("ref") == head]
        return sorted(found, key=lambda p: p.number)

    def list_reviews(self, repo: str, number: int) -> list[Review]:
        raws = self._pages(f"listing reviews of {repo}#{number}",
                           f"/repos/{repo}/pulls/{number}/reviews")
        return [
            Review(id=int(r["id"]), pr_number=number, author=_login(r.get("user")),
                   author_association=_association(r), state=str(r.get("state")),
                   body=str(r.get("body") or ""), submitted_at=_when(r.get("submitted_at")))
            for r in raws if r.get("submitted_at")
        ]

    def list_review_comments(self, repo: str, number: int,
                             since: datetime | None = None) -> list[ReviewComment]:
        params = {} if since is None else {"since": stamp_seconds(since)}
        raws = self._pages(f"listing review comments of {repo}#{number}",
                           f"/repos/{repo}/pulls/{number}/comments", params)
        return [
            ReviewComment(id=int(r["id"]), pr_number=number, author=_login(r.get("user")),
                          author_association=_association(r), path=str(r.get("path")),
                          line=r.get("line"), body=str(r.get("body") or ""),
                          created_at=_when(r.get("created_at")))
            for r in raws
        ]


def _same_marker(marker: Marker, body: str) -> bool:
    return marker in parse_markers(body)


def _next_link(link: str) -> str | None:
    for part in link.split(","):
        url, _, rel = part.partition(";")
        if 'rel="next"' in rel:
            return url.strip().strip("<>")
    return None

