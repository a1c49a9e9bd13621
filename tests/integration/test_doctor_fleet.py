"""``doctor`` on a fleet: each named endpoint is probed, each target's slot has what
its harness kind needs (script; binary and 0600 key)."""

from __future__ import annotations

import os
from pathlib import Path

from outerloop.config import Settings, load_settings
from outerloop.doctor.fleet import check_endpoints, check_fleet_seats
from tests.harness.models import AnthropicModel
from tests.support import AGENTS, make_home


def _fleet(tmp_path: Path, url: str) -> Settings:
    settings = make_home(tmp_path)
    key = settings.home / "keys" / "west"
    key.write_text("sk-west-key-0123\n")
    os.chmod(key, 0o600)
    config = settings.home / "outerloop.toml"
    text = config.read_text()
    text = text[:text.index("[[targets]]")] + f"""
[endpoints.west]
base_url = "{url}"
key_file = "keys/west"
probe = "models"

[[targets]]
repo = "demo/tinytsp"
[[targets.agents]]
kind = "scripted"
script = "{AGENTS / 'tinytsp-2opt.yaml'}"
[[targets.agents]]
kind = "claude"
binary = "{tmp_path / 'no-such-claude'}"
endpoint = "west"
"""
    config.write_text(text)
    return load_settings(settings.home)


def test_doctor_probes_each_endpoint_and_checks_each_slot_by_its_kind(tmp_path: Path) -> None:
    with AnthropicModel([]) as model:
        settings = _fleet(tmp_path, model.url)
        (up,) = check_endpoints(settings)
        model.down = True
        (down,) = check_endpoints(settings)
    assert up.status == "ok" and "endpoint west" in up.name and "demo/tinytsp" in up.detail
    assert down.status == "fail" and "overload" in down.detail and down.fix
    seats = {c.name: c for c in check_fleet_seats(settings)}
    assert seats["agent slot demo/tinytsp[0]"].status == "ok"
    assert seats["agent slot demo/tinytsp[1] binary"].status == "fail"
    assert "npm install" in seats["agent slot demo/tinytsp[1] binary"].fix
    assert seats["agent slot demo/tinytsp[1] key"].status == "ok"


def test_doctor_says_nothing_more_for_a_home_with_one_harness(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    assert check_endpoints(settings) == [] and check_fleet_seats(settings) == []
