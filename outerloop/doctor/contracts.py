"""Each target's contract on its default branch: valid, and which of its fields this
version ignores. A contract that could not be read (the forge unreachable, no such
repository) is a failure: doctor never says ok about a contract it has not seen.

``read_contracts`` is also what the checks that need a target's benchmarks (their
placement, the review panel's dry run) read them through."""

from __future__ import annotations

from dataclasses import dataclass

from outerloop.config import Settings
from outerloop.contract import Contract
from outerloop.doctor.base import Check, fail, ok, warn


@dataclass(frozen=True)
class TargetContract:
    """One target's contract as read from its default branch: ``contract`` when valid,
    else ``problem`` says why there is none (``read`` False: it could not be read)."""

    repo: str
    head: str | None = None
    contract: Contract | None = None
    problem: str = ""
    read: bool = True


def read_contracts(settings: Settings) -> list[TargetContract]:
    from outerloop.contract import CONTRACT_FILE, ContractInvalid, load_contract_text
    from outerloop.errors import OuterloopError
    from outerloop.forge.factory import make_forge
    from outerloop.selfrepo import check_target_is_not_the_kernel

    found = []
    for target in settings.targets:
        try:
            check_target_is_not_the_kernel(target.repo)
        except OuterloopError as exc:
            found.append(TargetContract(target.repo, problem=str(exc)))
            continue
        try:
            forge = make_forge(settings)
            head = forge.branch_head(target.repo, forge.default_branch(target.repo))
            raw = forge.read_file(target.repo, CONTRACT_FILE, head) if head else None
        except OuterloopError as exc:
            found.append(TargetContract(target.repo, problem=f"not read ({exc})", read=False))
            continue
        if raw is None:
            found.append(TargetContract(target.repo, head, problem=f"no {CONTRACT_FILE} on "
                                        f"the default branch"))
            continue
        try:
            contract = load_contract_text(raw.decode("utf-8", "replace"), target.repo)
        except ContractInvalid as exc:
            found.append(TargetContract(target.repo, head, problem="; ".join(exc.errors)))
            continue
        found.append(TargetContract(target.repo, head, contract))
    return found


def check_contracts(settings: Settings) -> list[Check]:
    if not settings.targets:
        return [ok("contracts", "no targets configured")]
    from outerloop.attempt.in_process import FIX, doctor_detail, is_in_process
    from outerloop.contract import CONTRACT_FILE
    from outerloop.contract_fields import ignored_field_warnings

    found: list[str] = []
    bad: list[str] = []
    unread: list[str] = []
    in_process: list[str] = []
    targets = {t.repo: t for t in settings.targets}
    for read in read_contracts(settings):
        if read.contract is None:
            (bad if read.read else unread).append(f"{read.repo}: {read.problem}")
            continue
        notes = ignored_field_warnings(read.contract)
        if targets[read.repo].self_initiated:
            notes.append("[[targets]] self_initiated: not supported by this version; ignored")
        found.append(f"{read.repo}: valid" + "".join(f"; warning: {n}" for n in notes))
        names = [b.name for b in read.contract.benchmarks if is_in_process(b)]
        if names:
            in_process.append(doctor_detail(read.repo, names))
    checks = []
    if in_process:
        checks.append(warn("scorer", " | ".join(in_process), FIX))
    if unread:
        checks.append(fail("contracts", " | ".join(unread + found),
                           "make each target readable by the forge: import it (`outerloop "
                           "forge repo import DIR --as OWNER/NAME`) or fix [[targets]] repo, "
                           "the forge token and access"))
    if bad:
        checks.append(fail("contracts", " | ".join(bad + ([] if unread else found)),
                           f"fix the target's {CONTRACT_FILE} (check it with `outerloop "
                           f"contract check FILE`)"))
    if unread or bad:
        return checks
    return [ok("contracts", " | ".join(found)), *checks]
