"""An eval pair as one job: its neutral name, its hidden order, its plan and its files.

The two sides of a pair (the base tree and the candidate) run **one after the other
in one job**, on one allocation, so neither is timed while the other burns the same
CPUs, and both get the same node, variables and path shapes. Nothing a side can see
says which side it is or that it is an eval:

- the job is ``ol-<run>-<token>``, the token a digest of a secret salt the run's ledger
  keeps (``SeedsDrawn.salt``), so a retried submission finds its jobs by name again;
- the sides run in ``trees/<job>/0`` and ``trees/<job>/1`` (the shape of a two-task
  launch) in an order drawn from the same salt; which one is the base is written only
  where the kernel reads it (``jobs/<job>/plan.json``, outside every grant) and in the
  ledger (``EvalPair.first``);
- each side's HOME is ``jobs/<job>/<slot>/home``; its stdout, stderr and exit code are
  written by the job's kernel process (``attempt/measure.py``) beside it.

**Couples.** Pairs come in order-balanced couples: two pair jobs under one hidden seed,
the base first in one and the candidate first in the other (``couple_order``: the salt
draws which of the two runs first). A benchmark whose numbers depend on what ran before
them in the job (a warm page cache, node-local data) favours whichever side runs second
by some ``e``; the couple's mean gain, ``(d_AB + d_BA) / 2``, holds ``+e`` once and
``-e`` once, so the gate's unit (``gate.judge``) is unbiased whatever ``e`` is, and
``(d_AB - d_BA) / 2`` estimates ``e`` itself. A couple is two jobs of today's shape,
not one job of four evals: every positional effect of a two-side job then cancels
exactly (in ``A B B A`` the positions 1 and 4 hold the base, 2 and 3 the candidate; a
"the first eval of a job is cold" effect would favour the candidate by ``e / 2``), and
each job keeps the exactly-once identity a pair job has (its name, its one re-run).

A benchmark with a trusted scorer (``score``) also gets, per side, a fresh checkout of
the base tree (``trees/<job>/score-<slot>``) the scorer runs in, and the side's
``outputs`` copied out of the candidate's tree into ``jobs/<job>/<slot>/score/outputs``.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Literal

import msgspec

from outerloop.atomic import write_atomic
from outerloop.contract import Benchmark
from outerloop.run.paths import RunPaths
from outerloop.time_caps import pair_minutes

Role = Literal["base", "cand"]
PLAN_FILE = "plan.json"
SCORE_DIR = "score"
SIDE_HOME = "home"
OUTPUTS_DIR = "outputs"
PROBLEM_FILE = "problem"
MAX_SEED = 2**31 - 2
TOKEN_CHARS = 10


class SidePlan(msgspec.Struct, frozen=True, kw_only=True):
    role: Role
    tree: str
    score_tree: str | None = None


class PairPlan(msgspec.Struct, frozen=True, kw_only=True):
    """What one pair job runs, written by the kernel before it submits the job."""

    run_id: str
    benchmark: str
    metric: str
    command: str
    seed: int
    minutes: int
    """Each side's limit (and the scorer's)."""
    sides: list[SidePlan]
    seed_env: str | None = None
    score: str | None = None
    outputs: str | None = None
    gpus: int = 0
    deps: str | None = None
    """The target's dependency cache both sides (and the scorer) read: the one built
    from the run's base lock, the same for either side."""


def _digest(salt: str, *parts: object) -> str:
    text = ":".join([salt, *(str(p) for p in parts)])
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def pair_name(run_id: str, salt: str, label: str, index: int) -> str:
    """``ol-<run>-<token>``: says nothing of base, candidate or eval."""
    return f"ol-{run_id}-{_digest(salt, 'name', label, index)[:TOKEN_CHARS]}"


def base_first(salt: str, label: str, index: int) -> bool:
    """Whether the base side of pair ``(label, index)`` runs first (hidden, per pair)."""
    return int(_digest(salt, "order", label, index)[:8], 16) % 2 == 0


