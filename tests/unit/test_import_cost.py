"""What importing outerloop costs a process beyond its own modules: no scan of every
installed distribution for pydantic plugins (~45 ms with 129 installed): outerloop's
processes load none."""

from __future__ import annotations

import os
import subprocess
import sys

COUNT_SCANS = """
import importlib.metadata as metadata
scans = []
every = metadata.distributions
metadata.distributions = lambda *a, **k: (scans.append(1), every(*a, **k))[1]
from outerloop.config import Settings
from outerloop.contract import load_contract_text
Settings(home="/nonexistent")
print(len(scans))
"""


def _scans(**env: str) -> int:
    clean = {k: v for k, v in os.environ.items() if k != "PYDANTIC_DISABLE_PLUGINS"}
    done = subprocess.run([sys.executable, "-c", COUNT_SCANS], capture_output=True, text=True,
                          check=True, timeout=60, env={**clean, **env})
    return int(done.stdout)


def test_building_settings_and_contracts_scans_no_installed_distribution() -> None:
    assert _scans() == 0
