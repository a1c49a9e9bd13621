"""Git over HTTPS for the GitHub forge, with the token kept out of sight.

The token reaches git only through the environment of the one git process that needs
it: ``GIT_CONFIG_COUNT``/``GIT_CONFIG_KEY_n``/``GIT_CONFIG_VALUE_n`` set
``http.<origin>/.extraHeader`` to ``Authorization: Basic <x-access-token:token>``,
scoped to the forge's own origin so a redirect elsewhere never carries it. It is never
in argv, in a remote URL or in any ``.git/config``: clones record the plain clone URL.
Every git process is hardened as in ``localgit`` (no hooks, no credential helper, no
global config); only the forge's own transport (https, or http for a loopback test
server) is allowed besides local files.

Semantics match the local forge: ``push`` is fast-forward only (git refuses to move a
branch to a commit that does not contain its head); ``commit_files`` builds the commit
in a scratch repository from the branch as fetched and pushes it with
``--force-with-lease=<branch>:<expected head>``, an atomic compare-and-swap on the
server, so a head that moved is refused, never clobbered. git's failures keep their
own words; a timeout or an unreachable server is ``ForgeUnavailable``.
"""

from __future__ import annotations

import base64
import contextlib
import tempfile
from collections.abc import Callable
from pathlib import Path
from urllib.parse import urlsplit

from outerloop.errors import BranchMoved, ForgeError, ForgeForbidden, ForgeUnavailable, NotFound
from outerloop.forge import localgit as g

_UNREACHABLE = ("Could not resolve host", "Failed to connect", "Connection refused",
                "Connection timed out", "The requested URL returned error: 5",
                "Empty reply from server", "Operation timed out")

_FORBIDDEN = ("The requested URL returned error: 403", "The requested URL returned error: 401",
              "Permission to", "Authentication failed", "not accessible by integration")
"""git's words for a push the server refused for rights."""
_MOVED = ("non-fast-forward", "fetch first", "[rejected]")
"""git's words for a push refused because the branch holds commits the pushed one lacks."""


