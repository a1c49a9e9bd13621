"""The scripted agent: plays a YAML script of per-leg steps instead of calling a model.

Tests and ``outerloop demo`` use it so the whole loop runs with no account, no API key
and no network. Same script + same prompts + same workspace -> same actions. The
format is documented in ``docs/scripted-agent.md``::

    legs:
      - - write: {path: src/solver.py, content: "..."}
        - shell: "sed -i 's/a/b/' src/solver.py"
        - syscall: "launch --name try-2opt --minutes 5 -- python evaluate.py --json"
        - syscall: sleep
      - - expect: "try-2opt"
        - syscall: "submit --report report.md"

Session state lives in ``<home>-harness/<session_id>.json`` (how many legs were
played); the transcript of every leg is appended to ``<home>-harness/<session_id>.jsonl``.
That directory sits beside the session HOME, not in it: no sandbox grant covers it, so
the agent can neither read its script's state nor plant a symlink where the harness
writes (a HOME-side ``.scripted/<id>.jsonl`` symlink once made the harness append the
agent's text to the operator's files). A session started by an older version resumes
from its ``<home>/.scripted/<id>.json``, read without following any symlink, once.
A leg is marked played *before* its first step runs, so a leg that failed or crashed
is never replayed: a resume always moves on, as a real agent session would. ``write``
steps write into the workspace through ``sandbox/beneath.py``: a symlink on the way is
refused, never followed.
"""

from __future__ import annotations

import json
import re
import shlex
import stat
import sys
import time
import uuid
from pathlib import Path, PurePosixPath
from typing import Any

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from outerloop.agent_tool import layout
from outerloop.atomic import write_atomic
from outerloop.harness.base import ERROR_STOPS, SessionLimits, SessionResult, StopReason
from outerloop.harness.env import ProcessOutcome, run_process_group, session_env
from outerloop.sandbox import Confinement, beneath
from outerloop.text import cap

STATE_DIR = ".scripted"
"""Where sessions of older versions kept their state, inside the HOME (read once)."""
HARNESS_DIR_SUFFIX = "-harness"
MAX_STATE_BYTES = 64 * 1024
SYSCALL_TOOL = layout.rel(layout.TOOL_FILE)
SESSION_ID_RE = re.compile(r"^scripted-[0-9a-f]{12}$")
STEP_KINDS = ("write", "shell", "syscall", "expect", "end", "cost")
MAX_DETAIL_CHARS = 8_000
MAX_TRANSCRIPT_OUTPUT_CHARS = 20_000
PROMPT_PREVIEW_CHARS = 300


class WriteSpec(BaseModel):
    """A file to write, relative to the workspace (no ``..``, not absolute)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    path: str = Field(min_length=1)
    content: str

    @field_validator("path")
    @classmethod
    def _repo_relative(cls, value: str) -> str:
        pure = PurePosixPath(value)
        if pure.is_absolute() or ".." in pure.parts or value.startswith("~"):
            raise ValueError(f"path {value!r} must be repo-relative, without '..'")
        return value


class EndSpec(BaseModel):
    """Ends the leg with a chosen stop reason (to rehearse outages, denials, timeouts)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    stop_reason: StopReason
    detail: str = ""


