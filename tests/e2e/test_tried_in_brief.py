"""A run's brief lists what earlier runs of its target tried (issue 49 point 4): one line
each, newest first, with the report's title line, through real ticks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.support import make_home, open_issue, tick_until

pytestmark = pytest.mark.e2e

STOPS = {"legs": [[
    {"write": {"path": "report.md", "content": "# Or-opt moves on the tour\n\nNo gain.\n"}},
    {"syscall": "stop --report report.md"},
]] * 2}


def test_the_second_runs_brief_lists_what_the_first_run_tried(tmp_path: Path) -> None:
    script = tmp_path / "stops.yaml"
    script.write_text(json.dumps(STOPS))
    settings = make_home(tmp_path, script)
    open_issue(settings, "Shorter tours", "Try or-opt on tour.")
    first = tick_until(settings, lambda s: any(r.ended for r in s.runs.values()))
    (ended,) = first.runs.values()
    open_issue(settings, "Shorter tours again", "Try something else on tour.")
    state = tick_until(settings, lambda s: len(s.runs) == 2 and all(
        r.legs for r in s.runs.values()))
    (second,) = [r for r in state.runs.values() if r.run_id != ended.run_id]
    brief = (settings.home / "runs" / second.run_id / "legs" / "001-prompt.md").read_text()
    section = brief.split("## What earlier runs tried")[1].split("## Recent reports")[0]
    line = f"{(ended.ended_at or '')[:10]} {ended.agent} {ended.ending}: Or-opt moves on the tour"
    assert line in section, section