class GitRemote:
    """One repository's clone URL plus a way to get the current token."""

    def __init__(self, clone_url: str, token: Callable[[], str], login: str) -> None:
        parts = urlsplit(clone_url)
        if parts.scheme not in ("https", "http") or not parts.netloc or "@" in parts.netloc:
            raise ForgeError(f"clone URL {clone_url!r} is not a plain http(s) URL; fix: "
                             f"check [forge] api_url")
        if parts.scheme == "http" and parts.hostname not in ("127.0.0.1", "localhost", "::1"):
            raise ForgeError(f"refusing to send a token over plain http to {parts.hostname}; "
                             f"fix: use https")
        self.url = clone_url
        self.origin = f"{parts.scheme}://{parts.netloc}/"
        self.scheme = parts.scheme
        self._token = token
        self.login = login

    def env(self) -> dict[str, str]:
        """Environment for one git process: the auth header and the allowed transport."""
        basic = base64.b64encode(f"x-access-token:{self._token()}".encode()).decode()
        pairs = [
            (f"http.{self.origin}.extraHeader", f"Authorization: Basic {basic}"),
            (f"protocol.{self.scheme}.allow", "always"),
        ]
        env = {"GIT_CONFIG_COUNT": str(len(pairs))}
        for i, (key, value) in enumerate(pairs):
            env[f"GIT_CONFIG_KEY_{i}"] = key
            env[f"GIT_CONFIG_VALUE_{i}"] = value
        return env

    def run(self, args: list[str], *, cwd: Path | None = None,
            git_dir: Path | None = None) -> str:
        """git ``args`` talking to this remote; unreachable becomes ``ForgeUnavailable``."""
        try:
            return g.git_text(args, cwd=cwd, git_dir=git_dir, env=self.env())
        except g.GitFailed as exc:
            if any(sign in exc.stderr for sign in _UNREACHABLE):
                raise ForgeUnavailable(f"git could not reach {self.origin}: "
                                       f"{exc.stderr[:300]}; the tick defers") from None
            raise

    def remote_head(self, branch: str) -> str | None:
        out = self.run(["ls-remote", "--", self.url, f"refs/heads/{branch}"])
        for line in out.splitlines():
            sha, _, ref = line.partition("\t")
            if ref == f"refs/heads/{branch}":
                return sha
        return None

    def fetch(self, dest: Path, ref: str) -> str:
        """Make ``dest`` a clone holding ``ref`` (a branch or a full sha); return the
        sha. A new clone is checked out detached at it; an existing clone gets objects
        and ``origin/*`` refs only. ``NotFound`` when ``ref`` names nothing."""
        dest = Path(dest)
        fresh = not (dest / ".git").exists()
        if fresh:
            if dest.exists() and any(dest.iterdir()):
                raise ForgeError(f"{dest} exists and is not a git clone; fix: remove it "
                                 f"or pick an empty directory")
            self.run(["clone", "--quiet", "--no-checkout", "--", self.url, str(dest)])
        else:
            self.run(["fetch", "--quiet", "--tags", "--", self.url,
                      "+refs/heads/*:refs/remotes/origin/*"], cwd=dest)
        sha = g.resolve(ref, cwd=dest) or g.resolve(f"refs/remotes/origin/{ref}", cwd=dest)
        if sha is None and g.SHA_RE.match(ref):
            with contextlib.suppress(g.GitFailed):
                self.run(["fetch", "--quiet", "--", self.url, ref], cwd=dest)
            sha = g.resolve(ref, cwd=dest)
        if sha is None:
            raise NotFound(f"{self.url} has no ref {ref}; fix: name an existing branch or sha")
        if fresh:
            g.git(["checkout", "--quiet", "--detach", sha], cwd=dest)
        return sha

    def push(self, source: Path, sha: str, branch: str) -> None:
        """Fast-forward ``branch`` to ``sha`` from ``source``; a no-op at the same head."""
        g.check_branch_name(branch)
        if not g.SHA_RE.match(sha) or g.resolve(sha, cwd=source) != sha:
            raise ForgeError(f"{source} has no commit {sha}; fix: push a full sha that "
                             f"exists in the source repository")
        try:
            self.run(["push", "--quiet", "--no-verify", "--", self.url,
                      f"{sha}:refs/heads/{branch}"], cwd=source)
        except g.GitFailed as exc:
            if any(sign in exc.stderr for sign in _FORBIDDEN):
                raise ForgeForbidden(f"GitHub refused the push of {sha[:12]} to {branch}: "
                                     f"{exc.stderr[:300]}; fix: give the token contents: "
                                     f"write on the repository") from None
            refused = BranchMoved if any(sign in exc.stderr for sign in _MOVED) else ForgeError
            raise refused(
                f"refusing to push {sha[:12]} to {branch}: {exc.stderr[:300]} (fast-forward "
                f"only; another commit is never overwritten); fix: fetch the branch and "
                f"build on it") from None

    def commit_files(self, branch: str, files: dict[str, bytes], message: str,
                     expected_head: str | None) -> str:
        """One commit on ``branch`` writing ``files`` over its tree; refused unless the
        branch is at ``expected_head`` (None: absent), checked on read and on push."""
        g.check_branch_name(branch)
        with tempfile.TemporaryDirectory(prefix="outerloop-commit-") as scratch:
            repo = Path(scratch) / "repo.git"
            g.git(["init", "--bare", "--quiet", str(repo)])
            current = None
            if expected_head is not None:
                try:
                    self.run(["fetch", "--quiet", "--depth=1", "--", self.url,
                              f"+refs/heads/{branch}:refs/remotes/origin/{branch}"],
                             git_dir=repo)
                    current = g.resolve(f"refs/remotes/origin/{branch}", git_dir=repo)
                except g.GitFailed:
                    current = None
            else:
                current = self.remote_head(branch)
            if current != expected_head:
                raise _moved(branch, current, expected_head)
            tree = g.write_tree(repo, current, files, Path(scratch) / "index")
            sha = g.commit_tree(repo, tree, [current] if current else [], message, self.login)
            lease = f"--force-with-lease=refs/heads/{branch}:{expected_head or ''}"
            try:
                self.run(["push", "--quiet", "--no-verify", lease, "--", self.url,
                          f"{sha}:refs/heads/{branch}"], git_dir=repo)
            except g.GitFailed as exc:
                if "stale info" in exc.stderr or "rejected" in exc.stderr:
                    raise _moved(branch, self.remote_head(branch), expected_head) from None
                raise
        return sha


def _moved(branch: str, current: str | None, expected: str | None) -> ForgeError:
    return ForgeError(
        f"{branch} is at {current or '(no branch)'}, expected {expected or '(no branch)'}: "
        f"the head moved; fix: re-read the branch and retry")
