"""``outerloop status``: runs, live jobs, the last tick (the leaderboard, lessons and
lines it shows are imported here, not by every command that shares a home option)."""

from __future__ import annotations

import json
from pathlib import Path

import click

from outerloop.cli.json_out import emit, json_option
from outerloop.cli.options import home_option
from outerloop.config import Settings, load_settings
from outerloop.errors import OuterloopError
from outerloop.leaderboard import LeaderRow, leaderboard, row_text, settings_seats
from outerloop.ledger.book import rebuild
from outerloop.ledger.history import RECENT_RUNS, History
from outerloop.ledger.state import RunRecord, State
from outerloop.lessons import lesson_rows, lesson_text
from outerloop.line_status import line_rows, line_text
from outerloop.numfmt import format_hours, format_pair, format_usd
from outerloop.text import one_line
from outerloop.vocabulary import GateVerdict


def _child_user(settings: Settings) -> str:
    """The uid confined children get (``sandbox/uid.py``), or why none can be used."""
    from outerloop.sandbox.base import SandboxError
    from outerloop.sandbox.uid import child_ids, describe

    try:
        return describe(child_ids(settings.sandbox.child_user, settings.home))
    except SandboxError as exc:
        return f"refused: {exc}"


def _gpu_status(settings: Settings, state: State) -> dict[str, dict[str, object]]:
    """Per target: GPU-hours used in the last 7 days, the week's budget and what is
    left (the budget as the latest tick recorded it from the contract)."""
    from outerloop.clock import now, week_first_day

    first = week_first_day(now())
    out: dict[str, dict[str, object]] = {}
    targets = {t.repo for t in settings.targets} | set(state.gpu_budgets)
    for repo in sorted(targets):
        used = state.gpu_hours_since(repo, first)
        budget = state.gpu_budgets.get(repo)
        week = budget.week_hours if budget else None
        out[repo] = {"week_used": round(used, 4), "week_budget": week,
                     "week_left": None if week is None else round(max(0.0, week - used), 4),
                     "per_run": budget.run_hours if budget else None,
                     "max_concurrent_gpus": budget.max_concurrent_gpus if budget else None}
    return out


def _money_status(settings: Settings, state: State) -> dict[str, object]:
    """Model cost (USD) in the last 7 days against the caps: per target (its caps as the
    latest tick recorded them from the contract and ``[limits]``) and for the home."""
    from outerloop.clock import now, week_first_day

    first = week_first_day(now())
    targets: dict[str, object] = {}
    for repo in sorted({t.repo for t in settings.targets} | set(state.gpu_budgets)):
        spent = state.usd_since(repo, first)
        budget = state.gpu_budgets.get(repo)
        week = budget.week_usd if budget else None
        targets[repo] = {"week_spent": round(spent, 4), "week_cap": week,
                         "week_left": None if week is None else round(max(0.0, week - spent), 4),
                         "per_run": budget.run_usd if budget else None}
    cap = settings.limits.usd_per_week_home
    spent = state.usd_since(None, first)
    return {"targets": targets, "home": {
        "week_spent": round(spent, 4), "week_cap": cap,
        "week_left": None if cap is None else round(max(0.0, cap - spent), 4)},
        "leg_estimate": settings.limits.usd_leg_estimate}


def _gate_status(run: RunRecord) -> dict[str, object] | None:
    """The gate's evidence on the run: each submission's verdict with its pairs, mean gain,
    interval and noise, and the confidence over the run (None: nothing judged yet)."""
    if not run.verdicts:
        return None
    submissions = [
        {"submission": v.submission or number, "verdict": v.verdict, "pairs": v.seeds,
         "baseline": v.baseline, "candidate": v.candidate, "gain": v.delta,
         "low": v.low, "high": v.high, "noise_sd": v.sd,
         "alpha_spent": float(f"{v.alpha:.6g}") or None}
        for number, v in enumerate(run.verdicts, 1)]
    confidence = run.verdicts[-1].confidence or None
    return {"submissions": submissions, "confidence": confidence,
            "credited": any(v.verdict == GateVerdict.IMPROVED for v in run.verdicts)}


