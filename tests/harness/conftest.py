"""Fixtures for the real agent CLIs (installed by `npm ci --prefix tests/harness`).

A test that needs a CLI asks for ``claude_bin`` or ``codex_bin``; when the pinned CLI
is not installed the test is skipped with the reason and the command that installs
it (pytest prints skip reasons with ``-ra``).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from outerloop.config import Settings, load_settings
from tests.support import AGENTS, EXAMPLE_TARGET, make_home

HERE = Path(__file__).resolve().parent
BIN = HERE / "node_modules" / ".bin"
FORGE_SECRET = "ghp_forgeTOKENthatMustNeverLeak0123"
STRAY_SECRET = "sk-strayKEYfromTheOperatorShell4567"
MODEL_KEY = "sk-session-own-model-key-89ab"


def _cli(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.skip(f"the {name} CLI is not installed in {BIN}; install it with "
                    f"`npm ci --prefix tests/harness` (needs the npm registry)")
    try:
        subprocess.run([str(path), "--version"], capture_output=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError) as exc:
        pytest.skip(f"the {name} CLI in {BIN} does not run ({exc}); reinstall with "
                    f"`npm ci --prefix tests/harness`")
    return str(path)


@pytest.fixture(scope="session")
def claude_bin() -> str:
    return _cli("claude")


@pytest.fixture(scope="session")
def codex_bin() -> str:
    return _cli("codex")


@pytest.fixture
def leaky_parent_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The operator's shell holds a forge token and a stray key: neither may reach a
    session."""
    monkeypatch.setenv("GITHUB_TOKEN", FORGE_SECRET)
    monkeypatch.setenv("GH_TOKEN", FORGE_SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", STRAY_SECRET)
    monkeypatch.setenv("ANTHROPIC_API_KEY", STRAY_SECRET)
    yield


def shared_data(tmp_path: Path) -> Path:
    """A read-only data directory outside the home, declared in ``[sandbox]``."""
    path = tmp_path / "shared-data"
    path.mkdir(exist_ok=True)
    return path


def two_opt_solution(tmp_path: Path) -> Path:
    """The known good 2-opt solver, from the scripted example agent, as a file the
    scripted model has the CLI copy into the workspace. It lives in a directory the
    home declares readable (``[sandbox] read_only``, as a dataset would be): the
    session runs sandboxed and reads nothing else outside its workspace."""
    script = yaml.safe_load((AGENTS / "tinytsp-2opt.yaml").read_text())
    content = script["legs"][0][1]["write"]["content"]
    path = shared_data(tmp_path) / "two_opt_tour.py"
    path.write_text(content)
    return path


def target_with_turn_cap(tmp_path: Path, turns: int) -> Path:
    """A copy of the example target whose contract caps sessions at ``turns`` turns."""
    copy = tmp_path / "target"
    shutil.copytree(EXAMPLE_TARGET, copy, ignore=shutil.ignore_patterns("__pycache__"))
    contract = copy / ".outerloop.yaml"
    contract.write_text(contract.read_text().replace(
        "budgets:\n", f"budgets:\n  session_max_turns: {turns}\n"))
    return copy


def cli_home(tmp_path: Path, kind: str, binary: str, base_url: str, *,
             target_dir: Path = EXAMPLE_TARGET, extra: str = "") -> Settings:
    """A home like ``tests.support.make_home`` whose harness is a real agent CLI pointed
    at a scripted model, with its key in ``keys/model-key`` and a forge token in
    ``keys/forge-token``. Retries are off so a refusal costs one request."""
    settings = make_home(tmp_path, target_dir=target_dir)
    home = settings.home
    key = home / "keys" / "model-key"
    key.write_text(MODEL_KEY + "\n")
    os.chmod(key, 0o600)
    token = home / "keys" / "forge-token"
    token.write_text(FORGE_SECRET + "\n")
    os.chmod(token, 0o600)
    config = home / "outerloop.toml"
    text = config.read_text()
    start = text.index("[harness]")
    end = text.index("\n[", start + 1)
    model = "claude-scripted" if kind == "claude" else "gpt-scripted"
    harness = (f'[harness]\nkind = "{kind}"\nbinary = "{binary}"\nmodel = "{model}"\n'
               f'model_key_file = "keys/model-key"\nbase_url = "{base_url}"\n'
               f"max_retries = 0\n{extra}\n")
    sandbox = f'\n[sandbox]\nread_only = ["{shared_data(tmp_path)}"]\n'
    config.write_text(text[:start] + harness + text[end:] + sandbox)
    return load_settings(home)
