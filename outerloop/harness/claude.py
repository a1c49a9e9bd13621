"""The Claude Code backend: one leg is one headless ``claude -p`` run.

The brief (or wake) goes on stdin; ``--output-format stream-json --verbose`` gives one
JSON event per line, ending with a ``result`` event that carries the session id, the
final text, turns, usage, cost, ``permission_denials`` and any API error. The session
id is chosen here, up front (``--session-id``), so even a leg that dies before its
first event can be resumed (``--resume``) by the next one.

The exit code alone is not trusted: a leg whose tools were denied exits 0 with
``subtype: success``, and an API refusal can report ``subtype: success`` with
``is_error: true``. What ended the leg is read from the ``result`` event:

- ``error_max_turns`` / ``terminal_reason: max_turns`` -> ``max_turns``;
- ``api_error_status`` (401, 429, 529, ...) -> ``refused`` when it is an outage
  (``harness/outage.py``), else ``error``;
- non-empty ``permission_denials`` -> ``permission_denied`` (the agent could not do
  what it tried; the kernel still reads whatever it staged);
- no ``result`` event at all -> ``error`` with the tail of stderr, or ``timeout`` when
  the walltime killed the process group.

``CLAUDE_CODE_MAX_RETRIES`` bounds the CLI's own retries (its default of 10 with
backoff turns one refusal into minutes of waiting).
"""

from __future__ import annotations

import json
import uuid
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
from outerloop.sandbox import Confinement, install_dir

KEY_VAR = "ANTHROPIC_API_KEY"
QUIET_ENV = {
    "DISABLE_AUTOUPDATER": "1",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
}


class ClaudeHarness:
    """Runs legs with the Claude Code CLI; see the module docstring. Never raises."""

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
            return SessionResult.failure(f"claude harness failed: {exc!r}", session_id=resume)

    def argv(self, binary: str, session_id: str, resumed: bool,
             limits: SessionLimits) -> list[str]:
        args = [binary, "-p", "--output-format", "stream-json", "--verbose",
                "--max-turns", str(limits.max_turns)]
        args += ["--resume", session_id] if resumed else ["--session-id", session_id]
        if self.cli.model:
            args += ["--model", self.cli.model]
        if self.cli.allowed_tools:
            args += ["--allowedTools", *self.cli.allowed_tools]
        return args

    def env(self, home: Path, key: str) -> dict[str, str]:
        extra = dict(QUIET_ENV)
        extra["CLAUDE_CODE_MAX_RETRIES"] = str(self.cli.max_retries)
        if self.cli.base_url:
            extra["ANTHROPIC_BASE_URL"] = self.cli.base_url.rstrip("/")
        extra.update(self.cli.extra_env)
        extra[KEY_VAR] = key
        return session_env(home, extra)

    def _run(self, prompt: str, workspace: Path, home: Path, resume: str | None,
             limits: SessionLimits) -> SessionResult:
        resumed = resume is not None and _is_uuid(resume)
        session_id = resume if resume is not None and resumed else str(uuid.uuid4())
        found = missing_binary(self.cli, resume)
        if isinstance(found, SessionResult):
            return found
        key = read_model_key(self.cli)
        if isinstance(key, SessionResult):
            return key.model_copy(update={"session_id": resume})
        home.mkdir(mode=0o700, parents=True, exist_ok=True)
        argv, env = self.argv(found, session_id, resumed, limits), self.env(home, key)
        if self.confinement is not None:
            argv, env = self.confinement.command(argv, env, workdir=workspace, scratch=home,
                                                 readable=[install_dir(found)])
        outcome = run_process_group(argv, workspace, env, prompt,
                                    limits.minutes * self.cli.seconds_per_minute)
        transcript = newest_transcript(home, ".claude/projects",
                                       lambda name: name == f"{session_id}.jsonl")
        return parse_stream(outcome, session_id, transcript)


def _is_uuid(value: str) -> bool:
    try:
        uuid.UUID(value)
    except ValueError:
        return False
    return True


def _events(stdout: str) -> list[dict[str, Any]]:
    events = []
    for line in stdout.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def _tokens(usage: Any) -> int:
    if not isinstance(usage, dict):
        return 0
    names = ("input_tokens", "output_tokens", "cache_creation_input_tokens",
             "cache_read_input_tokens")
    return sum(int(usage.get(n) or 0) for n in names)


def parse_stream(outcome: ProcessOutcome, session_id: str,
                 transcript: str | None) -> SessionResult:
    """The ``SessionResult`` of one ``claude -p`` run from its stream-json output."""
    events = _events(outcome.stdout)
    result = next((e for e in reversed(events) if e.get("type") == "result"), None)
    session_id = str((result or {}).get("session_id") or session_id)
    turns = sum(1 for e in events if e.get("type") == "assistant")
    if outcome.timed_out:
        return SessionResult.failure(
            f"the session passed its time limit; its process group was killed "
            f"({turns} assistant messages so far)", stop_reason="timeout",
            session_id=session_id, turns=turns, transcript_path=transcript)
    if result is None:
        return SessionResult.failure(
            f"claude exited {outcome.returncode} without a result event: "
            f"{detail(outcome.stderr or outcome.stdout)}", session_id=session_id,
            turns=turns, transcript_path=transcript)
    turns = int(result.get("num_turns") or turns)
    common: dict[str, Any] = {
        "session_id": session_id, "final_text": str(result.get("result") or ""),
        "cost_usd": max(0.0, float(result.get("total_cost_usd") or 0.0)), "turns": turns,
        "tokens": _tokens(result.get("usage")), "transcript_path": transcript,
    }
    subtype = str(result.get("subtype") or "")
    if subtype == "error_max_turns" or result.get("terminal_reason") == "max_turns":
        return SessionResult(stop_reason="max_turns", error_detail=detail(
            "; ".join(str(e) for e in result.get("errors") or []) or "max turns reached"),
            **common)
    status = result.get("api_error_status")
    if status is not None or result.get("terminal_reason") == "api_error":
        message = f"{result.get('api_error_type') or ''} {result.get('result') or ''}"
        kind = classify(int(status) if status is not None else None, message)
        stop: StopReason = "refused" if kind else "error"
        return SessionResult(stop_reason=stop, is_error=True, refusal=kind, error_detail=detail(
            f"model API error {status}: {message.strip()}"), **common)
    denials = result.get("permission_denials") or []
    if denials:
        listed = "; ".join(
            f"{d.get('tool_name')} {json.dumps(d.get('tool_input'))[:300]}"
            for d in denials if isinstance(d, dict))
        return SessionResult(stop_reason="permission_denied", is_error=True, error_detail=detail(
            f"{len(denials)} tool call(s) were denied permission: {listed}"), **common)
    if result.get("is_error") or subtype.startswith("error"):
        errors = "; ".join(str(e) for e in result.get("errors") or [])
        return SessionResult(stop_reason="error", is_error=True, error_detail=detail(
            f"claude ended with {subtype or 'an error'} (exit {outcome.returncode}): "
            f"{errors or common['final_text']}"), **common)
    return SessionResult(stop_reason="end_turn", **common)
