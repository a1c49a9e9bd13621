"""``outerloop doctor``: a preflight of everything a home needs, one check per concern.

Each module here holds independent check functions ``(Settings) -> list[Check]`` (or
``(Settings, Options)`` for those the command line steers); ``all_checks`` lists them in
the order they print. A check that raises is reported as a failed check, never a
crash, so one broken probe never hides the others. A check says ok only for what it
saw: what it could not look at is a warning or a failure, never ok. A new concern
(the sandbox, say) is one more module and one more entry in ``all_checks``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import suppress
from functools import update_wrapper

from outerloop.config import Settings
from outerloop.doctor.archive import check_archive
from outerloop.doctor.base import Check, Options
from outerloop.doctor.benchmarks import check_benchmark_placement, check_time_caps
from outerloop.doctor.compute_node import ComputeNodeCheck
from outerloop.doctor.contracts import check_contracts
from outerloop.doctor.deps import check_deps
from outerloop.doctor.driver import check_tick_driver
from outerloop.doctor.environment import check_environment
from outerloop.doctor.fleet import check_endpoints, check_fleet_seats
from outerloop.doctor.forge import check_forge
from outerloop.doctor.harness import (
    check_endpoint,
    check_endpoint_from_compute,
    check_harness_binary,
    check_model_key,
)
from outerloop.doctor.home import check_disk, check_flock, check_home
from outerloop.doctor.ledger import check_ledger
from outerloop.doctor.pass_env import check_pass_env
from outerloop.doctor.review import check_review
from outerloop.doctor.sandbox import check_sandbox
from outerloop.doctor.slurm import check_slurm
from outerloop.doctor.tools import check_git
from outerloop.doctor.waits import check_human_waits

__all__ = ["CHECKS", "Check", "Options", "all_checks", "iter_checks", "run_checks"]

CheckFn = Callable[[Settings], list[Check]]


def all_checks(options: Options | None = None) -> list[CheckFn]:
    """Every check in the order it prints, those the command line steers bound to
    ``options``."""
    options = options or Options()

    def steered(check: Callable[[Settings, Options], list[Check]]) -> CheckFn:
        def bound(settings: Settings) -> list[Check]:
            return check(settings, options)

        return update_wrapper(bound, check)

    return [
        check_home, check_flock, check_disk, check_git, check_slurm, check_forge,
        check_harness_binary, check_model_key, check_endpoint, check_endpoint_from_compute,
        check_fleet_seats, check_endpoints,
        check_contracts, check_deps, check_benchmark_placement, check_time_caps,
        steered(check_review),
        check_tick_driver, steered(check_pass_env), check_archive, check_sandbox,
        ComputeNodeCheck(options), check_environment, check_ledger, check_human_waits,
    ]


CHECKS: list[CheckFn] = all_checks()
"""The default checks (the job-based one holds its submitted jobs between ``start``
and its call: ``run_checks`` with no list builds a fresh set)."""


def _name(check: CheckFn) -> str:
    return str(getattr(check, "__name__", "check")).removeprefix("check_")


def run_checks(settings: Settings, checks: list[CheckFn] | None = None) -> list[Check]:
    """Each check's lines in order (``iter_checks``, collected)."""
    return [line for lines in iter_checks(settings, checks) for line in lines]


def iter_checks(settings: Settings,
                checks: list[CheckFn] | None = None) -> Iterator[list[Check]]:
    """Each check's lines as soon as it has run, in order, so a command can print them
    while the slower checks (a job on a compute node, a judge session) still run. A
    check with a ``start`` (one that waits for a job) is started before the first check
    runs, so its job runs meanwhile."""
    checks = checks or all_checks()
    for check in checks:
        start = getattr(check, "start", None)
        if callable(start):
            with suppress(Exception):  # reported when the check itself runs
                start(settings)
    for check in checks:
        try:
            yield check(settings)
        except Exception as exc:  # a broken check is a failed check, never a crash
            yield [Check(_name(check), "fail", f"the check itself failed: {exc!r}",
                         "report this")]
