"""The Codex backend: one leg is one ``codex exec --json`` run (``exec resume`` after).

Codex 0.171 ignores ``OPENAI_BASE_URL``; the endpoint is a custom provider written to
a per-run ``CODEX_HOME`` (``<run home>/.codex/config.toml``) before every leg, with
the key passed by environment name (``env_key``), never written to a file. The HOME is
the agent's: the file is replaced through ``sandbox/beneath.py``, never through a
symlink the agent planted there. The
prompt goes on stdin (``-``) and stdin is then closed, or Codex waits for more input.
``-s workspace-write`` lets commands write in the workspace only when outerloop runs
Codex unconfined; under outerloop's sandbox (``outerloop.sandbox``) Codex's own bwrap
cannot start, so it runs ``-s danger-full-access`` and ours confines it (the default in exec
is read-only, where every edit fails). Login shells are off (``allow_login_shell``):
a login shell re-reads ``/etc/profile``, which resets ``PATH`` and hides the
operator's Python from the agent.

Events: ``thread.started`` (the thread id, the next leg's ``resume``), ``item.*``
(commands, messages; an ``error`` item such as "Model metadata for ... not found" is a
warning and not fatal), ``turn.completed`` (usage) and ``turn.failed`` (the error;
an API refusal is classified by the status in its message). Codex has no max-turns
flag: a leg is bounded by its walltime only. Codex reports no cost: ``cost_usd`` is 0.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from outerloop.errors import DeploymentError
from outerloop.harness.agent_cli import (
    CliSettings,
    detail,
    missing_binary,
    newest_transcript,
    read_model_key,
)
from outerloop.harness.base import SessionLimits, SessionResult, StopReason
from outerloop.harness.env import ProcessOutcome, run_process_group, session_env
from outerloop.harness.outage import classify
from outerloop.sandbox import Confinement, beneath, install_dir

KEY_VAR = "OPENAI_API_KEY"
PROVIDER = "outerloop"
DEFAULT_BASE_URL = "https://api.openai.com/v1"
CODEX_DIR = ".codex"
CONFIG_FILE = "config.toml"
TURN_ITEMS = frozenset({"command_execution", "agent_message", "file_change", "mcp_tool_call",
                        "web_search"})


def _toml_string(value: str) -> str:
    return json.dumps(value)


def provider_config(cli: CliSettings) -> str:
    """The ``config.toml`` of a run's ``CODEX_HOME``: one provider, no key in it."""
    base = (cli.base_url or DEFAULT_BASE_URL).rstrip("/")
    lines = []
    if cli.model:
        lines.append(f"model = {_toml_string(cli.model)}")
    lines += [
        f"model_provider = {_toml_string(PROVIDER)}",
        "allow_login_shell = false",
        "",
        f"[model_providers.{PROVIDER}]",
        f"name = {_toml_string(PROVIDER)}",
        f"base_url = {_toml_string(base)}",
        f"env_key = {_toml_string(KEY_VAR)}",
        'wire_api = "responses"',
        f"request_max_retries = {cli.max_retries}",
        f"stream_max_retries = {cli.max_retries}",
        "",
    ]
    return "\n".join(lines)


