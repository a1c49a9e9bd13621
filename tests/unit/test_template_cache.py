"""Compiled board templates kept under the home: used only when nothing that shapes
them changed; a missing, damaged or unwritable cache costs a compile, never a render."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from jinja2 import Environment

from outerloop import board
from outerloop.config import Settings, TargetSettings
from outerloop.ledger import events as ev
from outerloop.ledger.state import RunRecord, State
from outerloop.template_cache import (
    TEMPLATES_CACHE,
    attach,
    compile_fingerprint,
    forget_compiled,
)

TARGET = "demo/tinytsp"
AT = "2024-05-01T00:00:00.000000Z"


def _state() -> State:
    run = RunRecord(run_id="tour-00001-agent-01", target=TARGET, benchmark="tour",
                    agent="agent-01", issue=1, issue_title="Idea <b>1</b>",
                    hypothesis="Idea <b>1</b>", queued_at=AT, updated_at=AT, state="ended",
                    admitted=True, ending="merged")
    run.verdicts.append(ev.Verdict(seq=0, at=AT, verdict="improved", benchmark="tour",
                                   baseline="100.0", candidate="95.0", seeds=1))
    state = State(last_at=AT)
    state.runs[run.run_id] = run
    return state


def _render(home: Path, *, new_process: bool = True) -> dict[str, str]:
    board._environment.cache_clear()  # a new tick (or another home's)
    if new_process:
        forget_compiled()
    settings = Settings(home=home, targets=[TargetSettings(repo=TARGET)])
    return board.render_board(settings, _state(), AT)


def _entries(home: Path) -> list[Path]:
    return sorted((home / TEMPLATES_CACHE).rglob("__jinja2_*.cache"))


@pytest.fixture(autouse=True)
def _fresh_environments() -> None:
    yield
    board._environment.cache_clear()
    forget_compiled()


def _counting_compiles(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    compiled: list[str] = []
    original = Environment.compile

    def counting(self: Environment, source: str, name: str | None = None,
                 *args: object, **kwargs: object) -> object:
        compiled.append(str(name))
        return original(self, source, name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Environment, "compile", counting)
    return compiled


def test_a_second_tick_renders_from_the_kept_code_the_same_board(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch
                                                                  ) -> None:
    first = _render(tmp_path)
    assert len(_entries(tmp_path)) == 2  # the HTML board and CLIMB.md
    compiled = _counting_compiles(monkeypatch)
    assert _render(tmp_path) == first
    assert compiled == []
    assert "Idea &lt;b&gt;1&lt;/b&gt;" in first["index.html"]  # kept code still escapes


def test_a_process_rendering_for_a_second_home_does_not_compile_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    compiled = _counting_compiles(monkeypatch)
    first = _render(tmp_path / "one")
    assert sorted(compiled) == ["board.html.j2", "climb.md.j2"]
    assert _render(tmp_path / "two", new_process=False) == first
    assert len(compiled) == 2  # the second home's render took the code in memory
    assert _render(tmp_path / "three") == first  # a new process, a new home: compiled
    assert len(compiled) == 4


def test_damaged_or_unwritable_cache_costs_a_compile_never_the_render(tmp_path: Path) -> None:
    first = _render(tmp_path)
    for entry in _entries(tmp_path):
        entry.write_bytes(entry.read_bytes()[:40])  # cut short: a crash mid-write
    assert _render(tmp_path) == first
    unwritable = tmp_path / "ro"
    (unwritable / "cache").mkdir(parents=True)
    (unwritable / TEMPLATES_CACHE).write_text("not a folder")
    assert _render(unwritable) == first
    gone = tmp_path / "gone"
    board._environment.cache_clear()
    board._environment(False, gone)  # the folder is made here ...
    shutil.rmtree(gone / TEMPLATES_CACHE)  # ... and is gone when the compiled code is written
    settings = Settings(home=gone, targets=[TargetSettings(repo=TARGET)])
    assert board.render_html(board.build_view(settings, _state(), AT), gone) == first["index.html"]


def test_what_shapes_the_compiled_code_names_its_folder(tmp_path: Path) -> None:
    def folder(**options: object) -> str:
        env = attach(Environment(**options), tmp_path)  # type: ignore[arg-type]
        assert env.bytecode_cache is not None
        return str(env.bytecode_cache.directory)  # type: ignore[attr-defined]

    base: dict[str, object] = dict(autoescape=False, trim_blocks=True, lstrip_blocks=True,
                                   keep_trailing_newline=True)
    assert folder(**base) == folder(**base)
    assert folder(**base).endswith(compile_fingerprint(Environment(**base)))  # type: ignore[arg-type]
    for change in (dict(autoescape=True), dict(trim_blocks=False),
                   dict(lstrip_blocks=False), dict(keep_trailing_newline=False),
                   dict(variable_start_string="[[")):
        assert folder(**{**base, **change}) != folder(**base)
