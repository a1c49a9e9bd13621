"""``outerloop doctor``: check every precondition, each with a fix hint.

Each check is a small function returning ``Check(name, ok, detail, hint)``; the command
runs them all (one failing never hides the next), prints one line per check (``ok`` or
``FAIL``, what was found, and for a failure the fix) and exits 1 if any failed. Other
preconditions (Slurm commands, forge auth) are added by appending to ``CHECKS``.
"""

from __future__ import annotations

import re
import shutil
import stat
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import click

from outerloop.config import Settings, home_path, load_settings, read_key
from outerloop.errors import ConfigError

MIN_GIT = (2, 30)
PROBE_TIMEOUT_S = 10
DEFAULT_ENDPOINTS = {"claude": "https://api.anthropic.com", "codex": "https://api.openai.com/v1"}


@dataclass(frozen=True)
class Check:
    name: str
    ok: bool
    detail: str
    hint: str = ""


def check_home(settings: Settings) -> Check:
    mode = stat.S_IMODE(settings.home.stat().st_mode)
    if mode & (stat.S_IWGRP | stat.S_IWOTH):
        return Check("home permissions", False, f"{settings.home} has mode {mode:o}",
                     f"chmod go-w {settings.home}")
    return Check("home permissions", True, f"{settings.home} mode {mode:o}")


def check_git(settings: Settings) -> Check:
    found = shutil.which("git")
    if found is None:
        return Check("git", False, "git not found on PATH", "install git (apt-get install git)")
    out = subprocess.run([found, "--version"], capture_output=True, text=True).stdout.strip()
    match = re.search(r"(\d+)\.(\d+)", out)
    version = (int(match.group(1)), int(match.group(2))) if match else (0, 0)
    if version < MIN_GIT:
        return Check("git", False, out or "unknown version",
                     f"install git >= {MIN_GIT[0]}.{MIN_GIT[1]}")
    return Check("git", True, out)


def check_harness_binary(settings: Settings) -> Check:
    kind = settings.harness.kind
    if kind == "scripted":
        script = settings.harness.script
        if not script:
            return Check("harness (scripted)", False, "no script set",
                         "set [harness] script to a YAML script (docs/scripted-agent.md), "
                         "or choose --harness claude|codex")
        path = settings.path(script)
        if path is None or not path.is_file():
            return Check("harness (scripted)", False, f"script {path} missing",
                         "set [harness] script to a YAML script (docs/scripted-agent.md)")
        return Check("harness (scripted)", True, f"script {path}")
    from outerloop.harness.agent_cli import binary_version

    binary = settings.harness.binary or kind
    try:
        version = binary_version(binary)
    except ConfigError as exc:
        return Check(f"harness ({kind}) binary", False, str(exc).split("; fix:")[0],
                     f"npm install -g {_package(kind)} or set [harness] binary to its path")
    return Check(f"harness ({kind}) binary", True, f"{binary}: {version}")


def _package(kind: str) -> str:
    return "@anthropic-ai/claude-code" if kind == "claude" else "@openai/codex"


def check_model_key(settings: Settings) -> Check:
    if settings.harness.kind == "scripted":
        return Check("model key", True, "not needed by the scripted agent")
    name = settings.harness.model_key_file
    if not name:
        return Check("model key", False, "[harness] model_key_file is not set",
                     "write the key to keys/model-key, chmod 600, set model_key_file")
    try:
        read_key(settings.path(name))
    except ConfigError as exc:
        return Check("model key", False, str(exc).split("; fix:")[0],
                     str(exc).split("; fix:")[-1].strip())
    return Check("model key", True, f"{settings.path(name)} (0600)")


