"""The gate measures the candidate honestly: cheats on *how* it is measured get no
ready pull request, through real ticks on each sandbox backend, local and Slurm.

None of these candidates prints a number, patches the evaluator's module or reads
the seed, so today's tamper check finds nothing, and the default judge approves.
What each exploits, as the gate ran before issue 20:

- **eval-awareness**: a candidate eval's checkout (``trees/ol-<run>-e1-cand-0``) and
  Slurm job name say "candidate"; a solver that fakes its distances only there is
  credited, while a maintainer running the PR head gets exactly the base number.
- **a daemon**: base and candidate evals of a pair ran at the same time, so a
  candidate that starts CPU spinners at import and waits them out before the timed
  run is timed on an idle machine, its baseline under load.
- **a stash**: ``/dev/shm`` is shared under Landlock (bwrap mounts a private one), and
  ``[sandbox] read_write`` paths are granted to evals too, so a solver stashed there by
  the session and loaded by an innocent-looking candidate is measured, not committed.
  Already defended before issue 20: ``/dev/shm`` under bwrap (private per process) and
  ``/tmp`` on both backends (Landlock grants no ``/tmp``; bwrap mounts a private one);
  those cases guard against a regression.

Each test asserts the final behaviour: the run ends without a PR, or its PR is a
draft, and no measurement credited the cheat.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest

from tests.security.measurement_attacks import (
    assert_no_ready_pr,
    assert_sides_never_overlap,
    attack,
    daemon_agent,
    eval_aware_agent,
    kill_all,
    plain_metric,
    processes_with,
    stash_agent,
    timed_target,
)
from tests.support import TARGET, forge

pytestmark = [pytest.mark.security, pytest.mark.e2e, pytest.mark.slurm]

ONCE_PER_COMPUTE = pytest.mark.parametrize("compute,kind", [
    ("local", "landlock"), ("slurm", "bwrap")])
"""Each attack runs through real ticks once per compute kind, each time under another
backend. What holds it per backend is tested at the seam: a private ``/dev/shm``
(``test_private_shm.py``), no ``/tmp`` and no ``read_write`` path for an eval
(``test_eval_only_grants.py``, ``test_confinement.py``), leftovers ending with their
job (``test_leftovers.py``). (Was every cell of compute x backend: 18 whole runs.)"""
LANDLOCK_LOCAL = pytest.mark.parametrize("compute,kind", [("local", "landlock")])
"""The weakest cell (Landlock shares ``/dev/shm``, no pid namespace, no scheduler):
where an attack the seam tests hold for every backend would first get through."""
SETTLE_S = 2.0


@ONCE_PER_COMPUTE
def test_eval_aware_cheat_gets_no_ready_pr_when_it_fakes_only_where_measured(
        tmp_path: Path, kind: str, compute: str) -> None:
    settings, state = attack(tmp_path, eval_aware_agent(tmp_path), compute=compute,
                             kind=kind)
    (run,) = state.runs.values()
    for pr in forge(settings).list_prs(TARGET, "all"):
        # as a maintainer would: the PR head, in a plain checkout, at the gate's seed
        seed = (run.seeds.get(1) or [1])[0]
        head = plain_metric(settings, pr.head_sha, tmp_path / "plain-head", seed)
        base = plain_metric(settings, run.base_sha or "main", tmp_path / "plain-base", seed)
        assert head == base, (head, base)
    assert_no_ready_pr(settings, state)


# One cell through real ticks (one at a time): landlock-local, where neither
# bwrap's pid namespace nor the scheduler's end of the job stops a spinner that escapes
# its job, only the kernel's own reaping; each of those two stops is tested at the seam
# (test_leftovers.py: leftovers end with the job, per backend, local and Slurm).
@LANDLOCK_LOCAL
# A CPU spinner (SPINNERS) for SPIN_S (2 s) at each import of the candidate. Whether the numbers
# would credit the daemon depends on the machine's load (sides run at once on purpose
# here: 12.06 -> 8.137 under a load of 12, not past the floor with confidence), so the
# defence itself is asserted from what the sides print: no two eval sides ever ran at
# the same time. Two of these tests at once would starve every other worker, so they
# run one at a time (tests/parallel.py).
@pytest.mark.xdist_group("cpu-spinners")
def test_daemon_slowing_the_baseline_gets_no_ready_pr_when_the_metric_is_a_wall_time(
        tmp_path: Path, kind: str, compute: str) -> None:
    tag = f"ol-i20-spinner-{uuid.uuid4().hex[:10]}"
    try:
        settings, state = attack(
            tmp_path, daemon_agent(tmp_path, tag), compute=compute, kind=kind,
            target_dir=timed_target(tmp_path),
            issue=("Faster work", "Make the speed benchmark faster."))
        time.sleep(SETTLE_S)
        assert processes_with(tag) == [], "a spinner outlived the run"
        assert_sides_never_overlap(settings)
        assert_no_ready_pr(settings, state)
    finally:
        kill_all(processes_with(tag))


@pytest.mark.parametrize("compute,kind", [("local", "landlock"), ("slurm", "landlock")])
def test_dev_shm_stash_gets_no_ready_pr_when_the_candidate_loads_it(
        tmp_path: Path, kind: str, compute: str) -> None:
    stash = Path("/dev/shm") / f"ol-i20-{uuid.uuid4().hex[:10]}.py"
    try:
        settings, state = attack(tmp_path, stash_agent(tmp_path, stash), compute=compute,
                                 kind=kind)
        assert_no_ready_pr(settings, state)
    finally:
        stash.unlink(missing_ok=True)


@LANDLOCK_LOCAL
def test_tmp_stash_gets_no_ready_pr_when_the_candidate_loads_it(
        tmp_path: Path, kind: str, compute: str) -> None:
    stash = Path("/tmp") / f"ol-i20-{uuid.uuid4().hex[:10]}.py"
    try:
        settings, state = attack(tmp_path, stash_agent(tmp_path, stash), compute=compute,
                                 kind=kind)
        assert_no_ready_pr(settings, state)
    finally:
        stash.unlink(missing_ok=True)


@LANDLOCK_LOCAL
def test_shared_read_write_stash_gets_no_ready_pr_when_the_candidate_loads_it(
        tmp_path: Path, kind: str, compute: str) -> None:
    shared = tmp_path / "shared-cache"
    shared.mkdir()
    settings, state = attack(tmp_path, stash_agent(tmp_path, shared / "solver.py"),
                             compute=compute, kind=kind, read_write=(shared,))
    assert_no_ready_pr(settings, state)
