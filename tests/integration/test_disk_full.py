"""A full disk: one line naming the problem and the fix, and nothing half-written.

Each scenario runs in its own mount namespace (``unshare``) on a small tmpfs that the
test fills up: a real ENOSPC, no mocks.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]
MOUNT = 'mount -t tmpfs -o size=16m,nr_inodes=4000 tmpfs "$1" && exec "$2" -c "$3" "$1"'

FILL = '''
def fill(root):
    with open(root / "filler", "wb", buffering=0) as handle:
        for size in (1 << 20, 1 << 16, 1 << 12, 1):
            try:
                while True:
                    handle.write(b"\\0" * size)
            except OSError:
                pass
'''

TICK_ON_A_FULL_DISK = FILL + '''
import json, subprocess, sys
from pathlib import Path
from tests.support import make_home, open_issue

root = Path(sys.argv[1])
settings = make_home(root)
open_issue(settings, "Faster please", "Make it all faster.")  # names no benchmark
tick = [sys.executable, "-m", "outerloop", "tick", "--home", str(settings.home)]
first = subprocess.run(tick, capture_output=True, text=True)
ledger = settings.home / "ledger"
before = {str(p): p.read_bytes() for p in ledger.rglob("*.jsonl")}
open_issue(settings, "Quicker please", "Make it quicker.")
fill(root)
done = subprocess.run(tick, capture_output=True, text=True)
after = {str(p): p.read_bytes() for p in ledger.rglob("*.jsonl")}
print(json.dumps({"first": first.returncode, "code": done.returncode, "stderr": done.stderr,
                  "stdout": done.stdout, "same": before == after,
                  "tmp": [str(p) for p in settings.home.rglob("*.tmp*")]}))
'''

INODES = '''
def fill(root):  # empty files until no inode is left: the bytes stay free
    (root / "many").mkdir()
    n = 0
    try:
        while True:
            (root / "many" / str(n)).touch()
            n += 1
    except OSError:
        pass
'''

TICK_WITHOUT_INODES = TICK_ON_A_FULL_DISK.replace(FILL, INODES)

READ_ONLY = '''
def fill(root):  # the home's filesystem remounted read-only
    import subprocess
    subprocess.run(["mount", "-o", "remount,ro", str(root)], check=True)
'''

TICK_ON_A_READ_ONLY_HOME = TICK_ON_A_FULL_DISK.replace(FILL, READ_ONLY)

APPEND_ON_A_FULL_DISK = FILL + '''
import json, sys
from pathlib import Path
from outerloop.ledger import events as ev
from outerloop.ledger.store import LedgerWriter

root = Path(sys.argv[1])
path = root / "ledger" / "t.jsonl"
writer = LedgerWriter(path)
writer.append(ev.Note(text="fits"))
before = path.read_bytes()
fill(root)
error = None
try:
    writer.append(ev.Note(text="x" * 50_000))  # more than the page's slack
except OSError as exc:
    error = exc.strerror
print(json.dumps({"error": error, "same": path.read_bytes() == before}))
'''


def _in_small_fs(tmp_path: Path, code: str) -> dict[str, Any]:
    if shutil.which("unshare") is None:
        pytest.skip("unshare (util-linux) is not installed: no private tmpfs to fill")
    mount = tmp_path / "fs"
    mount.mkdir()
    probe = subprocess.run(["unshare", "-rm", "true"], capture_output=True, text=True,
                           check=False)
    if probe.returncode != 0:
        pytest.skip(f"user namespaces are off here ({probe.stderr.strip()}): no private "
                    f"tmpfs to fill")
    done = subprocess.run(["unshare", "-rm", "sh", "-c", MOUNT, "sh", str(mount),
                           sys.executable, code], capture_output=True, text=True,
                          timeout=300, check=False, cwd=REPO,
                          env={"PATH": "/usr/local/bin:/usr/bin:/bin", "PYTHONPATH": str(REPO),
                               "HOME": str(tmp_path)})
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_tick_says_one_line_and_writes_nothing_half_when_the_disk_is_full(
        tmp_path: Path) -> None:
    result = _in_small_fs(tmp_path, TICK_ON_A_FULL_DISK)
    assert result["first"] == 0
    assert result["code"] != 0
    lines = result["stderr"].strip().splitlines()
    assert len(lines) == 1, result["stderr"]
    assert lines[0].startswith("outerloop: No space left on device")
    assert "fix: free space" in lines[0] and "Traceback" not in result["stderr"]
    assert result["same"] and result["tmp"] == []


def test_ledger_append_leaves_no_half_line_when_the_disk_fills_mid_write(
        tmp_path: Path) -> None:
    result = _in_small_fs(tmp_path, APPEND_ON_A_FULL_DISK)
    assert result["error"] == "No space left on device"
    assert result["same"]


def test_tick_names_the_inodes_and_df_i_when_the_disk_has_bytes_but_no_inodes(
        tmp_path: Path) -> None:
    result = _in_small_fs(tmp_path, TICK_WITHOUT_INODES)
    assert result["first"] == 0 and result["code"] != 0
    lines = result["stderr"].strip().splitlines()
    assert len(lines) == 1, result["stderr"]
    assert "no free inodes" in lines[0] and "(df -i)" in lines[0], lines[0]
    assert "(df -h)" not in lines[0]
    assert result["same"] and result["tmp"] == []


def test_tick_says_one_line_with_the_fix_when_the_home_is_read_only(tmp_path: Path) -> None:
    result = _in_small_fs(tmp_path, TICK_ON_A_READ_ONLY_HOME)
    assert result["first"] == 0 and result["code"] != 0
    lines = result["stderr"].strip().splitlines()
    assert len(lines) == 1, result["stderr"]
    assert lines[0].startswith("outerloop: Read-only file system"), lines[0]
    assert "fix: remount that filesystem read-write" in lines[0]
    assert "Traceback" not in result["stderr"] and result["same"]
