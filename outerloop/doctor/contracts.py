"""Each target's contract on its default branch: valid, and which of its fields this
version ignores. A forge that cannot be reached is reported, not failed."""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok


def check_contracts(settings: Settings) -> list[Check]:
    if not settings.targets:
        return [ok("contracts", "no targets configured")]
    from outerloop.contract import (
        CONTRACT_FILE,
        ContractInvalid,
        check_target_is_not_the_kernel,
        load_contract_text,
    )
    from outerloop.contract_fields import ignored_field_warnings
    from outerloop.errors import OuterloopError
    from outerloop.forge.factory import make_forge

    found: list[str] = []
    bad: list[str] = []
    for target in settings.targets:
        try:
            check_target_is_not_the_kernel(target.repo)
        except OuterloopError as exc:
            bad.append(str(exc))
            continue
        try:
            forge = make_forge(settings)
            head = forge.branch_head(target.repo, forge.default_branch(target.repo))
            raw = forge.read_file(target.repo, CONTRACT_FILE, head) if head else None
        except OuterloopError as exc:
            found.append(f"{target.repo}: not read ({exc})")
            continue
        if raw is None:
            bad.append(f"{target.repo}: no {CONTRACT_FILE} on the default branch")
            continue
        try:
            contract = load_contract_text(raw.decode("utf-8", "replace"), target.repo)
        except ContractInvalid as exc:
            bad.append(f"{target.repo}: {'; '.join(exc.errors)}")
            continue
        notes = ignored_field_warnings(contract)
        if target.self_initiated:
            notes.append("[[targets]] self_initiated: not supported by this version; ignored")
        found.append(f"{target.repo}: valid" + "".join(f"; warning: {n}" for n in notes))
    if bad:
        return [fail("contracts", " | ".join(bad + found),
                     f"fix the target's {CONTRACT_FILE} (check it with `outerloop contract "
                     f"check FILE`)")]
    return [ok("contracts", " | ".join(found))]
