"""Fixtures for the fake GitHub (see ``tests/github/fixtures.py``)."""

from tests.github.fixtures import fake_github  # noqa: F401
