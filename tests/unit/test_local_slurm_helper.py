"""The local Slurm a user's clone can start is the repository's own
(``deploy/local-slurm/``): CI, the README and the Slurm tests' skip messages point at
it, and nothing points at a helper outside the repository (issue 23)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from tests import local_slurm
from tests.local_slurm import NO_REAL_SLURM, START_SCRIPT, STOP_SCRIPT

REPO = Path(__file__).resolve().parents[2]
OUTSIDE_HELPERS = re.compile(r"(start|stop)-local-slurm\.sh|\.\./shared/slurm|\$SHARED\b")
"""How the helper outside the repository (``../shared/slurm/``) was named."""


def tracked_texts() -> dict[str, str]:
    """Every text file git tracks (but this one), by path relative to the repository."""
    listed = subprocess.run(["git", "ls-files", "-z"], cwd=REPO, capture_output=True,
                            check=True).stdout.decode().split("\0")
    texts = {}
    for name in filter(None, listed):
        path = REPO / name
        if path.is_file() and path != Path(__file__).resolve():
            try:
                texts[name] = path.read_text(encoding="utf-8")
            except UnicodeDecodeError:
                continue
    return texts


def commands_of(text: str) -> str:
    """The lines of a shell script that are not comments."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


def test_start_and_stop_scripts_are_valid_bash_when_parsed_with_bash_n() -> None:
    for script in (START_SCRIPT, STOP_SCRIPT):
        parsed = subprocess.run(["bash", "-n", str(REPO / script)], capture_output=True,
                                text=True, check=False)
        assert parsed.returncode == 0, f"{script}: {parsed.stderr}"


def same_settings(tmp_path: Path, written: str, wanted: str) -> bool:
    """start.sh's own test of whether a config file must be replaced (and its daemon
    restarted): false when the settings differ."""
    (tmp_path / "written.conf").write_text(written)
    (tmp_path / "wanted.conf").write_text(wanted)
    compared = subprocess.run(
        ["bash", "-c", 'source "$1" && same_settings "$2" "$3"', "same_settings",
         str(REPO / START_SCRIPT), str(tmp_path / "wanted.conf"), str(tmp_path / "written.conf")],
        capture_output=True, text=True, check=False)
    assert compared.returncode in (0, 1), compared.stderr
    assert compared.stdout == compared.stderr == "", "sourcing start.sh must not start Slurm"
    return compared.returncode == 0


def test_start_keeps_a_running_config_when_only_comments_blanks_or_order_differ(
        tmp_path: Path) -> None:
    template = (REPO / "deploy" / "local-slurm" / "slurm.conf.in").read_text(encoding="utf-8")
    settings = [line for line in template.splitlines() if line and not line.startswith("#")]
    reworded = "# written by someone else\n\n" + "\n".join(f"  {line}  # why"
                                                         for line in reversed(settings))
    assert same_settings(tmp_path, reworded, template)


def test_start_replaces_a_config_when_one_setting_differs(tmp_path: Path) -> None:
    template = (REPO / "deploy" / "local-slurm" / "slurm.conf.in").read_text(encoding="utf-8")
    assert "AuthInfo=cred_expire=10\n" in template
    assert not same_settings(tmp_path, template.replace("cred_expire=10", "cred_expire=120"),
                             template)
    assert not same_settings(tmp_path, template.replace("KillWait=15\n", ""), template)


def test_ci_starts_and_stops_the_repositorys_own_local_slurm_when_run() -> None:
    ci = commands_of((REPO / ".ci" / "run").read_text(encoding="utf-8"))
    assert re.search(rf'^bash "\$REPO/{re.escape(START_SCRIPT)}"$', ci, re.M), ci
    assert re.search(rf"^trap 'bash \"\$REPO/{re.escape(STOP_SCRIPT)}\"' EXIT$", ci, re.M), ci
    assert "shared/" not in ci, "CI runs on a clean clone: nothing beside the repository"


def test_readme_and_operate_doc_name_the_repositorys_own_local_slurm() -> None:
    for doc in ("README.md", "docs/operate.md"):
        assert f"sudo bash {START_SCRIPT}" in (REPO / doc).read_text(encoding="utf-8"), doc


def test_skip_messages_name_the_repositorys_own_start_script_when_slurm_is_absent() -> None:
    assert (REPO / START_SCRIPT).is_file() and (REPO / STOP_SCRIPT).is_file()
    assert f"sudo bash {START_SCRIPT}" in NO_REAL_SLURM
    conftest = (REPO / "tests" / "slurm" / "conftest.py").read_text(encoding="utf-8")
    assert "REASON = NO_REAL_SLURM" in conftest
    for path in sorted((REPO / "tests" / "security").glob("*.py")):
        text = path.read_text(encoding="utf-8")
        assert "no real Slurm:" not in text, f"{path.name}: skip with local_slurm.NO_REAL_SLURM"


def test_no_tracked_file_points_at_a_local_slurm_outside_the_repository() -> None:
    found = [f"{name}:{number}: {line.strip()}"
             for name, text in tracked_texts().items()
             for number, line in enumerate(text.splitlines(), 1)
             if OUTSIDE_HELPERS.search(line)]
    assert found == [], f"use {START_SCRIPT} / {STOP_SCRIPT} ({local_slurm.__name__}):\n" + \
        "\n".join(found)
