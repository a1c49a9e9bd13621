"""Which harness, model and endpoint each run and each judge uses (pure).

A **seat** is one resolved agent slot: the harness settings a session runs with (kind,
model, binary, base URL, key file, ...) and the name of the endpoint whose outage latch
it obeys. Resolution, in order:

1. a target's ``agents`` slot, or ``[harness]`` when the target lists none;
2. a slot of ``[harness]``'s kind (or no kind) starts from ``[harness]``; a slot of
   another kind starts from that kind's defaults (``config`` refuses a model kind
   without an endpoint, a scripted one without a script);
3. a named endpoint sets ``base_url`` and ``model_key_file``.

A run takes its slot from its agent name, which intake gives as the lowest free
``agent-NN`` among the target's live runs: slot ``(NN-1) mod len(agents)``. So runs fill
the slots in turn and a slot freed by an ended run is the next one taken; nothing new
is recorded (the agent name is in ``run_queued``), and a run keeps its slot for life
(an edit of that slot's settings reaches its next leg, as an edit of ``[harness]``
does).

The endpoint of a seat: the named one; else ``default`` (``[harness]``'s own base URL
and key) for a model kind; else none (a scripted seat without an endpoint never waits).
"""

from __future__ import annotations

import contextlib
import re
from dataclasses import dataclass

from outerloop.config import HarnessSettings, Settings, TargetSettings
from outerloop.errors import ConfigError
from outerloop.fleet_settings import DEFAULT_ENDPOINT, AgentSlotSettings

__all__ = [
    "DEFAULT_ENDPOINT",
    "Endpoint",
    "Seat",
    "agent_seats",
    "all_seats",
    "endpoint",
    "endpoint_users",
    "home_seat",
    "judge_seat",
    "seat_key",
    "seat_of",
    "slot_index",
]

_AGENT_RE = re.compile(r"^agent-(\d+)$")


@dataclass(frozen=True)
class Seat:
    """One resolved slot: what a session runs with, and the endpoint it waits on."""

    harness: HarnessSettings
    endpoint: str | None

    @property
    def label(self) -> str:
        """``kind[:model][@endpoint]``: what ``status`` shows."""
        model = f":{self.harness.model}" if self.harness.model else ""
        where = f"@{self.endpoint}" if self.endpoint else ""
        return f"{self.harness.kind}{model}{where}"


@dataclass(frozen=True)
class Endpoint:
    """One model API as the latch and the probe see it."""

    name: str
    base_url: str | None
    key_file: str | None
    probe: str | None


def _target(settings: Settings, repo: str) -> TargetSettings | None:
    return next((t for t in settings.targets if t.repo == repo), None)


def _resolve(settings: Settings, slot: AgentSlotSettings | None) -> Seat:
    base = settings.harness
    if slot is None:
        return _with_endpoint(settings, base, base.endpoint)
    same = slot.kind is None or slot.kind == base.kind
    start = base if same else HarnessSettings(kind=slot.kind or base.kind)
    # the fields as they are, not ``model_dump``: it would build the model's serializer
    update = {k: list(v) if isinstance(v, list) else v for k in type(slot).model_fields
              if k != "endpoint" and (v := getattr(slot, k)) is not None}
    harness = start.model_copy(update=update)
    return _with_endpoint(settings, harness, slot.endpoint if slot.endpoint or not same
                          else base.endpoint)


def _with_endpoint(settings: Settings, harness: HarnessSettings, name: str | None) -> Seat:
    if name is not None:
        named = settings.endpoints.get(name)
        if named is None:
            raise ConfigError(f"endpoint {name!r} is not defined; fix: add [endpoints.{name}]")
        harness = harness.model_copy(update={"base_url": named.base_url,
                                             "model_key_file": named.key_file,
                                             "endpoint": name})
        return Seat(harness, name)
    return Seat(harness, None if harness.kind == "scripted" else DEFAULT_ENDPOINT)


def home_seat(settings: Settings) -> Seat:
    """``[harness]`` as it resolves on its own (a target with no ``agents``)."""
    return _resolve(settings, None)


