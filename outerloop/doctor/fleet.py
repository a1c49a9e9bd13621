"""A fleet of models: each target's agent slots and the judges' seat have what their
harness kind needs (a script; a CLI binary that runs and a readable 0600 key), and each
named endpoint in use answers its probe (``harness/probe.py``; without a probe, any
HTTP answer from its base URL's list-models path). Nothing is printed for a home with
neither ``[endpoints]`` nor a target's ``agents``: ``[harness]``'s own checks cover it.
"""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok
from outerloop.errors import ConfigError
from outerloop.fleet import Endpoint, Seat, agent_seats, endpoint, endpoint_users, judge_seat
from outerloop.fleet_settings import MODELS_PROBE
from outerloop.harness.probe import probe
from outerloop.kinds import MODEL_CLIS
from outerloop.private_files import read_key


def _uses_fleet(settings: Settings) -> bool:
    return bool(settings.endpoints) or any(t.agents for t in settings.targets)


def _seat_checks(settings: Settings, name: str, seat: Seat) -> list[Check]:
    harness = seat.harness
    if harness.kind == "scripted":
        if harness.script and settings.path(harness.script).is_file():
            return [ok(name, f"scripted: {settings.path(harness.script)}")]
        return [fail(name, f"scripted: script {harness.script or '(unset)'} missing",
                     "set the slot's script to a YAML script (docs/scripted-agent.md)")]
    from outerloop.harness.agent_cli import binary_version

    cli = MODEL_CLIS[harness.kind]
    out: list[Check] = []
    binary = harness.binary or cli.binary
    try:
        out.append(ok(f"{name} binary", f"{seat.label}: {binary}: {binary_version(binary)}"))
    except ConfigError as exc:
        out.append(fail(f"{name} binary", str(exc).split("; fix:")[0],
                        f"npm install -g {cli.package} or set the slot's binary to its path"))
    if not harness.model_key_file:
        out.append(fail(f"{name} key", f"{seat.label}: no key file", "set key_file in its "
                        "[endpoints.NAME] (or [harness] model_key_file), chmod 600"))
        return out
    try:
        read_key(settings.path(harness.model_key_file))
        out.append(ok(f"{name} key", f"{settings.path(harness.model_key_file)} (0600)"))
    except ConfigError as exc:
        out.append(fail(f"{name} key", str(exc).split("; fix:")[0],
                        str(exc).split("; fix:")[-1].strip()))
    return out


def check_fleet_seats(settings: Settings) -> list[Check]:
    """Every target slot and the judges' seat, by what its kind needs."""
    if not _uses_fleet(settings):
        return []
    out: list[Check] = []
    for target in settings.targets:
        for index, seat in enumerate(agent_seats(settings, target.repo) if target.agents
                                     else []):
            out.extend(_seat_checks(settings, f"agent slot {target.repo}[{index}]", seat))
    try:
        out.extend(_seat_checks(settings, "judges' seat", judge_seat(settings)))
    except ConfigError as exc:
        out.append(fail("judges' seat", str(exc).split("; fix:")[0],
                        str(exc).split("; fix:")[-1].strip()))
    return out


def _asked(named: Endpoint) -> Endpoint:
    """What doctor asks of an endpoint without a probe: its list-models path, keyless."""
    if named.probe or not named.base_url:
        return named
    return Endpoint(named.name, named.base_url, None, MODELS_PROBE)


def check_endpoints(settings: Settings) -> list[Check]:
    """Each named endpoint a seat uses, probed once now."""
    if not _uses_fleet(settings):
        return []
    out = []
    for name, users in endpoint_users(settings).items():
        if name not in settings.endpoints:
            continue  # "default": [harness]'s own, checked by check_endpoint
        named = _asked(endpoint(settings, name))
        if not named.probe:
            out.append(ok(f"endpoint {name}", "no probe and no base_url (the CLI's default "
                          "API); refusals alone set its latch"))
            continue
        seen = probe(named, settings.home)
        used = f" (used by {', '.join(users)})" if users else " (used by no seat)"
        if seen.up:
            out.append(ok(f"endpoint {name}", seen.detail + used))
        else:
            out.append(fail(f"endpoint {name}", f"{seen.refusal or 'down'}: {seen.detail}{used}",
                            "check the endpoint's base_url, key_file and the network/proxy; "
                            "its runs wait while it is down"))
    return out
