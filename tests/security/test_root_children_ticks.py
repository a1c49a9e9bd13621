"""Through real ticks, kernel as root: no confined child runs as root (issue 46, point 3).

A scripted agent's session step, its launch and both sides of the gate's eval, and the
review panel's judge each record their uid and try to read ``/etc/shadow`` and a
root-owned 0600 canary in a path every child is granted (``[sandbox] read_only``, as
``/etc/slurm`` holds ``slurmdbd.conf``). Before, each was uid 0 with its capabilities
dropped, so it owned both files and read them. Now each is ``nobody`` and is refused,
and the run still goes to review ``improved``, on Landlock and on bubblewrap.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from outerloop.ledger.state import State
from outerloop.sandbox.resolve import bwrap_problem, landlock_problem
from outerloop.sandbox.uid import DEFAULT_ID
from tests.support import in_review, make_home, open_issue, tick_until

pytestmark = [pytest.mark.security, pytest.mark.e2e]

CANARY_TEXT = "ROOT-ONLY-CANARY-0600"
SOLVER = (Path(__file__).with_name("hostile_solver.py.txt")).read_text()
PROBE = '''

def _whoami() -> None:
    """Agent code in the launch and both evals: who am I, and can I read root's files?"""
    import os
    import sys

    def read(path: str) -> str:
        try:
            with open(path) as handle:
                handle.read()
            return "READ"
        except OSError:
            return "denied"

    print(f"CHILD uid={os.getuid()} shadow={read('/etc/shadow')} "
          f"canary={read(%r)}", file=sys.stderr)


_whoami()
'''
SHELL_PROBE = ('echo "CHILD uid=$(id -u) shadow=$(cat /etc/shadow >/dev/null 2>&1 && echo READ '
               '|| echo denied) canary=$(cat %s >/dev/null 2>&1 && echo READ || echo denied)"')
RESULT = re.compile(r"CHILD uid=\d+ shadow=\w+ canary=\w+")
LAUNCH = "launch --name probe --minutes 5 -- python evaluate.py --bench tour --json"


@pytest.fixture
def canary() -> Iterator[Path]:
    where = Path(tempfile.mkdtemp(prefix="outerloop-canary-"))
    os.chmod(where, 0o755)
    path = where / "slurmdbd.conf"
    path.write_text(CANARY_TEXT)
    os.chmod(path, 0o600)
    try:
        yield path
    finally:
        shutil.rmtree(where, ignore_errors=True)


def _scripts(tmp_path: Path, canary: Path) -> tuple[Path, Path]:
    solver = SOLVER[:SOLVER.index("\n\ndef _hostile")] + "\n" + PROBE % str(canary)
    probe = SHELL_PROBE % canary
    legs = [
        [{"shell": probe},
         {"write": {"path": "solver/tour.py", "content": solver}},
         {"syscall": LAUNCH},
         {"syscall": "sleep"}],
        [{"expect": "probe"},
         {"shell": "{ echo '# 2-opt'; echo; echo 'Shorter tours.'; } > report.md"},
         {"syscall": "submit --report report.md"},
         {"syscall": "sleep"}],
    ]
    agent = tmp_path / "agent.yaml"
    agent.write_text(yaml.safe_dump({"legs": legs}, sort_keys=False))
    judge = tmp_path / "judge.yaml"
    judge.write_text(yaml.safe_dump({"legs": [[
        {"expect": "review panel"},
        {"shell": probe},
        {"write": {"path": "verdict.json", "content": '{"verdict": "approve", "findings": []}'}},
    ]]}, sort_keys=False))
    return agent, judge


def _lines(paths: list[Path]) -> list[str]:
    """Each probe's finding (not the probe's own text, which transcripts also hold)."""
    found = []
    for path in paths:
        found += RESULT.findall(path.read_text(errors="replace"))
    return found


@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_no_child_reads_root_files_when_the_kernel_runs_as_root(
        kind: str, tmp_path: Path, canary: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("the kernel must run as root for this (CI runs as root)")
    problem = landlock_problem() if kind == "landlock" else bwrap_problem()
    if problem:
        pytest.skip(f"{kind} cannot run here: {problem}")
    agent, judge = _scripts(tmp_path, canary)
    sandbox = f'[sandbox]\nkind = "{kind}"\nread_only = ["{canary.parent}"]\n'
    settings = make_home(tmp_path, agent, judge=judge, extra_toml=sandbox)
    open_issue(settings, "Shorter tours", "Please try local search on tour.")
    state: State = tick_until(settings, in_review, timeout_s=240)
    (run,) = state.runs.values()
    assert [v.verdict for v in run.verdicts] == ["improved"]
    root = settings.home / "runs" / run.run_id

    expected = f"CHILD uid={DEFAULT_ID} shadow=denied canary=denied"
    session = _lines(sorted((root / "legs").glob("*-transcript.jsonl")))
    jobs = _lines(sorted((root / "jobs").rglob("stderr")))
    judges = _lines(sorted((root / "review").rglob("*.jsonl")))
    assert session and set(session) == {expected}, session
    assert len(jobs) >= 2 and set(jobs) == {expected}, jobs  # the launch, the candidate eval
    assert judges and set(judges) == {expected}, judges
    assert canary.read_text() == CANARY_TEXT
