"""The settings of a fleet of models: named endpoints and per-target agent slots.

``[endpoints.NAME]`` names one model API (where it is, its key, how to ask whether it is
up); a target's ``agents`` list binds its runs to harness kinds, models and endpoints.
These are the operator's settings, not the contract's: the operator pays for the
models and holds their keys, and one endpoint serves several targets (its outage latch
is shared by them). A target's contract says what may be researched, never which
account pays for it. ``fleet.py`` resolves them against ``[harness]``; this module only
holds their shapes (below ``config`` so it needs no backend).
"""

from __future__ import annotations

import re

from pydantic import BaseModel, ConfigDict, Field, field_validator

from outerloop.kinds import HarnessKind

ENDPOINT_NAME_RE = r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$"
DEFAULT_ENDPOINT = "default"
"""The implicit endpoint of ``[harness]`` (its ``base_url`` and ``model_key_file``): the
one endpoint a home had before named endpoints. Reserved: no ``[endpoints]`` entry may
take the name."""

MODELS_PROBE = "models"
"""``probe = "models"``: ask the model API's own list-models call with the key."""


class EndpointSettings(BaseModel):
    """One model API: ``[endpoints.NAME]``."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    base_url: str | None = Field(default=None, description="the API's base URL (unset: the "
                                 "harness CLI's own default)")
    key_file: str | None = Field(default=None, description="0600 file holding the API key "
                                 "(relative to the home)")
    probe: str | None = Field(default=None, description="how the tick asks whether it is "
                              "up while runs use it: \"models\" (the API's list-models call "
                              "with the key) or an http(s) URL; unset: only a refused "
                              "session says it is down, and the latch lifts after a "
                              "cooldown with one probing leg")

    @field_validator("probe")
    @classmethod
    def _probe_form(cls, value: str | None) -> str | None:
        if value is None or value == MODELS_PROBE or re.match(r"^https?://\S+$", value):
            return value
        raise ValueError(f"{value!r} is neither \"{MODELS_PROBE}\" nor an http(s) URL; fix: "
                         f"probe = \"{MODELS_PROBE}\", a URL, or leave it out")


class AgentSlotSettings(BaseModel):
    """One agent slot of a target (an entry of ``[[targets]] agents``). Unset fields
    come from ``[harness]`` when the slot's kind is ``[harness]``'s (or unset); a slot of
    another model kind must name its endpoint (it shares no key with ``[harness]``)."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    kind: HarnessKind | None = Field(default=None, description="the slot's harness (unset: "
                                     "[harness] kind)")
    model: str | None = None
    endpoint: str | None = Field(default=None, description="a name under [endpoints] "
                                 "(unset: [harness]'s own endpoint)")
    script: str | None = Field(default=None, description="scripted: the YAML script")
    binary: str | None = None
    allowed_tools: list[str] | None = None
    max_retries: int | None = Field(default=None, ge=0)


def check_fleet(endpoints: dict[str, EndpointSettings], harness_kind: str,
                slots: list[tuple[str, AgentSlotSettings]],
                uses: list[tuple[str, str | None]]) -> None:
    """Every endpoint name usable and every name used defined; every slot complete.
    Raises ``ValueError`` naming the field and the fix (pydantic reports it)."""
    for name in endpoints:
        if name == DEFAULT_ENDPOINT or not re.match(ENDPOINT_NAME_RE, name):
            raise ValueError(f"endpoints.{name}: not a usable endpoint name (letters, digits, "
                             f". _ -; {DEFAULT_ENDPOINT!r} is [harness]'s own); fix: rename it")
    for name, named in endpoints.items():
        if named.probe == MODELS_PROBE and not named.base_url:
            raise ValueError(f"endpoints.{name}: probe = \"{MODELS_PROBE}\" asks the API "
                             f"under base_url, which is not set; fix: set base_url, or "
                             f"probe = an http(s) URL")
    for where, slot in slots:
        uses.append((f"{where}.endpoint", slot.endpoint))
        _check_slot(where, slot, harness_kind)
    for where, used in uses:
        if used is not None and used not in endpoints:
            known = ", ".join(sorted(endpoints)) or "none defined"
            raise ValueError(f"{where} = {used!r} names no [endpoints.{used}] ({known}); fix: "
                             f"add [endpoints.{used}] with base_url and key_file, or name a "
                             f"defined one")


def _check_slot(where: str, slot: AgentSlotSettings, harness_kind: str) -> None:
    """A slot of another kind than ``[harness]`` inherits nothing from it: a model kind
    must name its endpoint (its key), a scripted one its script."""
    if slot.kind is None or slot.kind == harness_kind:
        return
    if slot.kind == "scripted" and not slot.script:
        raise ValueError(f"{where}: kind \"scripted\" needs a script; fix: set "
                         f"script = \"path/to/script.yaml\" in the slot")
    if slot.kind != "scripted" and slot.endpoint is None:
        raise ValueError(f"{where}: kind {slot.kind!r} differs from [harness] kind "
                         f"{harness_kind!r}, so it has no key of its own; fix: set "
                         f"endpoint = \"NAME\" in the slot and define [endpoints.NAME] with "
                         f"base_url and key_file")
