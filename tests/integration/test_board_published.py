"""After a tick that changed it, the target's board is on its research-log branch, and
the published page renders in a real headless browser."""

from __future__ import annotations

import shutil
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pytest

from outerloop.config import Settings
from outerloop.kernel.tick import run_tick
from outerloop.ledger import events as ev
from outerloop.ledger import store
from tests.support import TARGET, forge, make_home

CHROMIUM = "/usr/bin/chromium"
ENDED = "tour-20261130T010000-agent-01"
LATER = "tour-20261130T030000-agent-02"


def _ended_run(settings: Settings) -> None:
    writer = store.LedgerWriter(store.run_file(settings.home, TARGET, ENDED))
    writer.append(ev.RunQueued(run=ENDED, target=TARGET, benchmark="tour", agent="agent-01",
                               issue_title="Shorter tours <script>alert(1)</script>"))
    writer.append(ev.Verdict(run=ENDED, benchmark="tour", verdict="improved", baseline="100",
                             candidate="90", delta="-10", seeds=1))
    writer.append(ev.RunEnded(run=ENDED, ending="negative-result", report="# report\n",
                              by="test"))


def _published(settings: Settings, path: str) -> str | None:
    data = forge(settings).read_file(TARGET, path, "research-log")
    return data.decode("utf-8") if data is not None else None


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_research_log_carries_the_board_when_a_tick_changed_it(tmp_path: Path) -> None:
    settings = make_home(tmp_path)
    _ended_run(settings)
    report = run_tick(settings)
    assert not report.failures, report.failures
    html = _published(settings, "board/index.html")
    status = _published(settings, "board/status.json")
    assert html is not None and status is not None and _published(settings, "board/CLIMB.md")
    assert ENDED in html and "&lt;script&gt;" in html and "<script>alert" not in html
    # the contract's own cap (max_active_attempts: 1), recorded in this same tick, not
    # the home's ceiling
    assert settings.limits.max_active_attempts != 1
    assert "<b>0 / 1</b><span class=\"muted\">active runs</span>" in html
    assert ENDED in status
    head = forge(settings).branch_head(TARGET, "research-log")

    run_tick(settings)  # nothing changed: nothing published
    assert forge(settings).branch_head(TARGET, "research-log") == head

    store.LedgerWriter(store.run_file(settings.home, TARGET, LATER)).append(ev.RunQueued(
        run=LATER, target=TARGET, benchmark="tour", agent="agent-02", issue_title="Or-opt"))
    run_tick(settings)
    assert forge(settings).branch_head(TARGET, "research-log") != head
    assert LATER in (_published(settings, "board/index.html") or "")


@pytest.mark.browser
def test_published_board_renders_in_headless_chromium_when_installed(tmp_path: Path) -> None:
    if shutil.which(CHROMIUM) is None:
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium to run this)")
    settings = make_home(tmp_path)
    _ended_run(settings)
    run_tick(settings)
    html = _published(settings, "board/index.html")
    assert html is not None
    page = tmp_path / "published" / "index.html"
    page.parent.mkdir()
    page.write_text(html, encoding="utf-8")
    parser = _Tags()
    parser.feed(html)
    external = [(tag, attrs) for tag, attrs in parser.tags
                if tag in ("script", "link", "img", "iframe") or str(
                    attrs.get("src") or "").startswith(("http:", "https:", "//"))]
    assert external == []  # one static page: nothing fetched from anywhere

    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             "--log-level=3", f"--user-data-dir={tmp_path / 'chrome'}", "--timeout=10000",
             "--window-size=1280,1400"]
    dom = subprocess.run([*flags, "--dump-dom", page.as_uri()], capture_output=True,
                         text=True, timeout=120, check=False).stdout
    assert ENDED in dom and "<svg" in dom and 'aria-label="tour progress"' in dom
    assert "<script>alert" not in dom
    shot = tmp_path / "board.png"
    subprocess.run([*flags, "--hide-scrollbars", f"--screenshot={shot}", page.as_uri()],
                   capture_output=True, timeout=120, check=False)
    assert shot.exists() and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert shot.stat().st_size > 10_000