def look_label(look: int) -> str:
    """The pair-name label of look ``look``'s pairs (the first look's own pairs: "")."""
    return f"l{look}" if look else ""


COUPLE = 2
"""Pair jobs per couple: one with the base first, one with the candidate first."""


def couple_order(salt: str, label: str, couple: int, half: int) -> bool:
    """Whether the base runs first in half ``half`` (0: the couple's first job, 1: its
    second) of couple ``couple``: drawn from the salt for the first half, the other
    order for the second, so every couple runs each order once."""
    first = base_first(salt, label, couple)
    return first if half == 0 else not first


def later_seed(salt: str, index: int) -> int:
    """The hidden seed of own couple ``index`` of a later look (one drawn per couple;
    a pair alone, in earlier versions)."""
    return int(_digest(salt, "seed", index)[:12], 16) % MAX_SEED + 1


def salt_of(salt: str, seeds: list[int], run_id: str) -> str:
    """The submission's salt; runs drawn before salts existed derive one from their
    hidden seeds (never shown to the agent either)."""
    return salt or _digest(run_id, *seeds)


def side_dir(paths: RunPaths, name: str, slot: int) -> Path:
    return paths.job_dir(name) / str(slot)


def score_dir(paths: RunPaths, name: str, slot: int) -> Path:
    return side_dir(paths, name, slot) / SCORE_DIR


def plan_path(paths: RunPaths, name: str) -> Path:
    return paths.job_dir(name) / PLAN_FILE


def make_plan(paths: RunPaths, run_id: str, name: str, benchmark: Benchmark, seed: int,
              minutes: int, gpus: int, first: Role, deps: Path | None = None) -> PairPlan:
    roles: list[Role] = ["base", "cand"] if first == "base" else ["cand", "base"]
    sides = [SidePlan(role=role, tree=str(paths.tree(name, slot)),
                      score_tree=str(paths.tree(name) / f"score-{slot}")
                      if benchmark.score else None)
             for slot, role in enumerate(roles)]
    return PairPlan(run_id=run_id, benchmark=benchmark.name, metric=benchmark.metric,
                    command=benchmark.command, seed=seed, minutes=minutes, sides=sides,
                    seed_env=benchmark.seed_env, score=benchmark.score,
                    outputs=benchmark.outputs, gpus=gpus,
                    deps=str(deps) if deps is not None else None)


def write_plan(paths: RunPaths, name: str, plan: PairPlan) -> None:
    where = plan_path(paths, name)
    where.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(where, msgspec.json.encode(plan))


def read_plan(paths: RunPaths, name: str) -> PairPlan | None:
    try:
        return msgspec.json.decode(plan_path(paths, name).read_bytes(), type=PairPlan)
    except (OSError, msgspec.ValidationError, msgspec.DecodeError):
        return None


def slot_of(plan: PairPlan, role: Role) -> int:
    return next(slot for slot, side in enumerate(plan.sides) if side.role == role)


def metric_dir(paths: RunPaths, name: str, plan: PairPlan, role: Role) -> Path:
    """Where the stdout the gate reads for ``role`` is: the scorer's, else the side's."""
    slot = slot_of(plan, role)
    return score_dir(paths, name, slot) if plan.score else side_dir(paths, name, slot)


def problem(paths: RunPaths, name: str, plan: PairPlan, role: Role) -> str | None:
    """Why the job's kernel process found ``role``'s side unmeasurable, or None."""
    slot = slot_of(plan, role)
    for where in (side_dir(paths, name, slot), score_dir(paths, name, slot)):
        try:
            text = (where / PROBLEM_FILE).read_text(encoding="utf-8").strip()
        except OSError:
            continue
        if text:
            return text
    return None


def job_minutes(plan: PairPlan) -> int:
    """The pair job's limit: each side (and its scorer) in turn, plus slack."""
    return pair_minutes(plan.minutes, bool(plan.score), len(plan.sides))