def agent_seats(settings: Settings, repo: str) -> list[Seat]:
    """The target's seats in slot order (``[harness]`` alone when it lists none)."""
    target = _target(settings, repo)
    slots = target.agents if target is not None else []
    return [_resolve(settings, s) for s in slots] or [_resolve(settings, None)]


def slot_index(agent: str, slots: int) -> int:
    """The slot of agent ``agent-NN``: ``(NN-1) mod slots`` (another name: slot 0)."""
    found = _AGENT_RE.match(agent)
    return (int(found.group(1)) - 1) % slots if found and slots else 0


def seat_of(settings: Settings, repo: str, agent: str) -> Seat:
    """The seat a run of ``repo`` with agent name ``agent`` runs its legs in."""
    seats = agent_seats(settings, repo)
    return seats[slot_index(agent, len(seats))]


def seat_key(settings: Settings, repo: str, agent: str) -> str:
    """``kind`` or ``kind:model``: the harness and model a run of ``repo`` with agent name
    ``agent`` would run in now (``RunQueued.seat``, the leaderboard's row)."""
    harness = seat_of(settings, repo, agent).harness
    return f"{harness.kind}:{harness.model}" if harness.model else str(harness.kind)


def judge_seat(settings: Settings) -> Seat:
    """The judges' seat: ``[review] kind`` (default ``[harness]``'s), ``model``,
    ``endpoint``; a scripted judge runs ``[review] script``. Raises ``ConfigError`` for
    a model kind other than ``[harness]``'s with no endpoint of its own."""
    review, base = settings.review, settings.harness
    kind = review.kind or base.kind
    if kind == "scripted":
        if not review.script:
            raise ConfigError(
                "[review] script is not set but the judges are scripted; fix: set "
                "[review] script = \"path/to/judge.yaml\" (see examples/agents/"
                "judge-approve.yaml), or [review] kind = \"claude\" or \"codex\"")
        return _resolve(settings, AgentSlotSettings.model_construct(
            kind="scripted", script=review.script, endpoint=review.endpoint))
    if kind != base.kind and review.endpoint is None:
        raise ConfigError(
            f"[review] kind = {kind!r} but the agents run {base.kind!r}: a judge of another "
            f"kind needs a key of its own; fix: set [review] endpoint = \"NAME\" with "
            f"[endpoints.NAME], or [review] kind = {base.kind!r} or \"scripted\"")
    # validated already (``[review]``'s): constructed, not validated again
    return _resolve(settings, AgentSlotSettings.model_construct(
        kind=kind, model=review.model, endpoint=review.endpoint))


def all_seats(settings: Settings) -> list[Seat]:
    """Every distinct seat of the home: ``[harness]``'s, each target's, the judges'
    (when they resolve; ``doctor`` reports a judge that does not)."""
    seats = [home_seat(settings)]
    seats += [s for t in settings.targets for s in agent_seats(settings, t.repo)]
    with contextlib.suppress(ConfigError):
        seats.append(judge_seat(settings))
    out: list[Seat] = []
    for seat in seats:
        if seat not in out:
            out.append(seat)
    return out


def endpoint(settings: Settings, name: str) -> Endpoint:
    """The endpoint ``name`` (``default``: ``[harness]``'s base URL and key, no probe)."""
    if name == DEFAULT_ENDPOINT:
        return Endpoint(name, settings.harness.base_url, settings.harness.model_key_file, None)
    named = settings.endpoints[name]
    return Endpoint(name, named.base_url, named.key_file, named.probe)


def endpoint_users(settings: Settings) -> dict[str, list[str]]:
    """Each endpoint a seat uses, with the targets whose runs use it (in settings
    order; the judges' endpoint is listed with every target, since any run may be
    judged). Named endpoints no seat uses are listed with no target."""
    users: dict[str, list[str]] = {name: [] for name in settings.endpoints}
    try:
        judges = judge_seat(settings).endpoint if settings.review.judges else None
    except ConfigError:
        judges = None
    for target in settings.targets:
        names = {s.endpoint for s in agent_seats(settings, target.repo)} | {judges}
        for name in sorted(n for n in names if n is not None):
            users.setdefault(name, []).append(target.repo)
    return users
