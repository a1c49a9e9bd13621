"""The local Slurm that the slurm and security suites run against: the repository's own
``deploy/local-slurm/start.sh`` (docs/operate.md, "The local Slurm for tests").

One home for the path and for the reason a Slurm test gives when it skips, so that a
skip message always names a script a user's clone has."""

from __future__ import annotations

START_SCRIPT = "deploy/local-slurm/start.sh"
STOP_SCRIPT = "deploy/local-slurm/stop.sh"
ENV_FILE = "/run/local-slurm/env"
NO_REAL_SLURM = (f"no real Slurm: OUTERLOOP_REAL_SLURM is not 1 (run `sudo bash {START_SCRIPT}`,"
                 f" then `set -a; . {ENV_FILE}; set +a`)")
