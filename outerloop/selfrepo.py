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
