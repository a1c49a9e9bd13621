"""The kernel side of the channel: install the agent's tool, read what it committed,
write the views it reads, bring artifacts back.

The channel is ``ws/.outerloop/``, excluded from git through ``.git/info/exclude`` so
nothing in it is ever sealed. Everything in it is in the agent's hands between legs, so
the kernel trusts none of it:

- ``read_committed`` re-checks every rule the tool checked (the tool copy may have been
  edited, or bypassed by writing ``syscall.json`` by hand), using the rule functions of
  the *installed* ``outerloop.agent_tool.rules`` plus strict pydantic models, and the
  limits the kernel passes in (never ``limits.json``, which the agent can rewrite);
- every read, write, rename and removal goes through ``sandbox/beneath.py``, relative
  to the workspace: no symlink is followed on any component, even one a leftover
  process swaps in between two kernel calls; a symlink or file planted where a kernel
  directory should be is removed (its target untouched), never followed;
- ``copy_artifacts`` copies only regular files inside the launch's work tree, none
  reached through a symlink, none over ``MAX_ARTIFACT_BYTES``, opened once (no check
  then open again).

A broken rule raises ``ChannelError`` whose message is written for the agent: which rule,
and what to do. The caller hands it back at the resume; a refusal costs the run nothing.
"""

from __future__ import annotations

import io
import json
import re
import stat
import subprocess
import zipfile
from collections.abc import Collection, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from outerloop.agent_tool import layout, rules
from outerloop.agent_tool.layout import (
    CHANNEL_DIR,
    COMMITTED_FILE,
    EXCLUDE_LINE,
    HISTORY_FILE,
    LIMITS_FILE,
    QUEUE_FILE,
    REPORTS_DIR,
    REQUEST_FILE,
    SIBLINGS_FILE,
    STATUS_FILE,
    TOOL_FILE,
)
from outerloop.config import environ
from outerloop.errors import OuterloopError
from outerloop.limits import EVAL_MINUTES_CEILING
from outerloop.sandbox import beneath
from outerloop.text import cap

"""The channel's names (``agent_tool/layout.py``), re-exported for the kernel's callers;
the rest of the module's public names are its own."""

MAX_LAUNCHES_PER_SLEEP = 8
MAX_LAUNCH_MINUTES = 240
MAX_ARRAY = 16
MAX_COMMAND_CHARS = 2000
MAX_ARTIFACTS = 8
MAX_ARTIFACT_BYTES = 5 * 1024 * 1024
MAX_WHY_CHARS = 200
MAX_REPORT_CHARS = 8000
MAX_REQUEST_BYTES = 64 * 1024
MAX_MESSAGE_CHARS = 4000
MAX_SUBMIT_MINUTES = EVAL_MINUTES_CEILING
MAX_LAUNCH_GPUS = 8
MAX_HEADLINE_CHARS = 300
MAX_LAST_LINE_CHARS = 500
NAME_PATTERN = rules.NAME_PATTERN
GIT_TIMEOUT_S = 60
MAX_EXCLUDE_BYTES = 1024 * 1024
EXCLUDE_PATH = ".git/info/exclude"
"""Where a plain clone keeps its exclude file (the workspace is one the kernel made)."""

DEFAULT_LIMITS: dict[str, int] = {
    "max_launches_per_sleep": MAX_LAUNCHES_PER_SLEEP,
    "max_launch_minutes": MAX_LAUNCH_MINUTES,
    "max_array": MAX_ARRAY,
    "max_command_chars": MAX_COMMAND_CHARS,
    "max_artifacts": MAX_ARTIFACTS,
    "max_artifact_bytes": MAX_ARTIFACT_BYTES,
    "max_why_chars": MAX_WHY_CHARS,
    "max_report_chars": MAX_REPORT_CHARS,
    "max_request_bytes": MAX_REQUEST_BYTES,
    "max_message_chars": MAX_MESSAGE_CHARS,
    "max_submit_minutes": MAX_SUBMIT_MINUTES,
    "max_launch_gpus": MAX_LAUNCH_GPUS,
}
BUDGET_KEYS = rules.BUDGET_KEYS
_REPORT_NAME_RE = re.compile(rules.REPORT_NAME_PATTERN)

_GIT_HARDENING = (
    "-c", "core.hooksPath=/dev/null",
    "-c", "core.fsmonitor=false",
    "-c", "credential.helper=",
    "-c", "protocol.allow=never",
)


class ChannelError(OuterloopError):
    """The channel cannot be set up, or what the agent committed breaks a rule.

    The message is written for the agent: it names the rule and the fix.
    """


