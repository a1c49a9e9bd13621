"""The tick's sandbox warning is kept in ``cache/`` and proved again when what it depends
on changes or ``RECHECK_S`` has passed (``sandbox/kept_warning.py``)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from outerloop import clock
from outerloop.config import SandboxSettings
from outerloop.sandbox.kept_warning import PROVED_FILE, RECHECK_S, fingerprint, tick_warning
from outerloop.sandbox.resolve import off_warning

OFF = SandboxSettings(kind="off")
PLANTED = "a warning only the kept proof holds"


@pytest.fixture(autouse=True)
def _clock_back() -> Iterator[None]:
    yield
    clock.shift(0)


def _plant(home: Path, settings: SandboxSettings, at: float | None = None) -> None:
    proved = home / PROVED_FILE
    proved.parent.mkdir(parents=True, exist_ok=True)
    proved.write_text(json.dumps({"mark": fingerprint(settings), "warning": PLANTED,
                                  "at": clock.now().timestamp() if at is None else at}))


def test_the_first_tick_proves_the_warning_and_keeps_it(tmp_path: Path) -> None:
    said = tick_warning(tmp_path, OFF)
    assert said == off_warning(OFF) and said is not None and said.startswith("SANDBOX OFF")
    kept = json.loads((tmp_path / PROVED_FILE).read_text())
    assert kept["warning"] == said and kept["mark"] == fingerprint(OFF)


def test_a_kept_warning_is_said_without_proving_again(tmp_path: Path) -> None:
    _plant(tmp_path, OFF)
    assert tick_warning(tmp_path, OFF) == PLANTED


def test_changed_sandbox_settings_are_proved_at_once(tmp_path: Path) -> None:
    _plant(tmp_path, SandboxSettings(kind="auto"))
    assert tick_warning(tmp_path, OFF) == off_warning(OFF)


def test_a_changed_path_is_proved_at_once(tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    _plant(tmp_path, OFF)
    monkeypatch.setenv("PATH", "/nowhere:" + __import__("os").environ.get("PATH", ""))
    assert tick_warning(tmp_path, OFF) == off_warning(OFF)


def test_a_kept_warning_is_proved_again_after_the_recheck_time(tmp_path: Path) -> None:
    _plant(tmp_path, OFF)
    clock.shift(RECHECK_S + 1)
    assert tick_warning(tmp_path, OFF) == off_warning(OFF)


def test_a_kept_clean_answer_is_proved_again_too(tmp_path: Path) -> None:
    """No warning kept is no licence: it is proved again after ``RECHECK_S`` as well."""
    proved = tmp_path / PROVED_FILE
    proved.parent.mkdir(parents=True)
    proved.write_text(json.dumps({"mark": fingerprint(OFF), "warning": None,
                                  "at": clock.now().timestamp() - RECHECK_S - 1}))
    assert tick_warning(tmp_path, OFF) == off_warning(OFF)


@pytest.mark.parametrize("text", ["", "not json", "[]", '{"mark": 3}',
                                  '{"mark": "x", "at": 1}'])
def test_a_damaged_proof_is_proved_again(tmp_path: Path, text: str) -> None:
    proved = tmp_path / PROVED_FILE
    proved.parent.mkdir(parents=True)
    proved.write_text(text)
    assert tick_warning(tmp_path, OFF) == off_warning(OFF)
