"""The nested-repository attack through real ticks: refused at staging, nothing runs.

On main (db44ebf) the agent's shell made a git repository inside its scope, armed with a
clean filter and a ``process`` driver in that repository's own config, and staged
twice; the second seal ran the command as the kernel. Here the first staging is refused
with the path named, the agent deletes the ``.git`` as told, and the run launches; the
command (which would touch a canary in the outerloop home) never runs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from outerloop.run.paths import RunPaths
from tests.security.test_bounded_inputs import LAUNCH, jobs_use_this_checkout
from tests.support import AGENTS, make_home, open_issue, tick_until

pytestmark = [pytest.mark.security, pytest.mark.e2e]

HOME_ROOT = 'R=$(dirname "$(dirname "$(dirname "$HOME")")")'
ARM = (f"{HOME_ROOT}; mkdir -p solver/sub && cd solver/sub && git init -q && "
       f"git config filter.x.clean \"touch $R/canary; cat\" && "
       f"git config filter.x.process \"sh -c 'touch $R/canary'\" && "
       f"echo a > f.py && git -c user.name=a -c user.email=a@a add -A && "
       f"git -c user.name=a -c user.email=a@a commit -qm x && "
       f"echo '* filter=x' > .gitattributes && echo b > f.py")


def test_a_nested_armed_repository_is_refused_at_staging_and_its_filter_never_runs(
        tmp_path: Path) -> None:
    script = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())
    solver = script["legs"][0][1]  # the write of solver/tour.py
    script["legs"] = [
        [solver, {"shell": ARM}, {"syscall": LAUNCH}, {"syscall": "sleep"}],
        [{"expect": "solver/sub/.git"}, {"shell": "rm -rf solver/sub/.git"},
         {"syscall": LAUNCH}, {"syscall": "sleep"}],
    ]
    path = tmp_path / "nested.yaml"
    path.write_text(yaml.safe_dump(script))
    settings = jobs_use_this_checkout(make_home(tmp_path, path))
    open_issue(settings, "Shorter tours", "Try local search on tour.")
    state = tick_until(settings, lambda s: any((bool(r.launches) and (r.sleeps or r.ended))
                                               or r.ended for r in s.runs.values()),
                       timeout_s=200)
    (run,) = state.runs.values()
    assert not run.ended, run.ending
    second = (RunPaths.of(settings.home, run.run_id).legs / "002-prompt.md").read_text()
    assert "Refused: the workspace holds git repositories" in second
    assert "solver/sub/.git" in second
    assert [x.name for x in run.launches] == ["try-2opt"]
    assert not (settings.home / "canary").exists(), "the agent's filter ran as the kernel"