# ---------------------------------------------------------------------------- models


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class LaunchRequest(_Strict):
    """One experiment the agent asked for (an array of ``array`` tasks when > 1)."""

    name: str = Field(pattern=f"^{NAME_PATTERN}$")
    minutes: int = Field(ge=1, le=MAX_LAUNCH_MINUTES)
    array: int = Field(default=1, ge=1, le=MAX_ARRAY)
    concurrency: int = Field(default=1, ge=1, le=MAX_ARRAY)
    gpus: int | None = Field(default=None, ge=0, le=MAX_LAUNCH_GPUS,
                             description="per task; None: the benchmark's")
    why: str = Field(default="", max_length=MAX_WHY_CHARS)
    artifacts: list[str] = Field(default_factory=list, max_length=MAX_ARTIFACTS)
    command: str = Field(min_length=1, max_length=MAX_COMMAND_CHARS)

    @model_validator(mode="after")
    def _coherent(self) -> LaunchRequest:
        if self.concurrency > self.array:
            raise ValueError(f"concurrency {self.concurrency} exceeds array {self.array}")
        for path in self.artifacts:
            problem = rules.artifact_problem(path)
            if problem:
                raise ValueError(problem)
        return self


class SubmitRequest(_Strict):
    """The candidate submission: the agent's report and an optional eval-minutes wish."""

    report: str = Field(min_length=1, max_length=MAX_REPORT_CHARS)
    minutes: int | None = Field(default=None, ge=1, le=MAX_SUBMIT_MINUTES)


class MessageRequest(_Strict):
    """A message for the run's issue/PR thread, or a note for the run's record."""

    to: Literal["thread", "self"]
    text: str = Field(min_length=1, max_length=MAX_MESSAGE_CHARS)


class CommittedRequest(_Strict):
    """What the agent committed at the end of a leg, after every rule was re-checked."""

    verb: Literal["sleep", "stop"]
    launches: list[LaunchRequest] = Field(default_factory=list,
                                          max_length=MAX_LAUNCHES_PER_SLEEP)
    submit: SubmitRequest | None = None
    messages: list[MessageRequest] = Field(default_factory=list)
    stop_report: str | None = Field(default=None, max_length=MAX_REPORT_CHARS)
    withdraw: str | None = Field(default=None, min_length=1, max_length=MAX_MESSAGE_CHARS)
    at: str | None = None


class _View(BaseModel):
    model_config = ConfigDict(extra="forbid")


class StatusView(_View):
    """``status.json``: where the run stands, for the agent's ``status`` verb."""

    run_id: str
    benchmark: str
    agent: str | None = None
    state: str
    sleeps_used: int
    sleeps_left: int
    launches_used: int
    launches_left: int
    gpu_hours_used: float | None = None
    gpu_hours_left: float | None = None
    pr: int | None = None


class HistoryEntry(_View):
    """One line of ``history.json``: a launch (or one array task) and how it ended."""

    sleep: int = Field(ge=0)
    name: str
    task: int | None = None
    why: str = ""
    job: str | None = None
    state: str | None = None
    exit_code: int | None = None
    elapsed_s: int | None = None
    last_line: str | None = None


class QueueEntry(_View):
    """One line of ``queue.json``: a job of this run still queued or running."""

    name: str
    task: int | None = None
    job: str
    state: str
    elapsed_s: int = 0
    limit_minutes: int


class SiblingEntry(_View):
    """One line of ``siblings.json``: another active run on the same target."""

    run_id: str | None = None
    agent: str
    benchmark: str
    headline: str


# ------------------------------------------------------------------------ the limits


def channel_limits(overrides: Mapping[str, int | None] | None = None) -> dict[str, int]:
    """The limits a leg gets: code defaults, lowered (never raised) by ``overrides``.

    Besides the ``max_*`` keys, ``launches_left`` and ``sleeps_left`` (the run's
    remaining budget) may be set. An unknown key is a caller bug: ``ValueError``.
    """
    overrides = dict(overrides or {})
    unknown = sorted(set(overrides) - set(DEFAULT_LIMITS) - set(BUDGET_KEYS))
    if unknown:
        raise ValueError(f"unknown channel limit(s) {unknown}; valid: "
                         f"{sorted([*DEFAULT_LIMITS, *BUDGET_KEYS])}")
    clean = {k: v for k, v in overrides.items() if v is not None}
    return rules.merge_limits(clean)


# ----------------------------------------------------------------------- installation


