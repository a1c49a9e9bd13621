"""The local forge: bare git repositories plus one SQLite file, shaped like GitHub.

Layout under ``root`` (``<home>/forge``): ``<owner>/<name>.git`` bare repositories and
``forge.sqlite`` (``localdb``). Repositories, users, issues, comments and labels live in
``localissues.LocalRecords``; this module adds the git verbs and pull requests.

The ``Forge`` protocol's verbs act as ``self.login`` (the kernel). Humans act through
the ``*_as`` methods (``open_issue_as``, ``comment_as``, ``label_as``, ``review_as``,
``merge_pr``, ``close_pr_as``...) with an explicit login, used by the ``outerloop forge``
CLI and by tests. Users carry one forge-wide role (owner, member, collaborator, none)
mapped to GitHub's ``author_association``; a login never registered is NONE and has no
write access.

Git safety: every git process is hardened (``localgit``); ``push`` is fast-forward only
and never overwrites a commit it does not contain; ``commit_files`` and ``merge_pr``
move branches with a compare-and-swap, so a head that moved underneath is refused, not
clobbered.
"""

from __future__ import annotations

import fnmatch
import shutil
import sqlite3
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import cast

from outerloop.clock import parse_stamp, stamp
from outerloop.errors import BranchMoved, ForgeError, ForgeForbidden, NotFound
from outerloop.forge import localgit as g
from outerloop.forge.base import PullRequest, Review, ReviewComment, closing_refs
from outerloop.forge.local_blobs import file_at, is_commit_sha
from outerloop.forge.localissues import ASSOCIATION, DEFAULT_HUMAN, LocalRecords, check_login

REVIEW_STATES = ("COMMENTED", "APPROVED", "CHANGES_REQUESTED")
REFUSE_FILE = "REFUSE"
"""Under the forge's root: the test hook's refusals (``LocalForge._refuse_if_told``)."""
_PR_SELECT = (
    "SELECT i.*, p.head, p.base, p.head_sha, p.merged, p.merge_sha, p.draft FROM issues i "
    "JOIN pulls p USING (repo, number) "
)


def _check_path(path: str) -> None:
    parts = path.split("/")
    if (
        not path or path.startswith("/") or "\\" in path or "\0" in path or "\n" in path
        or any(p in ("", ".", "..") or p.casefold() == ".git" for p in parts)
    ):
        raise ForgeError(f"file path {path!r} is not a clean repository-relative path; "
                         f"fix: use a/b/c.txt without '..', '.git' or a leading '/'")


