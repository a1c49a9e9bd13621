"""The climb board: pure rendering from ``State``, the tick's hook, the command."""

from __future__ import annotations

import copy
import json
import re
import shutil
import subprocess
import threading
import urllib.request
from pathlib import Path

import pytest
from click.testing import CliRunner

from outerloop import board
from outerloop.config import Settings, TargetSettings
from outerloop.ledger import events as ev
from outerloop.ledger.state import JobRecord, ParkReason, RunRecord, State

TARGET = "demo/tinytsp"
CHROMIUM = "/usr/bin/chromium"


def _settings(home: Path) -> Settings:
    return Settings(home=home, targets=[TargetSettings(repo=TARGET)])


def _stamp(day: int, hour: int = 0, minute: int = 0) -> str:
    return f"2024-05-{day:02d}T{hour:02d}:{minute:02d}:00.000000Z"


def _run(n: int, *, benchmark: str = "tour", hypothesis: str | None = None,
         state: str = "ended", ending: str | None = "negative-result",
         at: str | None = None) -> RunRecord:
    at = at or _stamp(1 + n // 24, n % 24)
    return RunRecord(run_id=f"{benchmark}-{n:05d}-agent-01", target=TARGET, benchmark=benchmark,
                     agent="agent-01", issue=n, issue_title=f"Idea {n}",
                     hypothesis=f"Idea {n}\n\nbody" if hypothesis is None else hypothesis,
                     queued_at=at, updated_at=at, state=state, admitted=True,
                     ending=ending if state == "ended" else None)


def _verdict(verdict: str, baseline: str, candidate: str, at: str) -> ev.Verdict:
    return ev.Verdict(seq=0, at=at, verdict=verdict, benchmark="tour", baseline=baseline,
                      candidate=candidate, seeds=1)


def _climb() -> State:
    """Three measured runs on ``tour`` (lower is better), one live run with jobs, and a
    queued run on a second benchmark that has no measurement."""
    state = State(last_at=_stamp(3, 12))
    for n, (verdict, base, cand) in enumerate([("improved", "100.0", "95.0"),
                                               ("no-improvement", "95.0", "96.5"),
                                               ("improved", "95.0", "90.0")]):
        run = _run(n, ending="merged" if verdict == "improved" else "negative-result")
        run.verdicts.append(_verdict(verdict, base, cand, run.updated_at))
        run.pr_number = 10 + n if verdict == "improved" else None
        run.cost_usd = 1.25
        state.runs[run.run_id] = run
    live = _run(5, state="parked", at=_stamp(3, 11))
    live.park_reason = ParkReason.JOBS
    live.launches.append(ev.Launched(seq=0, at=_stamp(3, 11), sleep=1, name="try-2opt",
                                     job_id="41", minutes=30, why="is 2-opt | enough?",
                                     command="python solve.py", seal="s"))
    state.runs[live.run_id] = live
    state.jobs["41"] = JobRecord(job_id="41", name="ol-x-launch", purpose="launch",
                                 run=live.run_id, target=TARGET, launch="try-2opt",
                                 submitted_at=_stamp(3, 11, 30), state="running")
    queued = _run(6, benchmark="speed", state="queued", at=_stamp(3, 12))
    queued.admitted = False
    state.runs[queued.run_id] = queued
    state.leaders[(TARGET, "tour")] = ev.Leader(
        seq=0, at=_stamp(2), run="tour-00002-agent-01", target=TARGET, benchmark="tour",
        value="90.0", baseline="100.0")
    return state


def test_board_is_byte_identical_when_rendered_twice_from_same_state(tmp_path: Path) -> None:
    state = _climb()
    first = board.render_board(_settings(tmp_path), state)
    second = board.render_board(_settings(tmp_path), copy.deepcopy(state))
    assert first == second
    assert set(first) == set(board.BOARD_FILES)


def test_board_dates_itself_by_last_event_when_no_time_given(tmp_path: Path) -> None:
    files = board.render_board(_settings(tmp_path), _climb())
    assert "As of 2024-05-03 12:00:00 UTC" in files["index.html"]
    later = board.render_board(_settings(tmp_path), _climb(), now=_stamp(4))
    assert "As of 2024-05-04 00:00:00 UTC" in later["index.html"]


def test_html_escapes_hypothesis_when_it_holds_script(tmp_path: Path) -> None:
    state = _climb()
    hostile = _run(9, hypothesis='<script>alert("x")</script> & <img src=x onerror=1>')
    hostile.issue_title = "<b>title</b>"
    state.runs[hostile.run_id] = hostile
    html = board.render_board(_settings(tmp_path), state)["index.html"]
    assert "<script" not in html and "<img" not in html
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt; &amp; &lt;img" in html


def test_markdown_puts_untrusted_text_in_code_spans_when_it_has_pipes(tmp_path: Path) -> None:
    state = State(last_at=_stamp(1))
    run = _run(1, hypothesis="a | b `tick` <script>")
    state.runs[run.run_id] = run
    md = board.render_board(_settings(tmp_path), state)["CLIMB.md"]
    (row,) = [ln for ln in md.splitlines() if run.run_id in ln]
    assert "``a \\| b `tick` <script>``" in row
    assert len(re.findall(r"(?<!\\)\|", row)) == 11  # ten cells: the inner pipe is escaped


def test_each_run_row_says_why_it_ended_when_the_ledger_holds_a_reason(
        tmp_path: Path) -> None:
    state = State(last_at=_stamp(1))
    run = _run(1)
    run.end_reason = "the agent ended its sessions, after outerloop's last refusal " \
                     "(Refused: no code change)"
    state.runs[run.run_id] = run
    rendered = board.render_board(_settings(tmp_path), state)
    (row,) = [ln for ln in rendered["CLIMB.md"].splitlines() if run.run_id in ln]
    assert "Refused: no code change" in row
    assert "<th>reason</th>" in rendered["index.html"]
    assert "Refused: no code change" in rendered["index.html"]
    (shown,) = json.loads(rendered["status.json"])["runs"]
    assert shown["reason"] == run.end_reason


def test_svg_chart_present_when_benchmark_has_verdict(tmp_path: Path) -> None:
    html = board.render_board(_settings(tmp_path), _climb())["index.html"]
    assert html.count("<svg") == 1
    assert 'aria-label="tour progress"' in html
    assert "speed progress" not in html
    svg = html[html.index("<svg"):html.index("</svg>")]
    assert svg.count("<polyline") == 2  # baseline and best so far
    assert svg.count('r="5"') == 3  # one dot per measured candidate


def test_chart_says_so_when_nothing_was_measured(tmp_path: Path) -> None:
    html = board.render_board(_settings(tmp_path), State())["index.html"]
    assert "<svg" not in html and "No measurements yet" in html and "No runs yet" in html


def test_best_so_far_follows_credited_candidates_when_lower_is_better(tmp_path: Path) -> None:
    view = board.build_view(_settings(tmp_path), _climb())
    (chart,) = view.charts
    assert chart.direction == "min"
    assert [p.best for p in chart.points] == ["95.0", "95.0", "90.0"]
    assert (chart.first_baseline, chart.best, chart.leader) == ("100.0", "90.0", "90.0")


def test_status_json_lists_runs_when_parsed(tmp_path: Path) -> None:
    data = json.loads(board.render_board(_settings(tmp_path), _climb())["status.json"])
    assert data["version"] == board.STATUS_VERSION
    assert data["runs_total"] == 5 and data["runs_omitted"] == 0
    assert {r["run"] for r in data["runs"]} == set(_climb().runs)
    assert data["runs"][0]["state"] == "queued"  # most recent first
    (job,) = data["queue"]
    assert (job["job"], job["launch"], job["limit_min"], job["age_s"]) == (
        "41", "try-2opt", 30, 1800)
    assert data["budgets"]["active"] == 1 and data["budgets"]["queued"] == 1
    assert data["budgets"]["cost_usd"] == 3.75
    assert data["charts"][0]["benchmark"] == "tour" and "dots" not in data["charts"][0]


def test_status_json_holds_every_field_of_the_view_as_the_dataclass_has_it(tmp_path: Path
                                                                         ) -> None:
    import dataclasses

    view = board.build_view(_settings(tmp_path), _climb())
    expected = dataclasses.asdict(view)
    for chart in expected["charts"]:
        for key in board.DRAWING_FIELDS:
            chart.pop(key)
    text = board.render_status(view)
    assert json.loads(text) == json.loads(json.dumps(
        {"version": board.STATUS_VERSION, **expected}))
    orders: list[list[str]] = []
    json.loads(text, object_pairs_hook=lambda pairs: orders.append([k for k, _ in pairs]))
    assert orders and all(keys == sorted(keys) for keys in orders)  # keys sorted, everywhere
    assert text.startswith('{\n  "') and text.endswith("}\n")  # indented for people too


def test_runs_table_keeps_active_runs_when_capped(tmp_path: Path) -> None:
    state = State(last_at=_stamp(30))
    old_live = _run(0, state="parked", at=_stamp(1))
    state.runs[old_live.run_id] = old_live
    for n in range(1, 251):
        run = _run(n)
        state.runs[run.run_id] = run
    view = board.build_view(_settings(tmp_path), state)
    assert len(view.runs) == board.MAX_BOARD_RUNS and view.runs_omitted == 51
    assert old_live.run_id in {r.run for r in view.runs}
    html = board.render_html(view)
    assert "51 older ended runs not shown" in html


def test_settled_run_shows_its_title_when_hypothesis_was_compacted(tmp_path: Path) -> None:
    state = State(last_at=_stamp(2))
    settled = _run(1, hypothesis="")
    settled.settled, settled.report = True, ""
    bare = _run(2, hypothesis="")
    bare.issue_title = ""
    state.runs.update({settled.run_id: settled, bare.run_id: bare})
    files = board.render_board(_settings(tmp_path), state)
    assert "Idea 1" in files["index.html"] and "Idea 1" in files["CLIMB.md"]
    assert "—" in files["index.html"]


def test_write_board_replaces_files_when_rendered_again(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    board.write_board(settings, State())
    paths = board.write_board(settings, _climb())
    assert sorted(p.name for p in paths) == sorted(board.BOARD_FILES)
    assert sorted(p.name for p in (tmp_path / "board").iterdir()) == sorted(board.BOARD_FILES)
    assert "tour-00000-agent-01" in (tmp_path / "board" / "index.html").read_text()


def test_tick_notes_board_failure_when_render_raises(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    from outerloop.kernel.tick import run_tick
    from tests.support import make_home, open_issue

    settings = make_home(tmp_path)
    open_issue(settings, "Shorter tours", "Try 2-opt on tour.")

    def broken(*_args: object, **_kwargs: object) -> list[Path]:
        raise OSError("disk full")

    monkeypatch.setattr(board, "write_board", broken)
    report = run_tick(settings)
    assert report.events > 0 and not report.failures
    assert "board not rendered: OSError: disk full" in report.notes


@pytest.mark.e2e
def test_tick_writes_board_when_run_reaches_review(tmp_path: Path) -> None:
    from tests.support import in_review, make_home, open_issue, tick_until

    settings = make_home(tmp_path)
    open_issue(settings, "Shorter tours <script>", "Please try local search on tour.")
    state = tick_until(settings, in_review)
    (run,) = state.runs.values()
    html = (settings.home / "board" / "index.html").read_text()
    assert run.run_id in html and "parked: review" in html
    assert "Shorter tours &lt;script&gt;" in html and 'aria-label="tour progress"' in html
    assert f"#{run.pr_number}" in html
    data = json.loads((settings.home / "board" / "status.json").read_text())
    assert data["runs"][0]["run"] == run.run_id and data["runs"][0]["pr"] == run.pr_number
    assert run.run_id in (settings.home / "board" / "CLIMB.md").read_text()


def test_board_command_prints_paths_when_run(tmp_path: Path) -> None:
    from outerloop.cli import main
    from outerloop.home import init_home

    home = tmp_path / "home"
    init_home(home, forge="local", compute="local", harness="scripted", targets=[TARGET])
    result = CliRunner().invoke(main, ["board", "--home", str(home)])
    assert result.exit_code == 0, result.output
    assert str(home / "board" / "index.html") in result.output
    assert (home / "board" / "status.json").exists()


def test_board_server_serves_board_on_loopback_when_started(tmp_path: Path) -> None:
    from outerloop.cli.board_cmd import make_server

    (tmp_path / "index.html").write_text("<p>board</p>")
    server = make_server(tmp_path, 0)
    host, port = server.server_address[:2]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        assert host == "127.0.0.1"
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/index.html", timeout=5) as r:
            assert r.read() == b"<p>board</p>"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.browser
def test_board_renders_in_headless_chromium_when_installed(tmp_path: Path) -> None:
    if shutil.which(CHROMIUM) is None:
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium to run this)")
    state = _climb()
    board.write_board(_settings(tmp_path), state)
    page = (tmp_path / "board" / "index.html").as_uri()
    shot = tmp_path / "board.png"
    # --no-sandbox: CI runs as root. Chromium exits 0 even when the page is missing,
    # so the output is what is checked, never the exit code.
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--log-level=3", f"--user-data-dir={tmp_path / 'profile'}",
             "--timeout=10000", "--hide-scrollbars", "--window-size=1280,1400"]
    subprocess.run([*flags, f"--screenshot={shot}", page], capture_output=True, timeout=120,
                   check=False)
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000
    dom = subprocess.run([*flags, "--dump-dom", page], capture_output=True, text=True,
                         timeout=120, check=False).stdout
    assert "<svg" in dom and next(iter(state.runs)) in dom


def test_board_server_binds_loopback_unless_told_otherwise_when_serving(
        tmp_path: Path) -> None:
    from outerloop.cli.board_cmd import SERVE_HOST, is_loopback, make_server

    assert SERVE_HOST == "127.0.0.1" and is_loopback(SERVE_HOST)
    assert is_loopback("::1") and is_loopback("localhost")
    assert not is_loopback("0.0.0.0") and not is_loopback("10.1.2.3")
    server = make_server(tmp_path, 0, "127.0.0.2")
    try:
        assert server.server_address[0] == "127.0.0.2"
    finally:
        server.server_close()


def test_board_serve_names_the_address_and_fix_when_it_cannot_bind(tmp_path: Path) -> None:
    from outerloop.cli import main
    from outerloop.home import init_home

    home = tmp_path / "home"
    init_home(home, forge="local", compute="local", harness="scripted", targets=[TARGET])
    result = CliRunner().invoke(main, ["board", "--home", str(home), "--serve", "--bind",
                                       "256.0.0.1", "--port", "0"])
    assert result.exit_code == 1
    assert "cannot serve on 256.0.0.1" in result.output and "--bind" in result.output


def test_each_run_row_shows_the_command_explaining_it_when_rendered(tmp_path: Path) -> None:
    state = _climb()
    rendered = board.render_board(_settings(tmp_path), state)
    for run_id in state.runs:
        assert f"<code>outerloop explain {run_id}</code>" in rendered["index.html"]
    assert str(tmp_path) not in rendered["index.html"]  # published too: no host's paths
    shown = json.loads(rendered["status.json"])["runs"]
    assert {r["explain"] for r in shown} == {f"outerloop explain {r}" for r in state.runs}