class CodexHarness:
    """Runs legs with the Codex CLI; see the module docstring. Never raises."""

    def __init__(self, cli: CliSettings, confinement: Confinement | None = None) -> None:
        self.cli = cli
        self.confinement = confinement

    def run(self, prompt: str, workspace: Path, home: Path, resume: str | None,
            limits: SessionLimits) -> SessionResult:
        try:
            return self._run(prompt, workspace, home, resume, limits)
        except DeploymentError:  # the node's, not the session's: the run waits for the fix
            raise
        except Exception as exc:  # the seam raises nothing else
            return SessionResult.failure(f"codex harness failed: {exc!r}", session_id=resume)

    def argv(self, binary: str, workspace: Path, resume: str | None) -> list[str]:
        args = [binary, "exec", "--json", "-s", self.sandbox_mode(), "--skip-git-repo-check",
                "-C", str(workspace)]
        if resume:
            args += ["resume", resume]
        return [*args, "-"]

    def sandbox_mode(self) -> str:
        """Codex's own sandbox (bwrap) cannot start inside ours: under outerloop's
        sandbox Codex runs with its own off and ours confines it."""
        confined = self.confinement is not None and self.confinement.kind != "off"
        return "danger-full-access" if confined else "workspace-write"

    def env(self, home: Path, key: str) -> dict[str, str]:
        extra = {"CODEX_HOME": str((home / CODEX_DIR).absolute())}
        extra.update(self.cli.extra_env)
        extra[KEY_VAR] = key
        return session_env(home, extra)

    def _run(self, prompt: str, workspace: Path, home: Path, resume: str | None,
             limits: SessionLimits) -> SessionResult:
        found = missing_binary(self.cli, resume)
        if isinstance(found, SessionResult):
            return found
        key = read_model_key(self.cli)
        if isinstance(key, SessionResult):
            return key.model_copy(update={"session_id": resume})
        write_config(home, provider_config(self.cli))
        codex_home = home / CODEX_DIR
        argv, env = self.argv(found, workspace, resume), self.env(home, key)
        if self.confinement is not None:
            argv, env = self.confinement.command(argv, env, workdir=workspace, scratch=home,
                                                 readable=[install_dir(found)])
        outcome = run_process_group(argv, workspace, env, prompt,
                                    limits.minutes * self.cli.seconds_per_minute)
        return parse_events(outcome, resume, codex_home)


def write_config(home: Path, text: str) -> None:
    """Replace ``<home>/.codex/config.toml``, never following a symlink the agent left
    at ``.codex`` or ``config.toml`` (``sandbox/beneath.py``): a planted ``.codex``
    link or file is removed (its target untouched) and a real directory made."""
    beneath.makedirs(home, CODEX_DIR, 0o700, clear=True)
    beneath.write(home, f"{CODEX_DIR}/{CONFIG_FILE}", text.encode("utf-8"), 0o600,
                  clear=True)


def _events(stdout: str) -> list[dict[str, Any]]:
    events = []
    for line in stdout.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                event = json.loads(line)
            except ValueError:
                continue
            if isinstance(event, dict):
                events.append(event)
    return events


def _usage_tokens(usage: Any) -> int:
    if not isinstance(usage, dict):
        return 0
    return int(usage.get("input_tokens") or 0) + int(usage.get("output_tokens") or 0)


def parse_events(outcome: ProcessOutcome, resume: str | None,
                 codex_home: Path) -> SessionResult:
    """The ``SessionResult`` of one ``codex exec --json`` run from its events."""
    events = _events(outcome.stdout)
    thread = next((str(e["thread_id"]) for e in events
                   if e.get("type") == "thread.started" and e.get("thread_id")), resume)
    final_text, turns, tokens = "", 0, 0
    failure: str | None = None
    for event in events:
        kind = event.get("type")
        raw_item = event.get("item")
        item: dict[str, Any] = raw_item if isinstance(raw_item, dict) else {}
        if kind == "item.completed" and item.get("type") in TURN_ITEMS:
            turns += 1
            if item.get("type") == "agent_message":
                final_text = str(item.get("text") or "")
        elif kind == "turn.completed":
            tokens += _usage_tokens(event.get("usage"))
        elif kind == "turn.failed":
            error = event.get("error")
            failure = str(error.get("message") if isinstance(error, dict) else error)
        elif kind == "error" and failure is None:
            failure = str(event.get("message") or "")
    transcript = None
    if thread:
        transcript = newest_transcript(
            codex_home.parent, f"{codex_home.name}/sessions",
            lambda name: name.startswith("rollout-") and name.endswith(f"{thread}.jsonl"))
    common: dict[str, Any] = {"session_id": thread, "final_text": final_text, "turns": turns,
                              "tokens": tokens, "transcript_path": transcript}
    if outcome.timed_out:
        return SessionResult(stop_reason="timeout", is_error=True, error_detail=(
            f"the session passed its time limit; its process group was killed "
            f"({turns} items so far)"), **common)
    if failure is not None or outcome.returncode != 0:
        message = failure or detail(outcome.stderr or outcome.stdout)
        kind = classify(None, message)
        stop: StopReason = "refused" if kind else "error"
        return SessionResult(stop_reason=stop, is_error=True, refusal=kind, error_detail=detail(
            f"codex exited {outcome.returncode}: {message}"), **common)
    return SessionResult(stop_reason="end_turn", **common)
