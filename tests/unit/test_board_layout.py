"""The board in a real headless Chromium at a phone's width (420 px) and a desktop's
(1280 px): no sideways scroll, and every column of every table (the verdict and the PR
included) on screen, named, and not cut off."""

from __future__ import annotations

import json
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

from outerloop import board
from outerloop.ledger import events as ev
from outerloop.ledger.state import State
from tests.unit.test_board import TARGET, _climb, _run, _settings, _stamp

CHROMIUM = "/usr/bin/chromium"
WIDTHS = (420, 1280)

# The probe page shows the board in a frame exactly WIDTH px wide (a headless window
# cannot be narrower than 500 px, a frame can; media queries follow the frame's width),
# then measures the board's layout and writes what it found where --dump-dom prints it.
# The board itself carries no script.
PROBE = """<!DOCTYPE html>
<html><body style="margin:0">
<iframe id="board" src="index.html" style="border:0;width:WIDTHpx;height:4000px"></iframe>
<pre id="layout"></pre>
<script>
window.addEventListener("load", function () {
  const doc = document.getElementById("board").contentDocument;
  const vw = doc.documentElement.clientWidth;
  const scroller = doc.scrollingElement;
  const out = {viewport: vw, scrollWidth: scroller.scrollWidth,
               clientWidth: scroller.clientWidth, cells: [], overflowing: []};
  for (const table of doc.querySelectorAll("table")) {
    const heads = [...table.querySelectorAll("thead th")];
    for (const row of table.querySelectorAll("tbody tr")) {
      [...row.children].forEach((cell, i) => {
        const box = cell.getBoundingClientRect();
        const head = heads[i].getBoundingClientRect();
        out.cells.push({
          column: heads[i].textContent.trim(), text: cell.textContent.trim(),
          left: box.left, right: box.right, width: box.width, height: box.height,
          clipped: cell.scrollWidth > cell.clientWidth + 1,
          headShown: head.width > 4 && head.height > 4 && head.left >= 0 && head.right <= vw,
          label: getComputedStyle(cell, "::before").content});
      });
    }
  }
  for (const el of doc.querySelectorAll("body *")) {
    if (el.closest("thead")) continue;
    const box = el.getBoundingClientRect();
    if (box.width > 0 && (box.right > vw + 1 || box.left < -1)) {
      out.overflowing.push(el.tagName + "." + el.className + ": " + box.left + ".." + box.right);
    }
  }
  document.getElementById("layout").textContent = JSON.stringify(out);
});
</script>
</body></html>
"""


def _busy_state() -> State:
    """The climb of ``test_board`` plus what made the board overflow: a tiny error
    metric's verdict with a PR, a cost under a cent, GPU-hours, a long hypothesis."""
    state = _climb()
    tiny = _run(7, ending="merged", at=_stamp(3, 13),
                hypothesis="Use compensated summation (Kahan) in the series so the error "
                           "of pi falls to the machine epsilon on every seed we measure")
    tiny.verdicts.append(ev.Verdict(seq=0, at=_stamp(3, 13), verdict="improved",
                                    benchmark="tour", baseline="0.0005",
                                    candidate="8.881784197001252e-16", seeds=3))
    tiny.pr_number, tiny.cost_usd, tiny.gpu_seconds = 31, 0.0042, 5400
    state.runs[tiny.run_id] = tiny
    state.gpu_budgets[TARGET] = ev.GpuBudget(seq=0, at=_stamp(1), target=TARGET,
                                             run_hours=2, week_hours=100,
                                             max_active_attempts=1)
    return state


def _chromium(tmp_path: Path, width: int, *args: str) -> str:
    flags = [CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
             "--disable-background-networking", "--disable-component-update",
             "--disable-sync", "--log-level=3", f"--user-data-dir={tmp_path / 'profile'}",
             "--allow-file-access-from-files", "--virtual-time-budget=5000",
             "--timeout=10000", "--hide-scrollbars", f"--window-size={width},1400"]
    return subprocess.run([*flags, *args], capture_output=True, text=True, timeout=120,
                          check=False).stdout


def _layout(tmp_path: Path, width: int) -> dict[str, Any]:
    """The board's layout (``index.html`` beside it) in a frame ``width`` px wide."""
    probe = tmp_path / "probe.html"
    probe.write_text(PROBE.replace("WIDTH", str(width)), encoding="utf-8")
    dom = _chromium(tmp_path, max(width, 500) + 100, "--dump-dom", probe.as_uri())
    start = dom.index('<pre id="layout">') + len('<pre id="layout">')
    text = dom[start:dom.index("</pre>", start)]
    return dict(json.loads(text.replace("&lt;", "<").replace("&gt;", ">")
                           .replace("&quot;", '"').replace("&amp;", "&")))