def channel_path(ws: Path) -> Path:
    """``ws/.outerloop``, refusing a channel that is a symlink or not a directory.

    A planted symlink would turn every kernel write (and the delete in
    ``read_committed``) into a write or delete somewhere else.
    """
    channel = ws / CHANNEL_DIR
    info = beneath.lstat(ws, CHANNEL_DIR)
    if info is not None and not stat.S_ISDIR(info.st_mode):
        raise ChannelError(f"{CHANNEL_DIR} in the workspace is a symlink or a file, not the "
                           f"channel directory; the kernel will not use it. fix: leave "
                           f"{CHANNEL_DIR}/ alone (it belongs to the kernel)")
    return channel


def install_channel(ws: Path, limits: Mapping[str, int | None], *,
                    git_dir: Path | None = None, rev: str = "HEAD") -> None:
    """Create ``ws/.outerloop/`` with the tool and ``limits.json``; exclude it from git.

    Safe to call again on the same workspace (each leg may): the tool is re-copied
    (the agent may have edited its copy) and the exclude line is added once. A target
    whose tree at ``rev`` (in the kernel's repository ``git_dir``; None: nothing is
    tracked) holds anything under ``.outerloop`` gets no tool: the kernel would
    otherwise overwrite, and then seal, files that belong to the target. No git process
    runs in the workspace: ``ws/.git`` is the agent's, its config included.
    """
    tracked = _tracked_channel(git_dir, rev) if git_dir is not None else ""
    if tracked.strip("\0"):
        raise ChannelError(f"the target tracks files under {CHANNEL_DIR}/ (e.g. "
                           f"{tracked.split(chr(0))[0]!r}); a target that ships "
                           f"{CHANNEL_DIR}/ gets no tool. fix: remove {CHANNEL_DIR}/ from the "
                           f"target repository")
    channel_path(ws)
    beneath.makedirs(ws, CHANNEL_DIR)
    _write_bytes(ws, _in_channel(TOOL_FILE), tool_bytes(), mode=0o755)
    _exclude_channel(ws)
    write_limits(ws, limits)


TOOL_MAIN = b"import syscall\nraise SystemExit(syscall.main())\n"
ZIP_EPOCH = (1980, 1, 1, 0, 0, 0)


def tool_bytes() -> bytes:
    """The agent's tool as one file: a zip application holding ``syscall.py``,
    ``rules.py``, ``views.py``, ``layout.py`` and ``channel_files.py`` (standard
    library only), with a ``#!`` line.
    Byte-for-byte the same every time, so a re-install over an edited copy restores it
    exactly."""
    package = resources.files("outerloop.agent_tool")
    buffer = io.BytesIO()
    buffer.write(b"#!/usr/bin/env python3\n")
    with zipfile.ZipFile(buffer, "a", compression=zipfile.ZIP_DEFLATED) as archive:
        for name, data in (("__main__.py", TOOL_MAIN),
                           ("syscall.py", package.joinpath("syscall.py").read_bytes()),
                           ("rules.py", package.joinpath("rules.py").read_bytes()),
                           ("views.py", package.joinpath("views.py").read_bytes()),
                           ("layout.py", package.joinpath("layout.py").read_bytes()),
                           ("channel_files.py",
                            package.joinpath("channel_files.py").read_bytes())):
            info = zipfile.ZipInfo(name, date_time=ZIP_EPOCH)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, data)
    return buffer.getvalue()


def write_limits(ws: Path, limits: Mapping[str, int | None]) -> None:
    """Write ``limits.json`` (all keys, defaults filled in) for the tool's fast checks."""
    channel_path(ws)
    write_json(ws, _in_channel(LIMITS_FILE), channel_limits(limits))


def _exclude_channel(ws: Path) -> None:
    """Add ``/.outerloop/`` to the workspace's ``.git/info/exclude`` (for the agent's own
    ``git status``; seals exclude the channel through the kernel's repository). Read and
    written through ``beneath``, at the place a plain clone has it: no git process asks
    ``ws/.git`` where (that would read the agent's config)."""
    rel = EXCLUDE_PATH
    try:
        beneath.makedirs(ws, rel.rsplit("/", 1)[0])
        raw = beneath.read(ws, rel, MAX_EXCLUDE_BYTES)
    except FileNotFoundError:
        raw = b""
    except beneath.AgentPathError as exc:
        raise ChannelError(f"the workspace's git directory is not a plain clone's ({exc}); "
                           f"fix: the workspace must be a plain clone") from None
    if len(raw) > MAX_EXCLUDE_BYTES:
        raise ChannelError(f"the workspace's {rel} is over {MAX_EXCLUDE_BYTES} bytes; fix: "
                           f"the workspace must be a plain clone")
    text = raw.decode("utf-8", "replace")
    if EXCLUDE_LINE in text.splitlines():
        return
    if text and not text.endswith("\n"):
        text += "\n"
    _write_bytes(ws, rel, (text + EXCLUDE_LINE + "\n").encode("utf-8"))