def _verdict_line(run: RunRecord) -> str | None:
    """``improved 0.0005 -> 8.882e-16``: the run's latest verdict with its numbers as its
    PR and the board show them (``numfmt``); None before any."""
    if not run.verdicts:
        return None
    told = run.verdicts[-1]
    if told.baseline is None or told.candidate is None:
        return told.verdict
    base, cand = format_pair(told.baseline, told.candidate, told.display_digits)
    return f"{told.verdict} {base} -> {cand}"


def _run_cap(state: State, run: RunRecord) -> float | None:
    """The run's money cap as its target's latest ``gpu_budget`` recorded it."""
    budget = state.gpu_budgets.get(run.target)
    return budget.run_usd if budget is not None else None


def _machine_wait(state: State, run: RunRecord) -> str | None:
    """The run's wait on the machine (a full disk or quota, or the deployment), in
    force: its line."""
    wait = state.machine_wait(run)
    return wait.message if wait is not None else None


def _endpoint_wait(state: State, run: RunRecord) -> str | None:
    """The run's wait on a model endpoint that is down, in force: its line."""
    wait = state.endpoint_wait(run)
    if wait is None:
        return None
    what = "its review" if wait.review else "its next leg"
    return f"{what} waits for model endpoint {wait.endpoint}: {wait.detail}"


def _seat(settings: Settings, run: RunRecord) -> str | None:
    from outerloop.fleet import seat_of

    try:
        return seat_of(settings, run.target, run.agent).label
    except OuterloopError:
        return None


STATUS_RUNS = RECENT_RUNS
"""``status`` lists every active run and this many of the newest ended ones (by their
last event); ``--all-runs`` lists every run, which reads every settled run."""


def listed_runs(state: State, every: bool = False) -> tuple[list[RunRecord], int, float]:
    """The runs ``status`` lists, in queue order, how many runs there are in all and
    what every run cost (USD). From the settled runs' window (``History.recent``) and
    their tally, never every past run, unless ``every``: a long history costs its
    listing, not each status."""
    history = History.of(state.runs)
    if every:
        chosen = list(state.runs.values())
    else:
        recent = history.recent()
        chosen = [r for r in recent if not r.ended]
        chosen += [r for r in recent if r.ended][:STATUS_RUNS]
    return (sorted(chosen, key=lambda r: (r.queued_at, r.run_id)), history.total,
            round(history.cost_usd(), 4))


def _status_data(home: Path | None, every: bool = False) -> dict[str, object]:
    from outerloop.clock import now as clock_now
    from outerloop.human_waits import human_waits
    from outerloop.kernel.lanes.endpoints import report as endpoint_report
    from outerloop.sandbox.secrets import known_secrets

    settings = load_settings(home)
    state = rebuild(settings.home, save_cache=False)
    heartbeat_path = settings.home / "heartbeat.json"
    heartbeat = json.loads(heartbeat_path.read_text()) if heartbeat_path.exists() else None
    waiting = (heartbeat or {}).get("waiting") or {}
    chosen, total, cost_usd = listed_runs(state, every)
    human = human_waits(state, clock_now(), settings.limits.human_retry_minutes * 60)
    on_human = {w.run: f"on a human: {w.words} (fix: {w.fix})" for w in reversed(human)}
    runs = [
        {"run": r.run_id, "target": r.target, "benchmark": r.benchmark, "agent": r.agent,
         "issue": r.issue, "state": r.state, "park": r.park_reason, "ending": r.ending,
         "reason": r.end_reason or None,
         "pr": r.pr_number, "cost_usd": round(r.cost_usd, 4), "updated": r.updated_at,
         "usd_cap": _run_cap(state, r),
         "gpu_hours": round(r.gpu_seconds / 3600, 4),
         "gate": _gate_status(r), "verdict": _verdict_line(r),
         "seat": _seat(settings, r) if not r.ended else None,
         "messages": [{"key": key, "at": item.at, "text": item.text, "delivered": told}
                      for key, item, told in r.operator_messages],
         "revising": r.revisions if r.revising else None,
         "waiting": on_human.get(r.run_id) or _machine_wait(state, r) or
         _endpoint_wait(state, r) or (
             waiting.get(r.run_id) if not r.ended else None)}
        for r in chosen
    ]
    age = None
    if heartbeat and heartbeat.get("time"):
        from outerloop.clock import now
        from outerloop.kernel.lanes.common import seconds_since

        age = round(seconds_since(str(heartbeat["time"]), now()))
    from outerloop.sandbox import off_warning
    from outerloop.sandbox.resolve import in_force

    return {
        "home": str(settings.home),
        "targets": [t.repo for t in settings.targets],
        "sandbox": {"in_force": in_force(settings.sandbox),
                    "warning": off_warning(settings.sandbox),
                    "child_user": _child_user(settings)},
        "paused": (settings.home / "PAUSE").exists(),
        "hold": (settings.home / "HOLD").exists(),
        "heartbeat": heartbeat,
        "last_tick_age_s": age,
        "gpu": _gpu_status(settings, state),
        "endpoints": endpoint_report(state, settings, clock_now()),
        "money": _money_status(settings, state),
        "runs": runs,
        "lines": line_rows(settings.home, chosen, known_secrets(settings)),
        "lessons": lesson_rows(state),
        "leaderboard": [row.as_dict() for row in
                        leaderboard(state, settings_seats(settings))],
        "runs_total": total,
        "runs_omitted": total - len(runs),
        "live_jobs": [{"job": j.job_id, "name": j.name, "purpose": j.purpose, "run": j.run}
                      for j in state.live_jobs()],
        "waiting": [{"target": target, "issue": issue, "reason": reason, "since": since}
                    for (target, issue), (reason, since) in sorted(state.waiting.items())],
        "human_waits": [w.as_dict() for w in human],
        "pending_intents": [p.key for p in state.intents.values()],
        "events": state.events,
        "malformed_lines": state.malformed,
        "ledger_damage": state.ledger_damage,
        "frozen_targets": sorted(state.frozen),
        "cost_usd": cost_usd,
    }


