"""The agent tool's live views, ``queue`` and ``history``: the tool asks through the
channel (``ask/<verb>.json`` with a fresh nonce) and prints the kernel's answer
(``answers/<verb>.json``), falling back to the snapshot written at the leg's start.

Part of the tool's zip application (standard library only, like ``syscall.py``)."""

from __future__ import annotations

import argparse
import os
from typing import Any

if __package__:  # imported from the installed package (the kernel, tests)
    from outerloop.agent_tool import channel_files as tool
    from outerloop.agent_tool import layout, rules
else:  # run from the workspace's zip application
    import channel_files as tool  # type: ignore[no-redef,import-not-found,unused-ignore]
    import layout  # type: ignore[no-redef,import-not-found,unused-ignore]
    import rules  # type: ignore[no-redef,import-not-found,unused-ignore]

DEFAULT_WAIT_S = 30
MAX_WAIT_S = 120


def _ask(verb: str, wait: float) -> dict[str, Any] | None:
    """Ask the kernel for a live answer: write ``ask/<verb>.json`` with a fresh nonce,
    then wait up to ``wait`` seconds for ``answers/<verb>.json`` with that nonce."""
    import time

    if not (tool.channel_dir() / layout.ASK_DIR).is_dir() or wait <= 0:
        return None
    nonce = os.urandom(12).hex()
    tool.write_json(tool.channel_dir() / layout.ask_name(verb), {"nonce": nonce})
    deadline = time.monotonic() + wait
    answer_path = tool.channel_dir() / layout.answer_name(verb)
    while time.monotonic() < deadline:
        try:
            answer = tool.read_json(answer_path) if answer_path.is_file() else None
        except rules.Refused:
            answer = None
        if isinstance(answer, dict) and answer.get("nonce") == nonce:
            return answer
        time.sleep(0.2)
    return None


def _dict(value: object) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _wait_of(args: argparse.Namespace) -> float:
    wait = args.wait
    if wait < 0 or wait > MAX_WAIT_S:
        raise rules.Refused(f"--wait {wait} is out of range (rule: 0..{MAX_WAIT_S} seconds); "
                            f"fix: --wait {DEFAULT_WAIT_S}")
    return float(wait)


def _live_header(answer: dict[str, Any], what: str) -> list[str]:
    if answer.get("error"):
        return [f"{what}: {tool.one_line(answer['error'], 400)}"]
    return [f"{what} (live, kernel's answer at {answer.get('at', '?')}):"]


def cmd_queue(args: argparse.Namespace) -> str:
    """Show the target's whole queue, live: every run's jobs and the lane load."""
    answer = _ask("queue", _wait_of(args))
    if answer is not None:
        lines = _live_header(answer, "the target's queue")
        data = _dict(answer.get("data"))
        jobs = _list(data.get("jobs"))
        for job in jobs:
            if not isinstance(job, dict):
                continue
            what = f"launch '{job['launch']}'" if job.get("launch") else job.get("purpose", "?")
            reason = f" ({job['reason']})" if job.get("reason") else ""
            elapsed = f", {job['elapsed']} of {job['limit']}" if job.get("elapsed") else ""
            lines.append(f"- {job.get('agent') or '?'} run {job.get('run') or '?'} "
                         f"{what}: job {job.get('job', '?')} "
                         f"{job.get('name', '')}: {job.get('state', '?')}{reason}{elapsed}, "
                         f"{job.get('gpus', 0)} GPU(s), submitted {job.get('submitted', '?')}")
        if not jobs and not answer.get("error"):
            lines.append("- no kernel jobs of this target are queued or running")
        for lane in _list(data.get("lanes")):
            if isinstance(lane, dict):
                nodes = lane.get("nodes") or lane.get("error") or {}
                shown = ", ".join(f"{k} {v}" for k, v in nodes.items()) if isinstance(
                    nodes, dict) else tool.one_line(nodes)
                lines.append(f"lane {lane.get('partition', '?')} (sinfo, nodes per state): "
                             f"{shown or 'no nodes'}")
        if data.get("note"):
            lines.append(f"note: {tool.one_line(data['note'], 400)}")
        lines.extend(_trying(_list(data.get("runs"))))
        return "\n".join(lines)
    queue = tool.read_view(layout.QUEUE_FILE)
    stale = ("the kernel gave no live answer (none is given between sessions); this run's "
             "jobs as of the start of this session:")
    if not isinstance(queue, list) or not queue:
        return stale + "\n- no jobs of this run are queued or running"
    lines = [stale]
    for job in queue:
        if not isinstance(job, dict):
            continue
        task = f"[{job['task']}]" if job.get("task") is not None else ""
        lines.append(f"- {job.get('name', '?')}{task} job {job.get('job', '?')}: "
                     f"{job.get('state', '?')}, {_duration(job.get('elapsed_s'))} of "
                     f"{job.get('limit_minutes', '?')} min")
    return "\n".join(lines)