class Step(BaseModel):
    """One step of a leg: exactly one kind key, plus an optional ``may_fail``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    write: WriteSpec | None = None
    shell: str | None = Field(default=None, min_length=1)
    syscall: str | None = Field(default=None, min_length=1)
    expect: str | None = Field(default=None, min_length=1)
    end: EndSpec | None = None
    cost: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """USD the leg reports as spent (to rehearse money budgets; legs cost 0 otherwise)."""
    may_fail: bool = False

    @model_validator(mode="before")
    @classmethod
    def _one_kind(cls, raw: Any) -> Any:
        if not isinstance(raw, dict):
            raise ValueError(
                f"a step is a mapping with one of {', '.join(STEP_KINDS)}; "
                f"got {type(raw).__name__}"
            )
        unknown = [key for key in raw if key not in (*STEP_KINDS, "may_fail")]
        if unknown:
            raise ValueError(
                f"unknown step kind {unknown[0]!r} (valid: {', '.join(STEP_KINDS)}, may_fail)"
            )
        kinds = [key for key in raw if key in STEP_KINDS]
        if len(kinds) != 1:
            raise ValueError(
                f"a step has exactly one kind of {', '.join(STEP_KINDS)}; got "
                f"{', '.join(kinds) or 'none'}"
            )
        return raw

    @field_validator("syscall")
    @classmethod
    def _splits(cls, value: str | None) -> str | None:
        if value is not None:
            try:
                words = shlex.split(value)
            except ValueError as exc:
                raise ValueError(f"cannot split {value!r} like a shell would: {exc}") from None
            if not words:
                raise ValueError("a syscall names a verb (e.g. 'sleep')")
        return value

    @property
    def kind(self) -> str:
        return next(k for k in STEP_KINDS if getattr(self, k) is not None)

    def describe(self) -> str:
        if self.write is not None:
            return f"write {self.write.path}"
        return f"{self.kind} {getattr(self, self.kind)!r}"


class Script(BaseModel):
    """A whole script: one list of steps per leg (the first leg, then one per wake)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    legs: list[list[Step]]


class ScriptError(ValueError):
    """The script cannot be read or does not validate; the message names the YAML
    path of the problem (``legs[1][0]: unknown step kind 'shel'``)."""