def check_endpoint(settings: Settings) -> Check:
    """A cheap HTTP probe: any HTTP answer (even 401/404) means the endpoint is up."""
    kind = settings.harness.kind
    if kind == "scripted":
        return Check("model endpoint", True, "not needed by the scripted agent")
    base = (settings.harness.base_url or DEFAULT_ENDPOINTS[kind]).rstrip("/")
    url = f"{base}/models" if base.endswith("/v1") else f"{base}/v1/models"
    try:
        with urllib.request.urlopen(url, timeout=PROBE_TIMEOUT_S) as answer:
            return Check("model endpoint", True, f"{url} answered {answer.status}")
    except urllib.error.HTTPError as exc:
        return Check("model endpoint", True, f"{url} answered {exc.code}")
    except (urllib.error.URLError, OSError, ValueError) as exc:
        reason = getattr(exc, "reason", exc)
        return Check("model endpoint", False, f"{url} did not answer ({reason})",
                     "check the network/proxy, or set [harness] base_url to a reachable "
                     "endpoint")


def check_contracts(settings: Settings) -> Check:
    """Each target's contract on its default branch: valid, and which of its fields
    this version ignores. A forge that cannot be reached is reported, not failed."""
    if not settings.targets:
        return Check("contracts", True, "no targets configured")
    from outerloop.contract import CONTRACT_FILE, ContractInvalid, load_contract_text
    from outerloop.contract_fields import ignored_field_warnings
    from outerloop.errors import OuterloopError
    from outerloop.forge.factory import make_forge

    found: list[str] = []
    bad: list[str] = []
    for target in settings.targets:
        try:
            forge = make_forge(settings)
            head = forge.branch_head(target.repo, forge.default_branch(target.repo))
            raw = forge.read_file(target.repo, CONTRACT_FILE, head) if head else None
        except OuterloopError as exc:
            found.append(f"{target.repo}: not read ({exc})")
            continue
        if raw is None:
            bad.append(f"{target.repo}: no {CONTRACT_FILE} on the default branch")
            continue
        try:
            contract = load_contract_text(raw.decode("utf-8", "replace"), target.repo)
        except ContractInvalid as exc:
            bad.append(f"{target.repo}: {'; '.join(exc.errors)}")
            continue
        notes = ignored_field_warnings(contract)
        if target.self_initiated:
            notes.append("[[targets]] self_initiated: not supported by this version; ignored")
        found.append(f"{target.repo}: valid" + "".join(f"; warning: {n}" for n in notes))
    if bad:
        return Check("contracts", False, " | ".join(bad + found),
                     f"fix the target's {CONTRACT_FILE} (check it with `outerloop contract "
                     f"check FILE`)")
    return Check("contracts", True, " | ".join(found))


CHECKS: list[Callable[[Settings], Check]] = [
    check_home, check_git, check_harness_binary, check_model_key, check_endpoint,
    check_contracts,
]


def check_sandbox(settings: Settings) -> Check:
    """The sandbox in force, proved by a confined child (``outerloop.sandbox.proof``)."""
    from outerloop.sandbox.proof import prove

    proof = prove(settings)
    return Check("sandbox", proof.ok, proof.detail, proof.hint)


CHECKS.append(check_sandbox)


def run_checks(settings: Settings) -> list[Check]:
    results = []
    for check in CHECKS:
        try:
            results.append(check(settings))
        except Exception as exc:  # a broken check is a failed check, never a crash
            results.append(Check(check.__name__.removeprefix("check_"), False,
                                 f"the check itself failed: {exc!r}", "report this"))
    return results


@click.command()
@click.option("--home", type=click.Path(path_type=Path), default=None,
              help="The home directory (default: $OUTERLOOP_HOME or ~/.outerloop).")
def doctor(home: Path | None) -> None:
    """Check every precondition (home, git, agent CLI, model key and endpoint)."""
    root = home_path(home)
    if not root.is_dir():
        click.echo(f"FAIL  home: no home at {root}  -> fix: outerloop init --home {root}")
        raise SystemExit(1)
    settings = load_settings(root, require_home=False)
    failed = False
    for result in run_checks(settings):
        failed = failed or not result.ok
        line = f"{'ok  ' if result.ok else 'FAIL'}  {result.name}: {result.detail}"
        if not result.ok and result.hint:
            line += f"  -> fix: {result.hint}"
        click.echo(line)
    if failed:
        raise SystemExit(1)


COMMANDS: list[click.Command] = [doctor]
