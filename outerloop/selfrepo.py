"""outerloop's own repository, as this running copy knows it.

The kernel refuses to target its own repository whatever a contract says: a run there
could rewrite the rules it is judged by (docs/contract.md). A copy that runs from a git
checkout (an editable install, a clone on the cluster) knows its repository from that
checkout's remotes; a copy installed from a package has no checkout, and then only the
names an operator gives (none today) would count. Remotes that are local paths name no
forge repository and are skipped.
"""

from __future__ import annotations

import functools
import re
import subprocess
from pathlib import Path

from outerloop.errors import ContractError

GIT_TIMEOUT_S = 10
# https://host/owner/name(.git), ssh://user@host[:port]/owner/name, user@host:owner/name
_URL_RE = re.compile(r"^(?:[a-z][a-z0-9+.-]*://[^/]+/|[^/@:\s]+@[^/:\s]+:)(?P<path>\S+?)/?$")


def repo_of_url(url: str) -> str | None:
    """``owner/name`` of a forge remote URL (the last two path components, ``.git``
    dropped); None for a local path or anything else."""
    match = _URL_RE.match(url.strip())
    if match is None:
        return None
    parts = [p for p in match.group("path").split("/") if p]
    if len(parts) < 2:
        return None
    name = parts[-1][:-4] if parts[-1].endswith(".git") else parts[-1]
    return f"{parts[-2]}/{name}" if name else None


def _git(root: Path, *args: str) -> str:
    try:
        done = subprocess.run(["git", "-C", str(root), *args], capture_output=True,
                              text=True, timeout=GIT_TIMEOUT_S, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout if done.returncode == 0 else ""


@functools.cache
def kernel_repos() -> frozenset[str]:
    """``owner/name`` of every forge remote of the checkout this copy of outerloop runs
    from; empty when it is not a checkout of its own (installed from a package, or a
    package inside another repository)."""
    root = Path(__file__).resolve().parent.parent
    if not (root / "pyproject.toml").is_file():
        return frozenset()
    top = _git(root, "rev-parse", "--show-toplevel").strip()
    if not top or Path(top).resolve() != root:
        return frozenset()
    urls = (line.split()[1] for line in _git(root, "remote", "-v").splitlines()
            if len(line.split()) >= 2)
    return frozenset(repo for url in urls if (repo := repo_of_url(url)) is not None)


def _repo_key(repo: str) -> str:
    key = repo.strip().rstrip("/").casefold()
    return key[:-4] if key.endswith(".git") else key


def is_self_targeting(target_repo: str, kernel_repo: str | None) -> bool:
    """True when ``target_repo`` is outerloop's own repository (``owner/name``)."""
    return bool(kernel_repo) and _repo_key(target_repo) == _repo_key(kernel_repo or "")


def check_not_self_targeting(target_repo: str, kernel_repo: str | None) -> None:
    """Refuse a target that is the kernel's own repository: it could rewrite its rules."""
    if is_self_targeting(target_repo, kernel_repo):
        raise ContractError(f"target {target_repo} is outerloop's own repository; "
                            f"fix: remove it from the targets")


def check_target_is_not_the_kernel(target_repo: str) -> None:
    """``check_not_self_targeting`` against every repository this running copy of
    outerloop comes from (``kernel_repos``): the tick skips such a target and doctor fails."""
    for own in sorted(kernel_repos()):
        check_not_self_targeting(target_repo, own)
