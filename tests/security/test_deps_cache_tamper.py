"""Nothing a run does reaches what it is measured with through the dependency cache.

The cache is built by the kernel from the base tree's lock: a session and a launch that
try to modify, add or remove files in it are refused by the sandbox (the grant is
read-only), and a candidate that changes the lock is refused by scope before anything
is sealed or launched. The cache's bytes are the same before and after the run."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from outerloop.deps import store
from outerloop.kernel.tick import run_tick
from tests.deps_support import LOCK, VALUE, build_wheel, dep_target, pip_from, tree_digest
from tests.support import TARGET, ended, make_home, open_issue, tick_until

pytestmark = pytest.mark.security

POKE = """\
import os, pathlib, oldep_probe
site = pathlib.Path(oldep_probe.__file__).parent.parent
seen = []
for what in ("modify", "create", "remove"):
    try:
        if what == "modify":
            (site / "oldep_probe" / "__init__.py").write_text("VALUE = 999\\n")
        elif what == "create":
            (site / "sitecustomize.py").write_text("import os\\n")
        else:
            os.remove(site / "oldep_probe" / "__init__.py")
        seen.append(what + ":DONE")
    except OSError:
        seen.append(what + ":refused")
print("poke " + " ".join(seen))
"""

AGENT = f"""
legs:
  - - write: {{path: solver/poke.py, content: {json.dumps(POKE)}}}
    - shell: "python solver/poke.py > poke-session.txt"
    - syscall: 'launch --name poke --minutes 5 --why "poke the cache" -- python solver/poke.py'
    - syscall: sleep
  - - expect: "poke"
    - shell: "printf 'evil-pkg==6.6.6\\\\n' >> {LOCK}"
    - syscall: 'launch --name relocked --minutes 5 --why "new lock" -- python evaluate.py'
    - syscall: sleep
  - - expect: "dependency lock"
    - write: {{path: report.md, content: "Stopped: the lock is not mine to change."}}
    - syscall: "stop --report report.md"
"""


def _warm(settings: object, timeout_s: float = 60) -> Path:
    from outerloop.config import Settings

    assert isinstance(settings, Settings)
    root = store.target_root(settings.home, TARGET)
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for key_dir in root.iterdir() if root.is_dir() else []:
            if key_dir.is_dir() and store.key_state(settings.home, TARGET,
                                                   key_dir.name).state == "warm":
                return key_dir / store.SITE
        time.sleep(0.2)
    raise AssertionError("the cache never became warm")


def test_a_run_cannot_change_the_cache_it_is_measured_with_when_it_writes_or_relocks(
        tmp_path: Path) -> None:
    index = tmp_path / "index"
    build_wheel(index)
    script = tmp_path / "poke.yaml"
    script.write_text(AGENT)
    settings = make_home(tmp_path, script, target_dir=dep_target(tmp_path, index),
                         extra_toml=pip_from(index))
    run_tick(settings)  # plans the warm
    site = _warm(settings)
    before = tree_digest(site)
    open_issue(settings, "Poke", "Try the tour benchmark's environment.")
    state = tick_until(settings, ended, timeout_s=240)
    (run,) = state.runs.values()
    assert tree_digest(site) == before
    assert (site / "oldep_probe" / "__init__.py").read_text() == f"VALUE = {VALUE}\n"
    assert not (site / "sitecustomize.py").exists()
    ws = settings.home / "runs" / run.run_id / "ws"
    assert (ws / "poke-session.txt").read_text().split() == [
        "poke", "modify:refused", "create:refused", "remove:refused"]
    launch_out = (settings.home / "runs" / run.run_id / "jobs").glob("*poke*/stdout")
    (stdout,) = [p.read_text() for p in launch_out]
    assert "poke modify:refused create:refused remove:refused" in stdout
    prompts = sorted((settings.home / "runs" / run.run_id / "legs").glob("*-prompt.md"))
    assert f"the dependency lock {LOCK}" in prompts[-1].read_text()
    assert [x.name for x in run.launches] == ["poke"]  # the relocked launch never ran
