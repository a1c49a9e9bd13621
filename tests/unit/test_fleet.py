"""A fleet of models: named endpoints and per-target agent slots, as settings resolve
them (``fleet.py``): which harness, model and endpoint each run and judge uses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from outerloop.config import Settings
from outerloop.errors import ConfigError
from outerloop.fleet import agent_seats, all_seats, endpoint_users, judge_seat, seat_of, slot_index


def _settings(tmp_path: Path, **data: Any) -> Settings:
    return Settings.model_validate({"home": tmp_path, **data})


ENDPOINTS = {"anth": {"base_url": "http://127.0.0.1:1", "key_file": "keys/a", "probe": "models"},
             "oai": {"base_url": "http://127.0.0.1:2/v1", "key_file": "keys/o"}}


def test_home_without_agents_or_endpoints_resolves_to_harness_and_default_endpoint(
        tmp_path: Path) -> None:
    settings = _settings(tmp_path, harness={"kind": "claude", "model": "m",
                                            "model_key_file": "keys/k"},
                         targets=[{"repo": "o/r"}])
    (seat,) = agent_seats(settings, "o/r")
    assert seat.harness == settings.harness and seat.endpoint == "default"
    assert seat_of(settings, "o/r", "agent-03") == seat
    scripted = _settings(tmp_path, harness={"kind": "scripted", "script": "s.yaml"})
    assert seat_of(scripted, "o/r", "agent-01").endpoint is None


def test_slots_take_runs_by_agent_number_and_bind_their_own_kind_model_and_endpoint(
        tmp_path: Path) -> None:
    settings = _settings(tmp_path, endpoints=ENDPOINTS,
                         harness={"kind": "claude", "model": "home", "binary": "/x/claude",
                                  "model_key_file": "keys/k"},
                         targets=[{"repo": "o/r", "agents": [
                             {"model": "opus"},
                             {"kind": "codex", "model": "gpt", "endpoint": "oai"},
                             {"kind": "claude", "endpoint": "anth"}]}])
    seats = [seat_of(settings, "o/r", f"agent-{n:02d}") for n in range(1, 5)]
    assert [s.label for s in seats] == ["claude:opus@default", "codex:gpt@oai",
                                        "claude:home@anth", "claude:opus@default"]
    assert seats[0].harness.binary == "/x/claude"  # same kind: the rest from [harness]
    assert seats[1].harness.binary is None  # another kind inherits nothing
    assert (seats[1].harness.base_url, seats[1].harness.model_key_file) == (
        "http://127.0.0.1:2/v1", "keys/o")
    assert seats[2].harness.model_key_file == "keys/a"
    assert [slot_index(f"agent-{n:02d}", 3) for n in (1, 2, 3, 4)] == [0, 1, 2, 0]
    assert endpoint_users(settings) == {"anth": ["o/r"], "oai": ["o/r"], "default": ["o/r"]}
    assert len(all_seats(settings)) == 4  # [harness]'s own seat (no model override) too


@pytest.mark.parametrize(("data", "words"), [
    ({"targets": [{"repo": "o/r", "agents": [{"kind": "codex"}]}]},
     "targets.0.agents.0: kind 'codex' differs from [harness] kind 'claude'"),
    ({"targets": [{"repo": "o/r", "agents": [{"endpoint": "nope"}]}]},
     "targets.0.agents.0.endpoint = 'nope' names no [endpoints.nope]"),
    ({"review": {"endpoint": "nope"}}, "review.endpoint = 'nope'"),
    ({"endpoints": {"default": {}}}, "endpoints.default: not a usable endpoint name"),
    ({"targets": [{"repo": "o/r", "agents": [{"kind": "scripted"}]}]},
     "kind \"scripted\" needs a script"),
    ({"endpoints": {"e": {"probe": "ftp://x"}}}, "neither \"models\" nor an http(s) URL"),
])
def test_fleet_settings_that_cannot_work_are_refused_naming_the_field_and_fix(
        tmp_path: Path, data: dict[str, Any], words: str) -> None:
    with pytest.raises(ValueError, match="fix") as caught:
        _settings(tmp_path, harness={"kind": "claude"}, **data)
    assert words in str(caught.value)


def test_judges_take_their_own_model_and_endpoint_or_refuse_a_keyless_other_kind(
        tmp_path: Path) -> None:
    base = {"harness": {"kind": "claude", "model": "m", "model_key_file": "keys/k"},
            "endpoints": ENDPOINTS}
    seat = judge_seat(_settings(tmp_path, review={"kind": "codex", "model": "j",
                                                  "endpoint": "oai"}, **base))
    assert seat.label == "codex:j@oai"
    assert judge_seat(_settings(tmp_path, review={"model": "j"}, **base)).label == \
        "claude:j@default"
    with pytest.raises(ConfigError, match="needs a key of its own"):
        judge_seat(_settings(tmp_path, review={"kind": "codex"}, **base))
