"""What a contract lets a run write: the paths no contract may open whatever it says
(``forbidden_reason``), the eval-only paths (``held_under``), and scope
(``path_violation``, ``scope_violations``, ``touches_shared``). Component-wise and
case-insensitive, on ``contract_paths``' reading of a repository path."""

from __future__ import annotations

from collections.abc import Iterable

from outerloop.contract import Contract
from outerloop.contract_paths import (
    fold_component,
    forbidden_component,
    is_under,
    split_repo_path,
)


def forbidden_reason(contract: Contract, path: str) -> str | None:
    """Why ``path`` may never be written whatever the contract says, or None.

    Component-wise and case-insensitive, so ``.GitHub/x``, ``a/.git/b`` and ``.GIT.``
    are all caught. A path that is not a clean repo-relative path is refused too.
    """
    parts = split_repo_path(path)
    if parts is None:
        return "not a clean repo-relative path"
    reason = forbidden_component(parts)
    if reason:
        return reason
    folded = [fold_component(p) for p in parts]
    road = [fold_component(p) for p in split_repo_path(contract.roadmap) or []]
    if road and is_under(folded, road):
        return f"the roadmap {contract.roadmap}"
    lock = contract.dependencies.requirements if contract.dependencies else ""
    if lock and folded == [fold_component(p) for p in split_repo_path(lock) or []]:
        return f"the dependency lock {lock} (jobs use what the kernel built from the base's)"
    return None


def path_violation(contract: Contract, path: str) -> str | None:
    """Why the run may not write ``path`` (forbidden wins over allowed), or None if it may."""
    reason = forbidden_reason(contract, path)
    if reason:
        return f"forbidden: {reason}"
    parts = split_repo_path(path) or []
    held = held_under(path, contract.eval_only)
    if held is not None:
        return f"eval-only data {held} (only the scorer reads it)"
    for prefix in [*contract.scope.allowed, *contract.scope.shared]:
        if is_under(parts, split_repo_path(prefix) or []):
            return None
    return "outside scope.allowed"


def held_under(path: str, held: Iterable[str]) -> str | None:
    """The entry of ``held`` (eval-only paths) that ``path`` is or lies under, or None.

    Component-wise and case-insensitive like the forbidden paths, so ``Data/Labels.csv``
    is the eval-only ``data/labels.csv``: whoever withholds or refuses uses this one test."""
    folded = [fold_component(p) for p in split_repo_path(path) or []]
    for entry in held:
        prefix = [fold_component(p) for p in split_repo_path(entry) or []]
        if prefix and is_under(folded, prefix):
            return entry
    return None


def path_allowed(contract: Contract, path: str) -> bool:
    """True when a run may write ``path``: under an allowed/shared prefix and not forbidden."""
    return path_violation(contract, path) is None


def scope_violations(contract: Contract, paths: Iterable[str]) -> list[str]:
    """The paths (in order, each once) a run may not write; empty means in scope."""
    out: list[str] = []
    seen: set[str] = set()
    for path in paths:
        if path not in seen and not path_allowed(contract, path):
            out.append(path)
        seen.add(path)
    return out


def touches_shared(contract: Contract, paths: Iterable[str]) -> bool:
    """True when a change touches ``scope.shared`` (siblings must be re-measured)."""
    prefixes = [split_repo_path(p) or [] for p in contract.scope.shared]
    return any(is_under(split_repo_path(path) or [], prefix)
               for path in paths for prefix in prefixes)