def load_script(path: Path) -> Script:
    """Read and validate a script. Raises ``ScriptError`` naming the file and the
    YAML path of every problem."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ScriptError(f"scripted agent script {path}: cannot read it ({exc})") from None
    except yaml.YAMLError as exc:
        raise ScriptError(f"scripted agent script {path}: not valid YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ScriptError(f"scripted agent script {path}: the top level must be a mapping "
                          f"with `legs:` (a list of legs, each a list of steps)")
    try:
        return Script.model_validate(data)
    except ValidationError as exc:
        problems = "; ".join(_describe_error(e) for e in exc.errors())
        raise ScriptError(f"scripted agent script {path}: {problems}") from None


def _describe_error(error: Any) -> str:
    where = ""
    for part in error["loc"]:
        where += f"[{part}]" if isinstance(part, int) else (f".{part}" if where else str(part))
    message = str(error["msg"]).removeprefix("Value error, ")
    return f"{where or '(top)'}: {message}"


class _SessionState(BaseModel):
    model_config = ConfigDict(extra="forbid")

    session_id: str
    script: str
    legs_played: int = Field(ge=0)


class _LegEnd(Exception):
    """Stops a leg early with a result (internal control flow, never escapes ``run``)."""

    def __init__(self, stop_reason: StopReason, detail: str) -> None:
        super().__init__(detail)
        self.stop_reason: StopReason = stop_reason
        self.detail = detail


class ScriptedHarness:
    """Plays ``script_path`` one leg per ``run``; see the module docstring.

    ``seconds_per_minute`` scales ``limits.minutes`` (tests use a fraction of a second
    so a time-limit test need not wait a minute). ``confinement`` sandboxes every
    shell and syscall step (None: unconfined, for tests of the player itself).
    Never raises.
    """

    def __init__(self, script_path: Path, *, seconds_per_minute: float = 60.0,
                 confinement: Confinement | None = None) -> None:
        self.script_path = script_path
        self.seconds_per_minute = seconds_per_minute
        self.confinement = confinement

    def run(
        self,
        prompt: str,
        workspace: Path,
        home: Path,
        resume: str | None,
        limits: SessionLimits,
    ) -> SessionResult:
        try:
            return self._run(prompt, workspace, home, resume, limits)
        except Exception as exc:  # the seam never raises
            return SessionResult.failure(f"scripted harness failed: {exc!r}", session_id=resume)

    def _run(
        self,
        prompt: str,
        workspace: Path,
        home: Path,
        resume: str | None,
        limits: SessionLimits,
    ) -> SessionResult:
        deadline = time.monotonic() + limits.minutes * self.seconds_per_minute
        try:
            script = load_script(self.script_path)
        except ScriptError as exc:
            return SessionResult.failure(f"{exc}; fix the script", session_id=resume)
        if not workspace.is_dir():
            return SessionResult.failure(f"workspace {workspace} is not a directory",
                                         session_id=resume)
        state_dir = harness_dir(home)
        state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        if resume is None:
            state = _SessionState(session_id=f"scripted-{uuid.uuid4().hex[:12]}",
                                  script=str(self.script_path), legs_played=0)
        else:
            loaded = _load_state(state_dir, resume, home)
            if isinstance(loaded, str):
                return SessionResult.failure(loaded, session_id=resume)
            state = loaded
        session_id = state.session_id
        transcript = _Transcript(state_dir / f"{session_id}.jsonl")
        leg = state.legs_played
        transcript.write({"leg": leg, "event": "prompt", "text": prompt})
        if leg >= len(script.legs):
            text = (f"the script is exhausted: all {len(script.legs)} legs were played; "
                    f"nothing done")
            transcript.write({"leg": leg, "event": "end", "stop_reason": "end_turn",
                              "text": text})
            return SessionResult(stop_reason="end_turn", session_id=session_id,
                                 final_text=text, transcript_path=str(transcript.path))
        state.legs_played = leg + 1
        _save_state(state_dir, state)

        steps = script.legs[leg]
        player = _LegPlayer(prompt, workspace, session_env(home), deadline, transcript, leg)
        player.confine = (self.confinement, home)
        stop_reason: StopReason = "end_turn"
        detail: str | None = None
        for index, step in enumerate(steps):
            if index >= limits.max_turns:
                stop_reason = "max_turns"
                detail = (f"leg {leg} stopped after max_turns={limits.max_turns} steps "
                          f"of {len(steps)}")
                break
            try:
                player.play(index, step)
            except _LegEnd as end:
                stop_reason, detail = end.stop_reason, end.detail
                break
        text = (f"played leg {leg + 1} of {len(script.legs)}: {player.turns} of "
                f"{len(steps)} steps ({stop_reason})")
        transcript.write({"leg": leg, "event": "end", "stop_reason": stop_reason,
                          "detail": detail, "text": text})
        return SessionResult(
            stop_reason=stop_reason,
            is_error=stop_reason in ERROR_STOPS,
            error_detail=detail,
            session_id=session_id,
            final_text=text,
            turns=player.turns,
            cost_usd=round(player.cost_usd, 6),
            transcript_path=str(transcript.path),
        )


class _LegPlayer:
    """Runs the steps of one leg in the workspace with the session environment."""

    def __init__(self, prompt: str, workspace: Path, env: dict[str, str], deadline: float,
                 transcript: _Transcript, leg: int) -> None:
        self.prompt = prompt
        self.workspace = workspace
        self.env = env
        self.deadline = deadline
        self.transcript = transcript
        self.leg = leg
        self.turns = 0
        self.cost_usd = 0.0
        self.confine: tuple[Confinement | None, Path] = (None, workspace)

    def play(self, index: int, step: Step) -> None:
        """Run one step; raise ``_LegEnd`` when the leg must stop here."""
        where = f"legs[{self.leg}][{index}]"
        remaining = self.deadline - time.monotonic()
        if remaining <= 0:
            raise _LegEnd("timeout", f"{where}: the session passed its time limit before "
                                     f"this step ({step.describe()})")
        self.turns += 1
        record: dict[str, Any] = {"leg": self.leg, "event": "step", "where": where,
                                  "kind": step.kind, "step": step.model_dump(exclude_none=True)}
        ok, output, timed_out = self._execute(step, remaining, record)
        record["ok"] = ok
        record["output"] = cap(output, MAX_TRANSCRIPT_OUTPUT_CHARS, keep="tail")
        self.transcript.write(record)
        if timed_out:
            raise _LegEnd("timeout", cap(
                f"{where} ({step.describe()}): the session passed its time limit; its "
                f"process group was killed\n{output}", MAX_DETAIL_CHARS, keep="tail"))
        if step.end is not None:
            raise _LegEnd(step.end.stop_reason, step.end.detail or f"{where}: scripted end")
        if not ok and not step.may_fail:
            raise _LegEnd("error", cap(f"{where} ({step.describe()}) failed:\n{output}",
                                       MAX_DETAIL_CHARS, keep="tail"))

    def _execute(self, step: Step, remaining: float,
                 record: dict[str, Any]) -> tuple[bool, str, bool]:
        """``(ok, output, timed_out)`` of one step; process steps add their exit code
        to ``record``."""
        if step.write is not None:
            ok, output = self._write(step.write)
            return ok, output, False
        if step.expect is not None:
            if step.expect in self.prompt:
                return True, f"the prompt contains {step.expect!r}", False
            preview = cap(self.prompt, PROMPT_PREVIEW_CHARS)
            return False, (f"expected the prompt to contain {step.expect!r}; it does not "
                           f"(prompt begins: {preview!r})"), False
        if step.end is not None:
            return True, f"end: {step.end.stop_reason}", False
        if step.cost is not None:
            self.cost_usd += step.cost
            return True, f"cost: the leg reports {self.cost_usd:g} USD so far", False
        if step.shell is not None:
            argv = ["bash", "-c", step.shell]
        else:
            assert step.syscall is not None
            argv = [sys.executable, SYSCALL_TOOL, *shlex.split(step.syscall)]
        env = self.env
        confinement, home = self.confine
        if confinement is not None:
            argv, env = confinement.command(argv, env, workdir=self.workspace, scratch=home)
        outcome = run_process_group(argv, self.workspace, env, None, remaining)
        record["returncode"] = outcome.returncode
        record["timed_out"] = outcome.timed_out
        output = _combine(outcome)
        if outcome.timed_out:
            return False, output, True
        return outcome.returncode == 0, f"exit {outcome.returncode}\n{output}", False

    def _write(self, spec: WriteSpec) -> tuple[bool, str]:
        """Write a file into the workspace; a symlink on the way (the agent's own shell
        steps may plant one) is refused, never followed. An existing file keeps its
        mode."""
        path = PurePosixPath(spec.path)
        try:
            if len(path.parts) > 1:
                beneath.makedirs(self.workspace, path.parent)
            info = beneath.lstat(self.workspace, path)
            mode = stat.S_IMODE(info.st_mode) if info and stat.S_ISREG(info.st_mode) else 0o644
            beneath.write(self.workspace, path, spec.content.encode("utf-8"), mode)
        except beneath.SymlinkRefused as exc:
            return False, f"refused: {exc}"
        except OSError as exc:
            return False, f"cannot write {spec.path}: {exc}"
        return True, f"wrote {len(spec.content.encode('utf-8'))} bytes to {spec.path}"


def _combine(outcome: ProcessOutcome) -> str:
    parts = []
    if outcome.stdout:
        parts.append(f"--- stdout ---\n{outcome.stdout}")
    if outcome.stderr:
        parts.append(f"--- stderr ---\n{outcome.stderr}")
    return "\n".join(parts)


class _Transcript:
    """Appends one JSON object per line: the prompt, each step with its output, the end."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def write(self, record: dict[str, Any]) -> None:
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")