@click.command()
@home_option
@json_option
@click.option("--all-runs", "every", is_flag=True,
              help=f"List every run, not only the active ones and the newest {STATUS_RUNS} "
                   f"ended (slow on a long history: it reads every settled run).")
def status(home: Path | None, as_json: bool, every: bool) -> None:
    """Runs, live jobs, the last tick."""
    data = _status_data(home, every)
    if as_json:
        emit(True, data)
        return
    beat = data["heartbeat"]
    click.echo(f"home {data['home']}" + ("  [PAUSED]" if data["paused"] else "")
               + ("  [HOLD]" if data["hold"] else ""))
    targets = data["targets"]
    assert isinstance(targets, list)
    click.echo("targets: " + (", ".join(targets) if targets else
                              "none (fix: add [[targets]] repo = \"owner/name\" to "
                              "outerloop.toml)"))
    if isinstance(beat, dict):
        click.echo(f"last tick: {beat['time']} ({data['last_tick_age_s']} s ago), "
                   f"{beat.get('actions', 0)} actions, {beat.get('failed', 0)} failed")
        for failure in beat.get("failures") or []:
            click.echo(f"  failed: {failure}")
    else:
        click.echo("last tick: never (fix: `outerloop tick`, or `outerloop start`)")
    gpu = data["gpu"]
    assert isinstance(gpu, dict)
    for repo, figures in gpu.items():
        week, left = figures["week_budget"], figures["week_left"]
        click.echo(f"gpu-hours {repo}: {format_hours(figures['week_used'])} used in 7 days"
                   + (f" of {format_hours(week)}, {format_hours(left)} left"
                      if week is not None and left is not None
                      else " (budget recorded at the next tick)"))
    _echo_money(data["money"])
    sandbox = data["sandbox"]
    assert isinstance(sandbox, dict)
    click.echo(f"sandbox: {sandbox['in_force']}")
    if sandbox["warning"]:
        click.echo(f"WARNING: {sandbox['warning']}")
    _echo_endpoints(data["endpoints"])
    runs = data["runs"]
    assert isinstance(runs, list)
    active = [r for r in runs if r["state"] != "ended"]
    cost = data["cost_usd"]
    assert isinstance(cost, float | int)
    total = data["runs_total"]
    assert isinstance(total, int)
    click.echo(f"runs: {len(active)} active, {total - len(active)} ended; "
               f"cost {format_usd(cost)}")
    for r in runs[-20:]:
        tail = r["ending"] or (f"{r['state']}/{r['park']}" if r["park"] else r["state"])
        if r["revising"]:
            tail += f" (revising: review round {r['revising']})"
        pr = f" PR #{r['pr']}" if r["pr"] else ""
        gpus = f"  {format_hours(r['gpu_hours'])} GPU-h" if r["gpu_hours"] else ""
        last = f"  {r['verdict']}" if r["verdict"] else ""
        why = f"  waits: {r['waiting']}" if r["waiting"] else (
            f"  reason: {r['reason']}" if r["reason"] else "")
        cap = f" of {format_usd(r['usd_cap'])}" if r["usd_cap"] is not None else ""
        click.echo(f"  {r['run']}  {r['target']}  {tail}{pr}  {format_usd(r['cost_usd'])}"
                   f"{cap}{gpus}{last}{why}")
        for told in r["messages"]:
            click.echo(f"    operator message {told['at']} "
                       f"({'delivered' if told['delivered'] else 'waiting for its next leg'})"
                       f": {one_line(told['text'], 200)}")
    slots = data["lines"]
    assert isinstance(slots, list)
    if slots:
        click.echo(f"research lines: {len(slots)}")
    for row in slots:
        click.echo(line_text(row))
    for told in data["lessons"]:  # type: ignore[attr-defined]
        click.echo(lesson_text(told))
    board = data["leaderboard"]
    assert isinstance(board, list)
    if board:
        click.echo("leaderboard (per agent slot):")
    for row in board:
        click.echo(row_text(LeaderRow(**row)))
    human = data["human_waits"]
    assert isinstance(human, list)
    for h in human:
        who = f"run {h['run']}" if h["run"] else h["target"]
        click.echo(f"waits on a human: {who}: {h['words']} ({h['failures']} tries since "
                   f"{h['since'][:19]}Z, next at {h['next_try_at'][:19]}Z) -> fix: "
                   f"{h['fix']}")
    waiting = data["waiting"]
    assert isinstance(waiting, list)
    for w in waiting:
        click.echo(f"  waits: {w['target']}#{w['issue']}: {w['reason']}")
    jobs = data["live_jobs"]
    assert isinstance(jobs, list)
    click.echo(f"live jobs: {len(jobs)}")
    for j in jobs:
        click.echo(f"  {j['job']}  {j['name']}")
    for line in data["ledger_damage"] or []:  # type: ignore[attr-defined]
        click.echo(line)
    if data["malformed_lines"]:
        click.echo(f"malformed ledger lines skipped: {data['malformed_lines']}")
    if data["pending_intents"]:
        click.echo(f"pending intents (settled next tick): {data['pending_intents']}")


