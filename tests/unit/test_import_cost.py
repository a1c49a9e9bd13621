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


LOADED_AFTER_IMPORT = """
import sys
import outerloop.config, outerloop.validated, outerloop.contract
print(' '.join(m for m in ('pydantic.plugin._loader', 'importlib.metadata', 'yaml')
               if m in sys.modules))
"""


def test_importing_the_quiet_tick_path_loads_no_plugin_loader_metadata_or_yaml() -> None:
    """A quiet tick builds no validator and parses no contract (both read back from
    ``validated.py``): what only those need (~11 ms for importlib.metadata alone) is
    loaded when they run, not when outerloop is imported."""
    done = subprocess.run([sys.executable, "-c", LOADED_AFTER_IMPORT], capture_output=True,
                          text=True, check=True, timeout=60)
    assert done.stdout.split() == []