def _own_history() -> list[str]:
    history = tool.read_view(layout.HISTORY_FILE)
    if not isinstance(history, list) or not history:
        return ["no launches yet in this run."]
    lines = ["this run's launches:"]
    for entry in history:
        if not isinstance(entry, dict):
            continue
        state = entry.get("state") or "not ended"
        if entry.get("exit_code") is not None:
            state += f" (exit {entry['exit_code']})"
        task = f"[{entry['task']}]" if entry.get("task") is not None else ""
        why = f" — {tool.one_line(entry.get('why'))}" if entry.get("why") else ""
        last = entry.get("last_line")
        lines.append(f"- sleep {entry.get('sleep', '?')}: {entry.get('name', '?')}{task}{why}; "
                     f"job {entry.get('job') or '-'}: {state}, "
                     f"{_duration(entry.get('elapsed_s'))}"
                     + (f"; last line: {tool.one_line(last)}" if last else ""))
    return lines


def cmd_history(args: argparse.Namespace) -> str:
    """Show this run's launches and, live, the target's ended runs."""
    lines = _own_history()
    answer = _ask("history", _wait_of(args))
    if answer is None:
        lines.append("the target's ended runs: the kernel did not answer live; try again")
        return "\n".join(lines)
    lines.extend(_live_header(answer, "the target's ended runs, newest first"))
    data = _dict(answer.get("data"))
    runs = _list(data.get("runs"))
    for run in runs:
        if not isinstance(run, dict):
            continue
        verdicts = ", ".join(
            f"{v.get('verdict')} ({v.get('baseline')} -> {v.get('candidate')})"
            for v in _list(run.get("verdicts")) if isinstance(v, dict)) or "no verdict"
        pr = f", PR #{run['pr']}" if run.get("pr") else ""
        tried = f"; tried: {tool.one_line(run['tried'], 160)}" if run.get("tried") else ""
        lines.append(f"- {run.get('run', '?')} ({run.get('agent', '?')} on "
                     f"{run.get('benchmark', '?')}): {run.get('ending', '?')}; {verdicts}{pr}; "
                     f"ended {run.get('ended', '?')}{tried}")
    if not runs and not answer.get("error"):
        lines.append("- none yet")
    return "\n".join(lines)


def _trying(runs: list[object]) -> list[str]:
    """The target's live runs and the issue each is trying, one line each."""
    lines = ["the target's live runs, and what each is trying:"] if runs else []
    for run in runs:
        if isinstance(run, dict):
            issue = f" (issue #{run['issue']})" if run.get("issue") else ""
            lines.append(f"- {run.get('agent') or '?'} run {run.get('run') or '?'}"
                         f"{issue}, {run.get('state') or '?'}: "
                         f"{tool.one_line(run.get('trying') or '?', 160)}")
    return lines


def _duration(seconds: object) -> str:
    value = rules._as_int(seconds)
    if value is None:
        return "?"
    minutes, secs = divmod(max(0, value), 60)
    return f"{minutes}m{secs:02d}s"
