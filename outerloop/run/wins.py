"""A combination run's wins, as patches in the agent's home (``lanes/integrate.py``).

Each pull request the run combines is fetched into the kernel's clone of the run
(objects and ``origin/*`` refs only: ``Forge.fetch`` never checks anything out there)
and written as ``<home>/wins/<number>.patch``: ``git diff --binary`` from where it left
the run's base (their merge base) to its head, without the target's eval-only paths
(the agent never sees their content), with no external diff and no textconv (the
target's attributes never pick a program). The agent applies them in its sandbox; the
kernel never applies agent bytes with git.
"""

from __future__ import annotations

from collections.abc import Sequence

from outerloop.forge import localgit as g
from outerloop.forge.base import Forge
from outerloop.run.paths import RunPaths


def write_wins(forge: Forge, repo: str, paths: RunPaths, base: str, wins: Sequence[int],
               withhold: Sequence[str]) -> list[str]:
    """Write each win's patch into the agent's home; the file names written."""
    folder = paths.wins
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    written = []
    for number in wins:
        head = forge.fetch(repo, paths.kernel, forge.get_pr(repo, number).head)
        since = g.git_text(["merge-base", base, head], git_dir=paths.kernel_git).strip()
        excluded = [f":(exclude){path}" for path in withhold]
        patch = g.git(["-c", "core.quotePath=false", "diff", "--binary", "--no-color",
                       "--no-ext-diff", "--no-textconv", "--no-renames", since, head, "--",
                       ".", *excluded], git_dir=paths.kernel_git)
        name = f"{number}.patch"
        (folder / name).write_bytes(patch)
        written.append(name)
    return written