def harness_dir(home: Path) -> Path:
    """The harness's own directory for sessions of ``home``: beside it, never granted."""
    return home.with_name(home.name + HARNESS_DIR_SUFFIX)


def _load_state(state_dir: Path, session_id: str, home: Path) -> _SessionState | str:
    """The saved state of a session, or a message saying why it cannot be resumed.
    A session of an older version is found in ``<home>/.scripted/`` (read without
    following symlinks) and carries on from here."""
    if not SESSION_ID_RE.match(session_id):
        return f"cannot resume {session_id!r}: not a scripted session id"
    path = state_dir / f"{session_id}.json"
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        try:
            raw = beneath.read(home, f"{STATE_DIR}/{session_id}.json", MAX_STATE_BYTES)
        except FileNotFoundError:
            return f"cannot resume {session_id!r}: no such session in {state_dir}"
        except OSError as exc:
            return f"cannot resume {session_id!r}: its old state is unusable ({exc})"
    except OSError as exc:
        return f"cannot resume {session_id!r}: its state {path} is unreadable ({exc})"
    try:
        return _SessionState.model_validate_json(raw[:MAX_STATE_BYTES])
    except ValidationError as exc:
        return f"cannot resume {session_id!r}: its state {path} is unreadable ({exc})"


def _save_state(state_dir: Path, state: _SessionState) -> None:
    write_atomic(state_dir / f"{state.session_id}.json", state.model_dump_json() + "\n")