@pytest.mark.browser
@pytest.mark.parametrize("width", WIDTHS)
def test_board_fits_the_screen_and_shows_every_column_when_rendered_at(
        tmp_path: Path, width: int) -> None:
    if shutil.which(CHROMIUM) is None:
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium to run this)")
    html = board.render_board(_settings(tmp_path), _busy_state())["index.html"]
    assert "<script" not in html  # the page itself stays script-free
    page = tmp_path / "index.html"
    page.write_text(html, encoding="utf-8")

    shot = tmp_path / f"board-{width}.png"
    _chromium(tmp_path, width, f"--screenshot={shot}", page.as_uri())
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">I", shot.read_bytes()[16:20])[0] == width

    found = _layout(tmp_path, width)
    assert found["viewport"] == width
    assert found["scrollWidth"] <= found["clientWidth"], found["overflowing"]
    assert found["overflowing"] == []
    columns = {cell["column"] for cell in found["cells"]}
    assert {"last verdict", "PR", "cost", "GPU-h", "state", "age / limit"} <= columns
    for cell in found["cells"]:
        where = f"{cell['column']} = {cell['text']!r} at {width} px"
        assert cell["width"] > 0 and cell["height"] > 0, where
        assert cell["left"] >= 0 and cell["right"] <= width, where
        assert not cell["clipped"], where
        # the column is named on screen: its header, or the cell's own label
        assert cell["headShown"] or cell["label"] == json.dumps(cell["column"]), where
    shown = {cell["text"] for cell in found["cells"]}
    assert "improved 0.0005 → 8.882e-16" in shown and "#31" in shown
    assert "$0.0042" in shown and "1.5" in shown  # cost and GPU-hours of the tiny run


def _png_rows(png: bytes) -> tuple[int, int, list[bytes]]:
    """(width, height, each row's filtered bytes) of a non-interlaced 8-bit PNG: enough
    to tell a page drawn from a blank one without an imaging library."""
    import zlib

    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height, depth, colour = struct.unpack(">IIBB", png[16:26])
    channels = {2: 3, 6: 4}[colour]
    assert depth == 8
    data, at = b"", 8
    while at < len(png):
        (length,) = struct.unpack(">I", png[at:at + 4])
        if png[at + 4:at + 8] == b"IDAT":
            data += png[at + 8:at + 8 + length]
        at += 12 + length
    raw = zlib.decompress(data)
    stride = 1 + width * channels
    return width, height, [raw[i * stride:(i + 1) * stride] for i in range(height)]


@pytest.mark.browser
@pytest.mark.parametrize("width", WIDTHS)
def test_board_of_merged_unmerged_and_blocked_results_fits_when_shot_at(
        tmp_path: Path, width: int) -> None:
    """Issue 51's board (a merged result, credited ones not merged, a tamper-blocked
    draft) in Chromium: the screenshot has the width asked and is drawn (not blank),
    nothing scrolls sideways, every results column is named and on screen."""
    if shutil.which(CHROMIUM) is None:
        pytest.skip(f"{CHROMIUM} is not installed (apt-get install chromium to run this)")
    from tests.unit.test_board_results import _history

    html = board.render_board(_settings(tmp_path), _history())["index.html"]
    assert "<script" not in html
    assert 'class="dot-blocked"' in html and 'class="dot-merged"' in html
    assert '<tr class="result-blocked">' in html and '<tr class="result-open">' in html
    page = tmp_path / "index.html"
    page.write_text(html, encoding="utf-8")

    shot = tmp_path / f"truth-{width}.png"
    _chromium(tmp_path, width, f"--screenshot={shot}", page.as_uri())
    print(f"screenshot at {width} px: {shot}")
    shown_width, height, rows = _png_rows(shot.read_bytes())
    assert shown_width == width and height > 0
    assert len({row[1:] for row in rows}) > height // 10  # many distinct rows: drawn
    assert len(set(b"".join(rows[: height // 2]))) > 16  # colours, not one flat fill

    found = _layout(tmp_path, width)
    assert found["viewport"] == width
    assert found["scrollWidth"] <= found["clientWidth"], found["overflowing"]
    assert found["overflowing"] == []
    results = [c for c in found["cells"] if c["column"] in {"standing", "evidence", "why"}]
    assert {c["text"] for c in results if c["column"] == "standing"} == {
        "merged", "credited, awaiting merge", "credited, not merged", "blocked (draft)"}
    for cell in results:
        where = f"{cell['column']} = {cell['text']!r} at {width} px"
        assert cell["left"] >= 0 and cell["right"] <= width and not cell["clipped"], where
        assert cell["headShown"] or cell["label"] == json.dumps(cell["column"]), where
