"""Pytest fixtures for the fake GitHub: a started server that fails the test if any
response it sent did not match the official description, and forges built on it."""

from __future__ import annotations

import warnings
from collections.abc import Iterator
from pathlib import Path

import pytest
from github import Auth

from outerloop.forge.github import GitHubForge
from outerloop.forge.githubhttp import ForgeRetry
from tests.github.fake import FakeGitHub
from tests.support import EXAMPLE_TARGET, TARGET

KERNEL = "outerloop"
MAINTAINER = "maintainer"


@pytest.fixture
def fake_github(tmp_path: Path) -> Iterator[FakeGitHub]:
    """A fake GitHub holding the example target, owned by ``demo`` with ``maintainer``
    as an admin collaborator and the kernel's login a writer. Asserts at teardown that
    every response validated."""
    fake = FakeGitHub(tmp_path / "fake-github").start()
    fake.create_repo(TARGET, EXAMPLE_TARGET)
    fake.grant(TARGET, MAINTAINER, "admin")
    fake.grant(TARGET, KERNEL, "write")  # as an operator sets it up: the kernel pushes
    try:
        yield fake
    finally:
        fake.stop()
    finish(fake)


def finish(fake: FakeGitHub) -> None:
    """Fail on any response that did not validate; surface request mismatches (the
    description is stricter than GitHub in places, see ``validator``) as warnings."""
    for warning in fake.request_warnings:
        warnings.warn(f"request does not match the description: {warning}", stacklevel=2)
    assert fake.violations == [], "\n".join(fake.violations)


def kernel_forge(fake: FakeGitHub, tmp_path: Path, **kwargs: object) -> GitHubForge:
    """The kernel's forge on ``fake``: no write pacing, fast retries."""
    options: dict[str, object] = {
        "cache_dir": tmp_path / "etag-cache", "seconds_between_writes": None,
        "retry": ForgeRetry(backoff_factor=0, total=2)}
    options.update(kwargs)
    return GitHubForge(fake.base_url, KERNEL, Auth.Token(fake.token_for(KERNEL)),
                       **options)  # type: ignore[arg-type]
