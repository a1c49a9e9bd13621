"""Fixtures for end-to-end runs: the fake GitHub for the github forge runs."""

from tests.github.fixtures import fake_github  # noqa: F401
