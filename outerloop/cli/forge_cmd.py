"""``outerloop forge``: the human side of the local forge (issues, pull requests, repos).

Thin: parse, call ``LocalForge``, print. Humans act as ``maintainer`` (the owner
``forge repo import`` creates) unless they pass ``--as LOGIN``. ``--repo`` may be left
out when the home configures exactly one target (or the forge holds one repository).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, TypeVar

import click
from pydantic import BaseModel

from outerloop.cli.json_out import emit, json_option
from outerloop.clock import shown
from outerloop.config import Settings, load_settings
from outerloop.errors import ConfigError
from outerloop.forge.factory import local_forge
from outerloop.forge.local import REVIEW_STATES, LocalForge
from outerloop.forge.localdb import ROLES
from outerloop.forge.localissues import DEFAULT_HUMAN

F = TypeVar("F", bound=Callable[..., Any])


def _home_option(func: F) -> F:
    return click.option(
        "--home", type=click.Path(path_type=Path), default=None,
        help="The outerloop home (default: OUTERLOOP_HOME, else ~/.outerloop).",
    )(func)


def _repo_option(func: F) -> F:
    return click.option(
        "--repo", default=None, metavar="OWNER/NAME",
        help="The repository; may be omitted when one target is configured.",
    )(func)


def _as_option(func: F) -> F:
    return click.option(
        "--as", "as_user", default=DEFAULT_HUMAN, show_default=True, metavar="LOGIN",
        help="Act as this login (maintainer is the owner `forge repo import` creates).",
    )(func)


def _open(home: Path | None) -> tuple[LocalForge, Settings]:
    """The home's local forge; ``ConfigError`` when the home uses GitHub instead."""
    settings = load_settings(home)
    if settings.forge.kind != "local":
        raise ConfigError(
            f"`outerloop forge` drives the local forge, but {settings.home} uses forge kind "
            f"{settings.forge.kind}; fix: use the code host's own interface")
    return local_forge(settings), settings


def _pick_repo(forge: LocalForge, settings: Settings, repo: str | None) -> str:
    if repo:
        return repo
    if len(settings.targets) == 1:
        return settings.targets[0].repo
    if not settings.targets:
        repos = forge.list_repos()
        if len(repos) == 1:
            return repos[0]
    raise ConfigError("which repository? several or none are configured; fix: pass "
                      "--repo OWNER/NAME")


def _when(moment: datetime) -> str:
    return f"{shown(moment)} UTC"


def _dumped(records: Sequence[BaseModel]) -> list[dict[str, Any]]:
    """Forge records as ``--json`` shows them (GitHub's field names, ISO times)."""
    return [r.model_dump(mode="json") for r in records]


@click.group("forge")
def forge_group() -> None:
    """The local forge: bare git repositories and issues/PRs in SQLite under the home.

    Humans act as `maintainer` (an owner, created by `forge repo import`) unless a
    command is given --as LOGIN. Give other people a role with `forge user add`: only
    owners, members and collaborators steer the kernel.
    """


# ----- repositories and users

@forge_group.group("repo")
def repo_group() -> None:
    """Repositories on the local forge."""