def _echo_endpoints(endpoints: object) -> None:
    """One line per model endpoint: up, or down since when, why, who waits."""
    assert isinstance(endpoints, dict)
    for name, row in endpoints.items():
        line = f"endpoint {name}: {row['state']}"
        if row["state"] != "up":
            why = row.get("refusal") or "no answer"
            line += f" since {row.get('since')} ({why}: {row.get('detail') or '-'})"
            if row.get("cooldown_until"):
                line += f", cooldown until {row['cooldown_until']}"
        if row["waiting"]:
            line += f"; waiting: {', '.join(row['waiting'])}"
        click.echo(line)


def _echo_money(money: object) -> None:
    """``model cost REPO: $1.20 spent in 7 days of $10.00, $8.80 left; $5.00 per run``."""
    assert isinstance(money, dict)
    rows = dict(money["targets"])
    home = money["home"]
    if home["week_cap"] is not None or home["week_spent"]:
        rows["the home (all targets)"] = home
    for who, figures in rows.items():
        week, left = figures["week_cap"], figures["week_left"]
        per_run = figures.get("per_run")
        if week is None and per_run is None and not figures["week_spent"]:
            continue
        click.echo(f"model cost {who}: {format_usd(figures['week_spent'])} spent in 7 days"
                   + (f" of {format_usd(week)}, {format_usd(left)} left" if week is not None
                      else " (no weekly cap)")
                   + (f"; {format_usd(per_run)} per run" if per_run is not None else ""))


COMMANDS: list[click.Command] = [status]