def _tracked_channel(git_dir: Path, rev: str) -> str:
    """The files under ``.outerloop`` in ``rev``'s tree, NUL-separated, from the
    kernel's repository ``git_dir`` (hardened: no hooks, no fsmonitor, no global or
    system config)."""
    env = {k: v for k, v in environ().items() if not k.startswith("GIT_")}
    env.update(GIT_TERMINAL_PROMPT="0", GIT_CONFIG_NOSYSTEM="1", GIT_CONFIG_GLOBAL="/dev/null",
               LC_ALL="C")
    args = ["ls-tree", "-r", "-z", "--name-only", rev, "--", CHANNEL_DIR]
    try:
        proc = subprocess.run(["git", *_GIT_HARDENING, f"--git-dir={git_dir}", *args],
                              env=env, capture_output=True, timeout=GIT_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as err:
        raise ChannelError(f"git ls-tree could not run on {git_dir} ({err}); fix: check that "
                           f"git is installed") from None
    if proc.returncode != 0:
        detail = proc.stderr.decode("utf-8", "replace").strip()[:300]
        raise ChannelError(f"git ls-tree failed on {git_dir}: {detail or 'no message'}; fix: "
                           f"the kernel's repository must hold {rev}")
    return proc.stdout.decode("utf-8", "replace")


# ------------------------------------------------------------------- the committed request


def read_committed(ws: Path, *, limits: Mapping[str, int | None] | None = None,
                   used_names: Collection[str] = ()) -> CommittedRequest | None:
    """Read ``syscall.json`` once, delete it (and any leftover ``request.json``), check it.

    None when the agent committed nothing. ``limits`` are the kernel's own (what it
    wrote to ``limits.json``; defaults when None); ``used_names`` are launch names
    earlier sleeps of the run used. Any broken rule raises ``ChannelError`` for the
    agent; the file is gone either way, so a refused request is never read twice.
    """
    channel_path(ws)
    if beneath.lstat(ws, CHANNEL_DIR) is None:
        return None
    _remove(ws, _in_channel(REQUEST_FILE))
    effective = channel_limits(limits)
    data = _read_once(ws, _in_channel(COMMITTED_FILE), effective["max_request_bytes"])
    if data is None:
        return None
    top = effective["max_request_bytes"]
    if len(data) > top:
        raise _refusal([f"syscall.json is over {top} bytes (rule: the request file is at "
                        f"most {top} bytes); fix: shorten commands, messages or the report"])
    try:
        doc = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        raise _refusal(["syscall.json is not valid UTF-8 JSON; fix: let the tool write it "
                        f"(`{layout.TOOL_COMMAND} sleep`)"]) from None
    problems = rules.committed_problems(doc, effective, frozenset(used_names))
    if problems:
        raise _refusal(problems)
    request = doc["request"]
    try:
        return CommittedRequest.model_validate({
            "verb": doc["verb"],
            "launches": request.get("launches", []),
            "submit": request.get("submit"),
            "messages": request.get("messages", []),
            "stop_report": doc.get("report"),
            "withdraw": doc.get("withdraw"),
            "at": doc.get("at"),
        })
    except ValidationError as err:
        raise _refusal([_describe(err)]) from None


def _read_once(ws: Path, rel: str, max_bytes: int) -> bytes | None:
    """The bytes of ``ws/rel`` (at most ``max_bytes + 1``), then delete it.

    Opened without following a symlink on any component and without blocking on a
    FIFO; anything but a regular file is deleted and refused.
    """
    name = rel.rsplit("/", 1)[-1]
    try:
        return beneath.read(ws, rel, max_bytes)
    except FileNotFoundError:
        return None
    except beneath.NotRegular:
        raise _refusal([f"{name} is not a regular file; fix: let the tool write it "
                        f"(`{layout.TOOL_COMMAND} sleep`)"]) from None
    except beneath.SymlinkRefused:
        raise _refusal([f"{name} is a symlink or lies behind one; fix: let the tool "
                        f"write it (`{layout.TOOL_COMMAND} sleep`)"]) from None
    finally:
        try:
            _remove(ws, rel)
        except beneath.SymlinkRefused:
            _clear_link(ws, rel)


def _refusal(problems: Sequence[str]) -> ChannelError:
    return ChannelError("the kernel refused your committed request (nothing was sealed, "
                        f"launched or charged): {rules.listed(list(problems))}\n"
                        f"Stage again with `{layout.TOOL_COMMAND}` and run `sleep`.")


def _describe(err: ValidationError) -> str:
    parts = []
    for item in err.errors()[:5]:
        where = ".".join(str(p) for p in item["loc"]) or "request"
        parts.append(f"{where}: {item['msg']}")
    return "; ".join(parts)


# ---------------------------------------------------------------------------- the views


def write_views(ws: Path, *, status: StatusView | Mapping[str, Any],
                history: Sequence[HistoryEntry | Mapping[str, Any]],
                queue: Sequence[QueueEntry | Mapping[str, Any]],
                siblings: Sequence[SiblingEntry | Mapping[str, Any]],
                reports: Mapping[str, str]) -> None:
    """Write the views the tool's reading verbs print, replacing the old ones.

    Each view is validated against its model first (so its format is pinned), long free
    text is capped, and ``reports/`` is rebuilt from scratch with one ``<name>.md`` per
    report. Report names must be plain file names (run ids are).
    """
    channel_path(ws)
    status_doc = StatusView.model_validate(status).model_dump(mode="json")
    history_doc = []
    for item in history:
        entry = HistoryEntry.model_validate(item)
        history_doc.append(entry.model_copy(update={
            "why": cap(entry.why, MAX_WHY_CHARS),
            "last_line": None if entry.last_line is None else cap(entry.last_line,
                                                                  MAX_LAST_LINE_CHARS),
        }).model_dump(mode="json"))
    queue_doc = [QueueEntry.model_validate(item).model_dump(mode="json") for item in queue]
    siblings_doc = []
    for raw in siblings:
        sibling = SiblingEntry.model_validate(raw)
        siblings_doc.append(sibling.model_copy(update={
            "headline": cap(sibling.headline, MAX_HEADLINE_CHARS)}).model_dump(mode="json"))
    bad = sorted(name for name in reports if not _is_report_name(name))
    if bad:
        raise ValueError(f"report names must match {rules.REPORT_NAME_PATTERN}: {bad}")
    for name, doc in ((STATUS_FILE, status_doc), (HISTORY_FILE, history_doc),
                      (QUEUE_FILE, queue_doc), (SIBLINGS_FILE, siblings_doc)):
        write_json(ws, _in_channel(name), doc)
    _remove(ws, _in_channel(REPORTS_DIR))
    beneath.makedirs(ws, _in_channel(REPORTS_DIR), clear=True)
    for name, body in reports.items():
        _write_bytes(ws, _in_channel(layout.report_name(name)),
                     cap(body, MAX_REPORT_CHARS).encode("utf-8"))


def _is_report_name(name: str) -> bool:
    return bool(_REPORT_NAME_RE.fullmatch(name)) and not name.endswith(".md")


# ---------------------------------------------------- file operations, all beneath ws


def _in_channel(*parts: str) -> str:
    return layout.rel(*parts)


def ensure_dir(ws: Path, *parts: str) -> None:
    """``ws/.outerloop/<parts>`` as a real directory; a symlink or file in the way
    (``.outerloop`` itself included) is removed, never followed."""
    beneath.makedirs(ws, _in_channel(*parts), clear=True)


def _clear_link(ws: Path, rel: str) -> None:
    """A symlink planted on the way to ``ws/rel`` is removed: the first one found."""
    parts = rel.split("/")
    for depth in range(1, len(parts)):
        info = beneath.lstat(ws, "/".join(parts[:depth]))
        if info is not None and not stat.S_ISDIR(info.st_mode):
            beneath.unlink(ws, "/".join(parts[:depth]))
            return


def _remove(ws: Path, rel: str) -> None:
    """Remove a file, symlink or directory tree at ``ws/rel`` without following links."""
    beneath.remove(ws, rel)


def write_json(ws: Path, rel: str, value: object) -> None:
    """Replace ``ws/rel`` with ``value`` as JSON (see ``_write_bytes``)."""
    data = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    _write_bytes(ws, rel, data.encode("utf-8"))


def _write_bytes(ws: Path, rel: str, data: bytes, mode: int = 0o644) -> None:
    """Replace ``ws/rel`` through a fresh temp file and a rename in the same directory
    descriptor: atomic; a symlink at ``rel`` is replaced, one on the way refused."""
    beneath.write(ws, rel, data, mode, clear=True)