class LocalForge(LocalRecords):
    """The ``Forge`` protocol over ``root``; see the module docstring."""

    # ----- repositories

    def list_repos(self) -> list[str]:
        """Every repository on this forge, sorted."""
        found = [
            f"{p.parent.name}/{p.name.removesuffix('.git')}"
            for p in self.root.glob("*/*.git") if (p / "HEAD").is_file()
        ]
        return sorted(found)

    def import_repo(
        self, path: Path, repo: str, default_branch: str | None = None,
        as_user: str = DEFAULT_HUMAN,
    ) -> str:
        """Create ``repo`` from the local directory ``path``; ``as_user`` becomes an
        owner. A git repository is cloned (all branches; its current branch is the
        default unless ``default_branch`` is given). A plain directory is committed as
        one commit (honouring its ``.gitignore``) without touching it. Built beside the
        target and renamed into place, so a crash never leaves a half repository.
        Returns the default branch's head sha."""
        check_login(as_user)
        if default_branch is not None:
            g.check_branch_name(default_branch)
        bare = self.repo_dir(repo)
        if bare.exists():
            raise ForgeError(f"repository {repo} already exists at {bare}; fix: pick "
                             f"another name or remove it")
        source = Path(path).expanduser().resolve()
        if not source.is_dir():
            raise NotFound(f"no directory {source} to import; fix: pass an existing path")
        bare.parent.mkdir(parents=True, exist_ok=True)
        scratch = Path(tempfile.mkdtemp(prefix=f".{bare.name}.import-", dir=bare.parent))
        try:
            work = scratch / "repo.git"
            if (source / ".git").exists():
                branch = self._import_clone(source, work, default_branch)
            else:
                branch = self._import_tree(source, work, default_branch or "main", as_user)
            work.rename(bare)
        finally:
            shutil.rmtree(scratch, ignore_errors=True)
        with self.store.write() as conn:
            now = self.store.stamp(conn)
            conn.execute("INSERT OR IGNORE INTO repos (name, created_at) VALUES (?, ?)",
                         (repo, now))
            conn.execute("INSERT OR REPLACE INTO users (login, role) VALUES (?, 'owner')",
                         (as_user,))
        head = g.resolve(f"refs/heads/{branch}", git_dir=bare)
        assert head is not None
        return head

    def _import_clone(self, source: Path, work: Path, default_branch: str | None) -> str:
        g.git(["clone", "--bare", "--quiet", "--no-hardlinks", "--", str(source), str(work)])
        g.git(["remote", "remove", "origin"], git_dir=work)
        if default_branch is not None:
            if g.resolve(f"refs/heads/{default_branch}", git_dir=work) is None:
                raise ForgeError(f"{source} has no branch {default_branch}; fix: pass "
                                 f"--default-branch with an existing branch")
            g.git(["symbolic-ref", "HEAD", f"refs/heads/{default_branch}"], git_dir=work)
            return default_branch
        try:
            ref = g.git_text(["symbolic-ref", "HEAD"], git_dir=work)
        except g.GitFailed:
            ref = ""
        branch = ref.removeprefix("refs/heads/")
        if not ref.startswith("refs/heads/") or g.resolve(ref, git_dir=work) is None:
            raise ForgeError(f"{source} has no current branch with commits; fix: check "
                             f"out a branch, or pass --default-branch")
        return branch

    def _import_tree(self, source: Path, work: Path, branch: str, as_user: str) -> str:
        g.git(["init", "--bare", "--quiet", f"--initial-branch={branch}", str(work)])
        env = {"GIT_WORK_TREE": str(source), "GIT_INDEX_FILE": str(work / "import-index")}
        g.git(["add", "--all", "--", "."], git_dir=work, env=env)
        tree = g.git_text(["write-tree"], git_dir=work, env=env)
        (work / "import-index").unlink()
        if not g.git_text(["ls-tree", tree], git_dir=work):
            raise ForgeError(f"{source} holds no files to import; fix: import a directory "
                             f"with the target's code")
        sha = g.commit_tree(work, tree, [], f"Import {source.name}", as_user)
        g.git(["update-ref", f"refs/heads/{branch}", sha], git_dir=work)
        return branch

    # ----- a test hook: rights refused

    def _refuse_if_told(self, repo: str, verb: str) -> None:
        """Test hook (the local forge has no rights to refuse): while a line of
        ``<root>/REFUSE`` matches ``<verb> <repo>`` (fnmatch; ``open_pr *`` refuses every
        pull request, ``push *`` every push of a PR branch), the kernel's ``verb`` is
        refused as GitHub refuses a token without the right (403 "Resource not
        accessible by integration"). Remove the line and the next try goes through. No
        file: a stat."""
        path = self.root / REFUSE_FILE
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except FileNotFoundError:
            return
        if any(line.strip() and fnmatch.fnmatchcase(f"{verb} {repo}", line.strip())
               for line in lines):
            raise ForgeForbidden(f"the local forge refused {verb} on {repo}: 403 Resource "
                                 f"not accessible by integration ({path} says so); fix: "
                                 f"remove the line from {path}")

    # ----- git

    def default_branch(self, repo: str) -> str:
        bare = self._bare(repo)
        ref = _symbolic_head(bare) or g.git_text(["symbolic-ref", "HEAD"], git_dir=bare)
        return ref.removeprefix("refs/heads/")

    def branch_head(self, repo: str, branch: str) -> str | None:
        bare = self._bare(repo)
        g.check_branch_name(branch)
        return _loose_ref(bare, branch) or g.resolve(f"refs/heads/{branch}", git_dir=bare)

    def read_file(self, repo: str, path: str, ref: str) -> bytes | None:
        """The blob at ``ref:path``; None when the ref, the path or a file there is
        missing (a directory is not a file). Read at a full commit sha, it is kept
        (``local_blobs``): a tick's contract read runs no git process."""
        bare = self._bare(repo)
        _check_path(path)
        return file_at(self.root, repo, path, ref,
                       lambda: g.read_blob(ref, path, git_dir=bare))

    def fetch(self, repo: str, dest: Path, ref: str) -> str:
        """Make ``dest`` a clone of ``repo`` holding ``ref``; return its sha. A new
        clone is checked out at that sha (detached); an existing clone only gets the
        objects and its ``origin/*`` refs updated, its working tree left alone.
        ``NotFound`` when ``ref`` names no commit; ``ForgeError`` when ``dest`` exists
        but is not a git clone. Clones copy objects (no hardlinks into the forge)."""
        bare = self._bare(repo)
        sha = g.resolve(ref, git_dir=bare)
        if sha is None:
            raise NotFound(f"{repo} has no ref {ref}; fix: name an existing branch or sha")
        dest = Path(dest)
        if not (dest / ".git").exists():
            if dest.exists() and any(dest.iterdir()):
                raise ForgeError(f"{dest} exists and is not a git clone; fix: remove it "
                                 f"or pick an empty directory")
            g.git(["clone", "--quiet", "--no-hardlinks", "--no-checkout", "--",
                   str(bare), str(dest)])
            g.git(["checkout", "--quiet", "--detach", sha], cwd=dest)
            return sha
        g.git(["fetch", "--quiet", "--tags", "--", str(bare),
               "+refs/heads/*:refs/remotes/origin/*"], cwd=dest)
        if g.resolve(sha, cwd=dest) is None:
            g.git(["fetch", "--quiet", "--", str(bare), sha], cwd=dest)
        return sha

    def push(self, repo: str, source: Path, sha: str, branch: str) -> None:
        """Move ``branch`` to ``sha`` from the local repository ``source``, fast-forward
        only: a branch holding a commit ``sha`` does not contain (say, a human's fix)
        is refused with ``ForgeError``, never overwritten. Pushing the current head is
        a no-op, so retries are safe. The test hook ``_refuse_if_told`` may refuse it
        (``push <repo>``: a token without contents: write)."""
        self._refuse_if_told(repo, "push")
        bare = self._bare(repo)
        g.check_branch_name(branch)
        if not g.SHA_RE.match(sha) or g.resolve(sha, cwd=source) != sha:
            raise ForgeError(f"{source} has no commit {sha}; fix: push a full sha that "
                             f"exists in the source repository")
        current = g.resolve(f"refs/heads/{branch}", git_dir=bare)
        if current != sha:
            if current is not None and not g.is_ancestor(current, sha, cwd=source):
                raise BranchMoved(
                    f"refusing to push {sha[:12]} to {repo} {branch}: the branch holds "
                    f"{current[:12]}, which {sha[:12]} does not contain (fast-forward only; "
                    f"another commit is never overwritten); fix: fetch the branch and "
                    f"build on it")
            g.git(["push", "--quiet", "--no-verify", "--", str(bare),
                   f"{sha}:refs/heads/{branch}"], cwd=source)
        self._note_head(repo, branch, sha)

    def commit_files(
        self, repo: str, branch: str, files: dict[str, bytes], message: str,
        expected_head: str | None,
    ) -> str:
        """One commit on ``branch`` writing ``files`` over its tree, built with plumbing
        in a scratch index. Refused (``ForgeError``) when the branch head is not
        ``expected_head`` (None: the branch must not exist yet), checked both before
        building and atomically when moving the ref. Returns the new commit's sha."""
        bare = self._bare(repo)
        g.check_branch_name(branch)
        for path in files:
            _check_path(path)
        current = g.resolve(f"refs/heads/{branch}", git_dir=bare)
        if current != expected_head:
            raise self._moved(repo, branch, current, expected_head)
        with tempfile.TemporaryDirectory(prefix="outerloop-index-") as scratch:
            tree = g.write_tree(bare, current, files, Path(scratch) / "index")
        parents = [current] if current else []
        sha = g.commit_tree(bare, tree, parents, message, self.login)
        if not g.compare_and_swap(bare, branch, sha, current):
            raise self._moved(repo, branch, g.resolve(f"refs/heads/{branch}", git_dir=bare),
                              expected_head)
        self._note_head(repo, branch, sha)
        return sha

    @staticmethod
    def _moved(repo: str, branch: str, current: str | None, expected: str | None) -> ForgeError:
        return ForgeError(
            f"{repo} {branch} is at {current or '(no branch)'}, expected "
            f"{expected or '(no branch)'}: the head moved; fix: re-read the branch and retry")

    def _note_head(self, repo: str, branch: str, sha: str) -> None:
        """Record a new head on the open pull requests of ``branch`` (GitHub bumps a PR's
        ``updated_at`` when its head moves)."""
        with self.store.write() as conn:
            rows = conn.execute(
                "SELECT number FROM pulls p JOIN issues i USING (repo, number) WHERE "
                "p.repo = ? AND p.head = ? AND i.state = 'open' AND p.head_sha != ?",
                (repo, branch, sha)).fetchall()
            if not rows:
                return
            now = self.store.stamp(conn)
            for row in rows:
                conn.execute("UPDATE pulls SET head_sha = ? WHERE repo = ? AND number = ?",
                             (sha, repo, row["number"]))
                conn.execute("UPDATE issues SET updated_at = ? WHERE repo = ? AND number = ?",
                             (now, repo, row["number"]))

    # ----- pull requests

    def _pr(self, repo: str, row: sqlite3.Row) -> PullRequest:
        head_sha = row["head_sha"]
        if row["state"] == "open":
            head_sha = g.resolve(f"refs/heads/{row['head']}", git_dir=self._bare(repo)) or head_sha
        return PullRequest(
            number=row["number"], title=row["title"], body=row["body"], author=row["author"],
            head=row["head"], head_sha=head_sha, base=row["base"], state=row["state"],
            merged=bool(row["merged"]), draft=bool(row["draft"]),
            created_at=parse_stamp(row["created_at"]), updated_at=parse_stamp(row["updated_at"]),
        )

    def _pr_row(self, conn: sqlite3.Connection, repo: str, number: int) -> sqlite3.Row:
        row = conn.execute(_PR_SELECT + "WHERE i.repo = ? AND i.number = ?",
                           (repo, number)).fetchone()
        if row is None:
            raise NotFound(f"{repo} has no pull request #{number}; fix: "
                           f"`outerloop forge pr list --repo {repo}`")
        return cast(sqlite3.Row, row)

    def get_pr(self, repo: str, number: int) -> PullRequest:
        """Pull request ``number``; an open one's ``head_sha`` is its branch's head now."""
        self._bare(repo)
        with self.store.read() as conn:
            row = self._pr_row(conn, repo, number)
        return self._pr(repo, row)

    def list_prs(self, repo: str, state: str = "open") -> list[PullRequest]:
        """Pull requests in ``state`` (open, closed or all), oldest first."""
        self._bare(repo)
        states = ("open", "closed") if state == "all" else (state,)
        with self.store.read() as conn:
            rows = conn.execute(
                _PR_SELECT + f"WHERE i.repo = ? AND i.state IN ({','.join('?' * len(states))})"
                " ORDER BY i.number", (repo, *states)).fetchall()
        return [self._pr(repo, r) for r in rows]

    def find_open_pr(self, repo: str, head: str) -> PullRequest | None:
        """The open pull request from branch ``head``, or None (how a crashed publish is
        reconciled: an open PR for the run's branch means it already happened)."""
        self._bare(repo)
        with self.store.read() as conn:
            row = conn.execute(_PR_SELECT + "WHERE i.repo = ? AND p.head = ? AND "
                               "i.state = 'open' ORDER BY i.number", (repo, head)).fetchone()
        return None if row is None else self._pr(repo, row)

    def find_prs(self, repo: str, head: str) -> list[PullRequest]:
        """Every pull request from branch ``head``, merged and closed ones included."""
        self._bare(repo)
        with self.store.read() as conn:
            rows = conn.execute(_PR_SELECT + "WHERE i.repo = ? AND p.head = ? "
                                "ORDER BY i.number", (repo, head)).fetchall()
        return [self._pr(repo, r) for r in rows]

    def open_pr(
        self, repo: str, head: str, base: str, title: str, body: str, draft: bool = False
    ) -> PullRequest:
        self._refuse_if_told(repo, "open_pr")
        return self.open_pr_as(repo, head, base, title, body, self.login, draft=draft)

    def open_pr_as(
        self, repo: str, head: str, base: str, title: str, body: str, as_user: str,
        *, draft: bool = False,
    ) -> PullRequest:
        """Open a pull request from ``head`` into ``base`` as ``as_user``. Refused
        (``ForgeError``) when a branch is missing, head equals base, or an open pull
        request from ``head`` already exists (as GitHub answers 422)."""
        bare = self._bare(repo)
        check_login(as_user)
        head_sha = self.branch_head(repo, head)
        if head_sha is None or g.resolve(f"refs/heads/{base}", git_dir=bare) is None:
            missing = base if head_sha else head
            raise ForgeError(f"{repo} has no branch {missing}; fix: push it first")
        if head == base:
            raise ForgeError(f"a pull request needs two branches, got {head} twice; fix: "
                             f"open it from a feature branch")
        if not title.strip():
            raise ForgeError("a pull request needs a title; fix: pass a title")
        with self.store.write() as conn:
            taken = conn.execute(
                "SELECT number FROM pulls p JOIN issues i USING (repo, number) WHERE "
                "p.repo = ? AND p.head = ? AND i.state = 'open'", (repo, head)).fetchone()
            if taken is not None:
                raise ForgeError(f"a pull request for {head} is already open in {repo} "
                                 f"(#{taken['number']}); fix: update that one")
            number = self._insert_issue(conn, repo, title, body, as_user, is_pr=True)
            conn.execute("INSERT INTO pulls (repo, number, head, base, head_sha, draft) "
                         "VALUES (?, ?, ?, ?, ?, ?)",
                         (repo, number, head, base, head_sha, int(draft)))
        return self.get_pr(repo, number)

    def update_pr(
        self, repo: str, number: int, title: str | None = None, body: str | None = None
    ) -> PullRequest:
        """Change a pull request's title and/or body (None leaves it as it is)."""
        self._bare(repo)
        with self.store.write() as conn:
            row = self._pr_row(conn, repo, number)
            conn.execute(
                "UPDATE issues SET title = ?, body = ?, updated_at = ? WHERE repo = ? AND "
                "number = ?", (row["title"] if title is None else title,
                               row["body"] if body is None else body,
                               self.store.stamp(conn), repo, number))
        return self.get_pr(repo, number)

    def mark_ready_as(self, repo: str, number: int, as_user: str) -> PullRequest:
        """Take an open pull request out of draft as ``as_user`` (author or a writer),
        so it can be merged."""
        self._require_author_or_writer(repo, number, as_user, "mark ready")
        with self.store.write() as conn:
            row = self._pr_row(conn, repo, number)
            if row["draft"]:
                conn.execute("UPDATE pulls SET draft = 0 WHERE repo = ? AND number = ?",
                             (repo, number))
                conn.execute("UPDATE issues SET updated_at = ? WHERE repo = ? AND number = ?",
                             (self.store.stamp(conn), repo, number))
        return self.get_pr(repo, number)

    def close_pr_as(self, repo: str, number: int, as_user: str) -> None:
        """Close a pull request unmerged as ``as_user`` (its author or a writer)."""
        self._require_author_or_writer(repo, number, as_user)
        self._close_pr(repo, number)

    def close_pr(self, repo: str, number: int) -> None:
        """Close a pull request unmerged as the kernel (a run's own: ``stop --withdraw``)."""
        self._bare(repo)
        self._close_pr(repo, number)

    def _close_pr(self, repo: str, number: int) -> None:
        pr = self.get_pr(repo, number)
        if pr.state == "closed":
            return
        with self.store.write() as conn:
            now = self.store.stamp(conn)
            conn.execute("UPDATE pulls SET head_sha = ? WHERE repo = ? AND number = ?",
                         (pr.head_sha, repo, number))
            conn.execute("UPDATE issues SET state = 'closed', updated_at = ? WHERE repo = ? "
                         "AND number = ?", (now, repo, number))

    def merge_pr(
        self, repo: str, number: int, as_user: str = DEFAULT_HUMAN, message: str | None = None
    ) -> str:
        """Merge an open, non-draft pull request as ``as_user`` (who needs write access):
        a merge commit of head into base, built with ``git merge-tree`` and moved in by
        compare-and-swap. Refused (``ForgeError``) on conflicts or a base that moved
        meanwhile. Returns the merge commit (the base head when head was already in
        base)."""
        bare = self._bare(repo)
        if not self.can_write(as_user):
            raise ForgeError(f"{as_user} has no write access to {repo}; fix: `outerloop "
                             f"forge user add {as_user} --role collaborator`")
        pr = self.get_pr(repo, number)
        if pr.state != "open":
            raise ForgeError(f"{repo} #{number} is {'merged' if pr.merged else 'closed'}; "
                             f"fix: only an open pull request can be merged")
        if pr.draft:
            raise ForgeError(f"{repo} #{number} is a draft; fix: "
                             f"`outerloop forge pr ready {number}`")
        base_sha = g.resolve(f"refs/heads/{pr.base}", git_dir=bare)
        if base_sha is None or self.branch_head(repo, pr.head) is None:
            raise ForgeError(f"{repo} #{number}: a branch is gone; fix: restore "
                             f"{pr.head} and {pr.base}")
        merged = base_sha
        if not g.is_ancestor(pr.head_sha, base_sha, git_dir=bare):
            try:
                tree = g.git_text(["merge-tree", "--write-tree", "--no-messages", base_sha,
                                   pr.head_sha], git_dir=bare).splitlines()[0]
            except g.GitFailed as exc:
                if exc.returncode == 1:
                    raise ForgeError(f"{repo} #{number} conflicts with {pr.base}; fix: "
                                     f"merge {pr.base} into {pr.head} first") from None
                raise
            text = message or f"Merge pull request #{number} from {pr.head}\n\n{pr.title}"
            merged = g.commit_tree(bare, tree, [base_sha, pr.head_sha], text, as_user)
            if not g.compare_and_swap(bare, pr.base, merged, base_sha):
                raise ForgeError(f"{repo} {pr.base} moved during the merge; fix: retry")
        with self.store.write() as conn:
            conn.execute("UPDATE pulls SET merged = 1, merge_sha = ?, head_sha = ? WHERE "
                         "repo = ? AND number = ?", (merged, pr.head_sha, repo, number))
            conn.execute("UPDATE issues SET state = 'closed', updated_at = ? WHERE repo = ? "
                         "AND number = ?", (self.store.stamp(conn), repo, number))
            if pr.base == self.default_branch(repo):  # as GitHub: issues the body closes
                for issue in closing_refs(pr.body):
                    conn.execute("UPDATE issues SET state = 'closed', updated_at = ? WHERE "
                                 "repo = ? AND number = ? AND is_pr = 0 AND state = 'open'",
                                 (self.store.stamp(conn), repo, issue))
        return merged

    def diff_pr(self, repo: str, number: int) -> str:
        """The pull request's changes as a unified diff (from where head left base)."""
        bare = self._bare(repo)
        with self.store.read() as conn:
            row = self._pr_row(conn, repo, number)
        pr = self._pr(repo, row)
        base = f"{row['merge_sha']}^1" if row["merge_sha"] and row["merged"] else pr.base
        return g.git(["diff", "--no-ext-diff", "--no-textconv", f"{base}...{pr.head_sha}",
                      "--"], git_dir=bare).decode("utf-8", "replace")

    def review_as(
        self, repo: str, number: int, body: str, as_user: str, state: str = "COMMENTED",
        comments: Sequence[tuple[str, int | None, str]] = (),
    ) -> Review:
        """Submit a review as ``as_user`` with ``state`` and optional line comments
        ``(path, line, body)``, all in one transaction."""
        self._bare(repo)
        check_login(as_user)
        if state not in REVIEW_STATES:
            raise ForgeError(f"review state {state!r} is not one of "
                             f"{', '.join(REVIEW_STATES)}; fix: pick one")
        with self.store.write() as conn:
            self._pr_row(conn, repo, number)
            now = self.store.stamp(conn)
            review_id = conn.execute(
                "INSERT INTO reviews (repo, pr_number, author, state, body, submitted_at) "
                "VALUES (?, ?, ?, ?, ?, ?)", (repo, number, as_user, state, body, now)
            ).lastrowid
            for path, line, text in comments:
                conn.execute(
                    "INSERT INTO review_comments (repo, pr_number, author, path, line, body, "
                    "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                    (repo, number, as_user, path, line, text, now))
            conn.execute("UPDATE issues SET updated_at = ? WHERE repo = ? AND number = ?",
                         (now, repo, number))
        return next(r for r in self.list_reviews(repo, number) if r.id == review_id)

    def list_reviews(self, repo: str, number: int) -> list[Review]:
        """Reviews of pull request ``number``, oldest first."""
        self._bare(repo)
        with self.store.read() as conn:
            self._pr_row(conn, repo, number)
            rows = conn.execute(
                "SELECT r.*, COALESCE(u.role, 'none') AS role FROM reviews r LEFT JOIN users "
                "u ON u.login = r.author WHERE r.repo = ? AND r.pr_number = ? ORDER BY r.id",
                (repo, number)).fetchall()
        return [
            Review(id=r["id"], pr_number=number, author=r["author"],
                   author_association=ASSOCIATION[r["role"]], state=r["state"],
                   body=r["body"], submitted_at=parse_stamp(r["submitted_at"]))
            for r in rows
        ]

    def list_review_comments(
        self, repo: str, number: int, since: datetime | None = None
    ) -> list[ReviewComment]:
        """Line comments on pull request ``number`` created after ``since``, oldest first."""
        self._bare(repo)
        after = stamp(since) if since else ""
        with self.store.read() as conn:
            self._pr_row(conn, repo, number)
            rows = conn.execute(
                "SELECT c.*, COALESCE(u.role, 'none') AS role FROM review_comments c LEFT "
                "JOIN users u ON u.login = c.author WHERE c.repo = ? AND c.pr_number = ? AND "
                "c.created_at > ? ORDER BY c.id", (repo, number, after)).fetchall()
        return [
            ReviewComment(id=r["id"], pr_number=number, author=r["author"],
                          author_association=ASSOCIATION[r["role"]], path=r["path"],
                          line=r["line"], body=r["body"], created_at=parse_stamp(r["created_at"]))
            for r in rows
        ]


def _symbolic_head(bare: Path) -> str | None:
    """The ref the forge's own bare repository's ``HEAD`` names, read as git reads it
    (``ref: refs/heads/<name>``; no process); None when it says anything else."""
    try:
        text = (bare / "HEAD").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None
    ref = text.removeprefix("ref: ").strip()
    return ref if text.startswith("ref: refs/heads/") and "\n" not in ref else None


def _loose_ref(bare: Path, branch: str) -> str | None:
    """A branch's commit as its loose ref file holds it (what git reads first; no
    process), or None (packed, absent, or not a sha: git is asked)."""
    try:
        text = (bare / "refs" / "heads" / branch).read_text(encoding="ascii").strip()
    except (OSError, UnicodeDecodeError):
        return None
    return text if len(text) == 40 and is_commit_sha(text) else None