@repo_group.command("import")
@click.argument("path", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option("--as", "repo", required=True, metavar="OWNER/NAME",
              help="The name the repository gets on the forge.")
@click.option("--default-branch", default=None, help="Default branch (git sources: "
              "default is the current branch; plain directories: main).")
@click.option("--user", default=DEFAULT_HUMAN, show_default=True,
              help="The importing user; becomes an owner.")
@_home_option
def repo_import(path: Path, repo: str, default_branch: str | None, user: str,
                home: Path | None) -> None:
    """Create OWNER/NAME from the directory PATH.

    A git repository is copied with all its branches; a plain directory is committed
    as one commit (the directory itself is left untouched).
    """
    forge, _ = _open(home)
    sha = forge.import_repo(path, repo, default_branch, as_user=user)
    click.echo(f"imported {repo} ({forge.default_branch(repo)} at {sha[:12]}); "
               f"{user} is an owner")


@repo_group.command("list")
@_home_option
@json_option
def repo_list(home: Path | None, as_json: bool) -> None:
    """List the repositories."""
    forge, _ = _open(home)
    if as_json:
        emit(repos=forge.list_repos())
        return
    for repo in forge.list_repos():
        click.echo(repo)


@forge_group.group("user")
def user_group() -> None:
    """People and their roles (owner, member, collaborator, none)."""


@user_group.command("add")
@click.argument("login")
@click.option("--role", type=click.Choice(ROLES), required=True,
              help="owner, member and collaborator have write access and standing.")
@_home_option
def user_add(login: str, role: str, home: Path | None) -> None:
    """Add LOGIN with a role (or change an existing user's role)."""
    forge, _ = _open(home)
    forge.set_role(login, role)
    click.echo(f"{login}: {role}")


@user_group.command("list")
@_home_option
@json_option
def user_list(home: Path | None, as_json: bool) -> None:
    """List users and their roles."""
    forge, _ = _open(home)
    if as_json:
        emit(users=[{"login": login, "role": role} for login, role in forge.users()])
        return
    for login, role in forge.users():
        click.echo(f"{login}\t{role}")


# ----- issues

@forge_group.group("issue")
def issue_group() -> None:
    """Issues: how maintainers ask for work."""


@issue_group.command("open")
@click.option("--title", required=True)
@click.option("--body", default="", help="The issue text (name one benchmark).")
@_repo_option
@_as_option
@_home_option
def issue_open(title: str, body: str, repo: str | None, as_user: str,
               home: Path | None) -> None:
    """Open an issue."""
    forge, settings = _open(home)
    issue = forge.open_issue_as(_pick_repo(forge, settings, repo), title, body, as_user)
    click.echo(f"opened #{issue.number}")


@issue_group.command("list")
@_repo_option
@_home_option
@json_option
def issue_list(repo: str | None, home: Path | None, as_json: bool) -> None:
    """List open issues, oldest first."""
    forge, settings = _open(home)
    name = _pick_repo(forge, settings, repo)
    issues = forge.list_issues(name)
    if as_json:
        emit(repo=name, issues=_dumped(issues))
        return
    for issue in issues:
        labels = f"  [{', '.join(issue.labels)}]" if issue.labels else ""
        click.echo(f"#{issue.number}\t{issue.title}\t({issue.author}){labels}")


def _show_comments(forge: LocalForge, repo: str, number: int) -> None:
    for comment in forge.list_comments(repo, number):
        click.echo(f"\n--- comment {comment.id} by {comment.author} "
                   f"({comment.author_association.value}) at {_when(comment.created_at)}")
        click.echo(comment.body.rstrip())


@issue_group.command("show")
@click.argument("number", type=int)
@_repo_option
@_home_option
@json_option
def issue_show(number: int, repo: str | None, home: Path | None, as_json: bool) -> None:
    """Show issue NUMBER with its comments."""
    forge, settings = _open(home)
    name = _pick_repo(forge, settings, repo)
    issue = forge.get_issue(name, number)
    if as_json:
        emit(repo=name, issue=issue.model_dump(mode="json"),
             comments=_dumped(forge.list_comments(name, number)))
        return
    click.echo(f"#{issue.number} {issue.title} [{issue.state}]")
    click.echo(f"by {issue.author} ({issue.author_association.value}) at "
               f"{_when(issue.created_at)}")
    if issue.labels:
        click.echo(f"labels: {', '.join(issue.labels)}")
    click.echo("")
    click.echo(issue.body.rstrip())
    _show_comments(forge, name, number)


@issue_group.command("comment")
@click.argument("number", type=int)
@click.option("--body", required=True)
@_repo_option
@_as_option
@_home_option
def issue_comment(number: int, body: str, repo: str | None, as_user: str,
                  home: Path | None) -> None:
    """Comment on issue NUMBER."""
    forge, settings = _open(home)
    comment = forge.comment_as(_pick_repo(forge, settings, repo), number, body, as_user)
    click.echo(f"commented on #{number} (comment {comment.id})")


@issue_group.command("edit")
@click.argument("number", type=int)
@click.option("--title", default=None, help="The new title.")
@click.option("--body", default=None, help="The new text (name one benchmark).")
@_repo_option
@_as_option
@_home_option
def issue_edit(number: int, title: str | None, body: str | None, repo: str | None,
               as_user: str, home: Path | None) -> None:
    """Edit issue NUMBER's title and/or body (as its author or a writer)."""
    if title is None and body is None:
        raise click.UsageError("give --title, --body or both")
    forge, settings = _open(home)
    forge.edit_issue_as(_pick_repo(forge, settings, repo), number, as_user, title=title,
                        body=body)
    click.echo(f"edited #{number}")


@issue_group.command("close")
@click.argument("number", type=int)
@_repo_option
@_as_option
@_home_option
def issue_close(number: int, repo: str | None, as_user: str, home: Path | None) -> None:
    """Close issue NUMBER."""
    forge, settings = _open(home)
    forge.close_issue_as(_pick_repo(forge, settings, repo), number, as_user)
    click.echo(f"closed #{number}")


@issue_group.command("label")
@click.argument("number", type=int)
@click.argument("label")
@_repo_option
@_as_option
@_home_option
def issue_label(number: int, label: str, repo: str | None, as_user: str,
                home: Path | None) -> None:
    """Put LABEL on issue NUMBER (outerloop:approved from a writer gives standing)."""
    forge, settings = _open(home)
    forge.label_as(_pick_repo(forge, settings, repo), number, label, as_user)
    click.echo(f"labelled #{number} {label}")


# ----- pull requests

@forge_group.group("pr")
def pr_group() -> None:
    """Pull requests: where humans review, merge or close the agents' work."""


@pr_group.command("list")
@click.option("--state", type=click.Choice(["open", "closed", "all"]), default="open",
              show_default=True)
@_repo_option
@_home_option
@json_option
def pr_list(state: str, repo: str | None, home: Path | None, as_json: bool) -> None:
    """List pull requests."""
    forge, settings = _open(home)
    name = _pick_repo(forge, settings, repo)
    prs = forge.list_prs(name, state)
    if as_json:
        emit(repo=name, state=state, prs=_dumped(prs))
        return
    for pr in prs:
        status = "merged" if pr.merged else pr.state
        draft = " [draft]" if pr.draft else ""
        click.echo(f"#{pr.number}\t{pr.title}\t{pr.head} -> {pr.base}\t[{status}]{draft}")


@pr_group.command("show")
@click.argument("number", type=int)
@_repo_option
@_home_option
@json_option
def pr_show(number: int, repo: str | None, home: Path | None, as_json: bool) -> None:
    """Show pull request NUMBER with its comments and reviews."""
    forge, settings = _open(home)
    name = _pick_repo(forge, settings, repo)
    pr = forge.get_pr(name, number)
    if as_json:
        emit(repo=name, pr=pr.model_dump(mode="json"),
             comments=_dumped(forge.list_comments(name, number)),
             reviews=_dumped(forge.list_reviews(name, number)),
             review_comments=_dumped(forge.list_review_comments(name, number)))
        return
    status = "merged" if pr.merged else pr.state
    click.echo(f"#{pr.number} {pr.title} [{status}]{' [draft]' if pr.draft else ''}")
    click.echo(f"{pr.head} ({pr.head_sha[:12]}) -> {pr.base}, by {pr.author} at "
               f"{_when(pr.created_at)}")
    click.echo("")
    click.echo(pr.body.rstrip())
    _show_comments(forge, name, number)
    for review in forge.list_reviews(name, number):
        click.echo(f"\n--- review {review.id} {review.state} by {review.author} "
                   f"({review.author_association.value}) at {_when(review.submitted_at)}")
        if review.body.strip():
            click.echo(review.body.rstrip())
    for note in forge.list_review_comments(name, number):
        where = f"{note.path}:{note.line}" if note.line is not None else note.path
        click.echo(f"\n--- {where} by {note.author}: {note.body.rstrip()}")


@pr_group.command("diff")
@click.argument("number", type=int)
@_repo_option
@_home_option
@json_option
def pr_diff(number: int, repo: str | None, home: Path | None, as_json: bool) -> None:
    """Print pull request NUMBER's changes as a unified diff."""
    forge, settings = _open(home)
    name = _pick_repo(forge, settings, repo)
    diff = forge.diff_pr(name, number)
    if as_json:
        emit(repo=name, number=number, diff=diff)
        return
    click.echo(diff, nl=False)


@pr_group.command("comment")
@click.argument("number", type=int)
@click.option("--body", required=True)
@_repo_option
@_as_option
@_home_option
def pr_comment(number: int, body: str, repo: str | None, as_user: str,
               home: Path | None) -> None:
    """Comment on pull request NUMBER (the agent reads it at its next wake)."""
    forge, settings = _open(home)
    name = _pick_repo(forge, settings, repo)
    forge.get_pr(name, number)
    comment = forge.comment_as(name, number, body, as_user)
    click.echo(f"commented on #{number} (comment {comment.id})")


@pr_group.command("review")
@click.argument("number", type=int)
@click.option("--body", default="", help="The review text.")
@click.option("--state", type=click.Choice(REVIEW_STATES),
              default="COMMENTED", show_default=True)
@_repo_option
@_as_option
@_home_option
def pr_review(number: int, body: str, state: str, repo: str | None, as_user: str,
              home: Path | None) -> None:
    """Review pull request NUMBER."""
    forge, settings = _open(home)
    review = forge.review_as(_pick_repo(forge, settings, repo), number, body, as_user, state)
    click.echo(f"reviewed #{number}: {review.state} (review {review.id})")


@pr_group.command("merge")
@click.argument("number", type=int)
@_repo_option
@_as_option
@_home_option
def pr_merge(number: int, repo: str | None, as_user: str, home: Path | None) -> None:
    """Merge pull request NUMBER into its base (needs write access)."""
    forge, settings = _open(home)
    sha = forge.merge_pr(_pick_repo(forge, settings, repo), number, as_user)
    click.echo(f"merged #{number} ({sha[:12]})")


@pr_group.command("ready")
@click.argument("number", type=int)
@_repo_option
@_as_option
@_home_option
def pr_ready(number: int, repo: str | None, as_user: str, home: Path | None) -> None:
    """Take draft pull request NUMBER out of draft so it can be merged."""
    forge, settings = _open(home)
    forge.mark_ready_as(_pick_repo(forge, settings, repo), number, as_user)
    click.echo(f"#{number} is ready for review")


@pr_group.command("close")
@click.argument("number", type=int)
@_repo_option
@_as_option
@_home_option
def pr_close(number: int, repo: str | None, as_user: str, home: Path | None) -> None:
    """Close pull request NUMBER without merging."""
    forge, settings = _open(home)
    forge.close_pr_as(_pick_repo(forge, settings, repo), number, as_user)
    click.echo(f"closed #{number}")


COMMANDS: list[click.Command] = [forge_group]
