"""Two real runs on one target: an agent's ``queue`` shows its sibling's job, submitted
after the agent's leg started, answered live by the kernel during the leg."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import ended, make_home, open_issue, target_with_slots, tick_until

pytestmark = pytest.mark.e2e
SCRIPT = Path(__file__).with_name("live_queue_agent.yaml")


def test_agent_queue_shows_a_sibling_job_submitted_after_its_leg_started(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path, SCRIPT, target_dir=target_with_slots(tmp_path, 2))
    open_issue(settings, "Shorter tours one way", "Try something on tour.")
    open_issue(settings, "Shorter tours another way", "Try something else on tour.")
    state = tick_until(settings, lambda s: len(s.runs) == 2 and ended(s), timeout_s=300)
    runs = {r.agent: r for r in state.runs.values()}
    first, sibling = runs["agent-01"], runs["agent-02"]
    seen = (settings.home / "runs" / first.run_id / "home" / "queue-seen.txt").read_text()
    probe = next(line for line in seen.splitlines() if "launch 'probe'" in line)
    assert "(live, kernel's answer" in seen
    assert sibling.run_id in probe and "agent-02" in probe
    leg_started = min(e["at"] for e in _events(settings, first.run_id, "leg_started"))
    job_submitted = min(e["at"] for e in _events(settings, sibling.run_id, "done")
                        if "probe" in e["key"])
    assert job_submitted > leg_started
    history = (settings.home / "runs" / first.run_id / "home" / "history-seen.txt").read_text()
    assert "the target's ended runs" in history


def _events(settings: object, run_id: str, kind: str) -> list[dict[str, str]]:
    import json

    from outerloop.ledger import store
    from tests.support import TARGET

    path = store.run_file(settings.home, TARGET, run_id)  # type: ignore[attr-defined]
    return [e for e in (json.loads(line) for line in path.read_text().splitlines())
            if e["kind"] == kind]
