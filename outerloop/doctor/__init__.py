"""``outerloop doctor``: a preflight of everything a home needs, one check per concern.

Each module here holds independent check functions ``(Settings) -> list[Check]``;
``CHECKS`` lists them in the order they print. A check that raises is reported as a
failed check, never a crash, so one broken probe never hides the others. A new
concern (the sandbox, say) is one more module and one more entry in ``CHECKS``.
"""

from __future__ import annotations

from collections.abc import Callable

from outerloop.config import Settings
from outerloop.doctor.archive import check_archive
from outerloop.doctor.base import Check
from outerloop.doctor.contracts import check_contracts
from outerloop.doctor.driver import check_tick_driver
from outerloop.doctor.environment import check_environment
from outerloop.doctor.forge import check_forge
from outerloop.doctor.harness import (
    check_endpoint,
    check_endpoint_from_compute,
    check_harness_binary,
    check_model_key,
)
from outerloop.doctor.home import check_disk, check_flock, check_home
from outerloop.doctor.ledger import check_ledger
from outerloop.doctor.sandbox import check_sandbox
from outerloop.doctor.slurm import check_slurm
from outerloop.doctor.tools import check_git

__all__ = ["CHECKS", "Check", "run_checks"]

CheckFn = Callable[[Settings], list[Check]]

CHECKS: list[CheckFn] = [
    check_home, check_flock, check_disk, check_git, check_slurm, check_forge,
    check_harness_binary, check_model_key, check_endpoint, check_endpoint_from_compute,
    check_contracts, check_tick_driver, check_archive, check_sandbox, check_environment,
    check_ledger,
]


def run_checks(settings: Settings, checks: list[CheckFn] | None = None) -> list[Check]:
    results: list[Check] = []
    for check in checks or CHECKS:
        try:
            results.extend(check(settings))
        except Exception as exc:  # a broken check is a failed check, never a crash
            results.append(Check(check.__name__.removeprefix("check_"), "fail",
                                 f"the check itself failed: {exc!r}", "report this"))
    return results
