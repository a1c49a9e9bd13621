"""The channel's layout: every file and folder the agent's tool and the kernel exchange,
named once.

The channel is ``ws/.outerloop/``. The tool stages ``request.json`` and commits
``syscall.json``; the kernel writes ``limits.json`` and the views (``status.json``,
``history.json``, ``queue.json``, ``siblings.json``, ``reports/<name>.md``) and brings
results back (``results/<launch>[/<task>]/``); while a session runs the tool asks live
questions (``ask/<verb>.json``) and the kernel answers them (``answers/<verb>.json``).
The kernel (``attempt/channel.py``, ``attempt/artifacts.py``, ``attempt/live.py``) and
the tool (``syscall.py``, ``views.py``) both take these names from here.

Part of the tool's zip application: standard library only, importing nothing. Paths are
given relative to the workspace (``rel``: what the kernel opens beneath ``ws``) or to
the channel itself (``name``: what the tool opens next to itself).
"""

from __future__ import annotations

CHANNEL_DIR = ".outerloop"
TOOL_FILE = "syscall"
REQUEST_FILE = "request.json"
COMMITTED_FILE = "syscall.json"
LIMITS_FILE = "limits.json"
STATUS_FILE = "status.json"
HISTORY_FILE = "history.json"
QUEUE_FILE = "queue.json"
SIBLINGS_FILE = "siblings.json"
REPORTS_DIR = "reports"
RESULTS_DIR = "results"
ASK_DIR = "ask"
ANSWERS_DIR = "answers"
BASE_BUNDLE = "base.bundle"
"""A moved base the agent merges (a git bundle of one ref, ``BASE_REF``), written when its
credited candidate conflicts with it."""
BASE_REF = "refs/outerloop/base"
TOOL_COMMAND = f"python {CHANNEL_DIR}/{TOOL_FILE}"
"""How the agent calls the tool, from the workspace root (what briefs and refusals say)."""
EXCLUDE_LINE = f"/{CHANNEL_DIR}/"
"""The line in the workspace's ``info/exclude`` that keeps the channel out of git."""


def ask_name(verb: str) -> str:
    """The tool's live question about ``verb``, in the channel."""
    return f"{ASK_DIR}/{verb}.json"


def answer_name(verb: str) -> str:
    """The kernel's live answer about ``verb``, in the channel."""
    return f"{ANSWERS_DIR}/{verb}.json"


def report_name(name: str) -> str:
    """Another run's report ``name``, in the channel."""
    return f"{REPORTS_DIR}/{name}.md"


def results_name(launch: str, task: int | None = None) -> str:
    """What launch ``launch`` (its task ``task``) brought back, in the channel."""
    return "/".join((RESULTS_DIR, launch, *([] if task is None else [str(int(task))])))


def rel(*parts: str) -> str:
    """``.outerloop/<parts>``: a channel path relative to the workspace."""
    return "/".join((CHANNEL_DIR, *parts))
