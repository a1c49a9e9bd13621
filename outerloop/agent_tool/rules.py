"""The rules of the agent's requests: limits, names, paths, sizes. Standard library only.

One source for both sides: the agent's tool checks a request with these functions for
fast feedback, and the kernel checks the committed request again with the same
functions from its own installed copy (the agent's copy may have been edited).
"""

from __future__ import annotations

import re
import shlex
from pathlib import PurePosixPath

if __package__:  # imported from the installed package (the kernel, tests)
    from outerloop.agent_tool.layout import TOOL_COMMAND as TOOL
else:  # run from the workspace's zip application
    from layout import TOOL_COMMAND as TOOL  # type: ignore[no-redef,import-not-found,unused-ignore]

DEFAULT_LIMITS: dict[str, int] = {
    "max_launches_per_sleep": 8,
    "max_launch_minutes": 240,
    "max_array": 16,
    "max_command_chars": 2000,
    "max_artifacts": 8,
    "max_artifact_bytes": 5 * 1024 * 1024,
    "max_why_chars": 200,
    "max_report_chars": 8000,
    "max_request_bytes": 64 * 1024,
    "max_message_chars": 4000,
    "max_submit_minutes": 1440,
    "max_launch_gpus": 8,
}
BUDGET_KEYS = ("launches_left", "sleeps_left")
NAME_PATTERN = r"[a-z0-9][a-z0-9-]{0,31}"
MAX_ARTIFACT_PATH_CHARS = 1024
REQUEST_KEYS = ("launches", "submit", "messages", "stop")
LAUNCH_KEYS = ("name", "minutes", "array", "concurrency", "why", "artifacts", "command")
OPTIONAL_LAUNCH_KEYS = ("gpus",)
MESSAGE_TARGETS = ("thread", "self")
REPORT_NAME_PATTERN = r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}"
EXIT_REFUSED = 2

_NAME_RE = re.compile(NAME_PATTERN)
_REPORT_NAME_RE = re.compile(REPORT_NAME_PATTERN)


class Refused(Exception):
    """A request the tool will not carry out; the message names the rule and the fix."""


# --------------------------------------------------------------------------- rules
# Pure functions over plain JSON values: each returns a list of problems, empty when
# the value obeys every rule. They accept anything (a hand-edited file may hold any
# JSON) and never raise.


def merge_limits(raw: object) -> dict[str, int]:
    """The limits in force: code defaults, lowered (never raised) by ``raw``.

    ``raw`` is the content of ``limits.json``; a missing or malformed value keeps the
    default. The budget keys (``launches_left``, ``sleeps_left``) have no default and
    appear only when ``raw`` sets them; an overspent (negative) budget counts as 0.
    """
    limits = dict(DEFAULT_LIMITS)
    if not isinstance(raw, dict):
        return limits
    for key, default in DEFAULT_LIMITS.items():
        value = _as_int(raw.get(key))
        if value is not None and value >= 0:
            limits[key] = min(default, value)
    for key in BUDGET_KEYS:
        value = _as_int(raw.get(key))
        if value is not None:
            limits[key] = max(0, value)
    return limits


def name_problem(name: object) -> str | None:
    """Why ``name`` is not a valid launch name, or None."""
    if isinstance(name, str) and _NAME_RE.fullmatch(name):
        return None
    return (f"launch name {_show(name)} does not match ^{NAME_PATTERN}$ (lowercase letters, "
            f"digits and '-', 1 to 32 characters, starting with a letter or digit); "
            f"fix: pick a name like 'lr-sweep-2'")


def artifact_problem(path: object) -> str | None:
    """Why ``path`` is not an acceptable artifact path, or None.

    Artifacts are files the launch leaves in its work tree; they are named relative to
    the repository root so the kernel can find them without trusting the agent's idea
    of where the tree lives.
    """
    fix = "fix: name a file relative to the repository root, e.g. out/metrics.json"
    if not isinstance(path, str) or not path.strip():
        return f"artifact {_show(path)} is not a path; {fix}"
    if len(path) > MAX_ARTIFACT_PATH_CHARS:
        return f"artifact path is {len(path)} characters, over {MAX_ARTIFACT_PATH_CHARS}; {fix}"
    if "\x00" in path or "\\" in path:
        return f"artifact {_show(path)} contains a NUL or a backslash; {fix}"
    pure = PurePosixPath(path)
    if pure.is_absolute() or path.startswith("~"):
        return f"artifact {_show(path)} is absolute (rule: artifacts are repo-relative); {fix}"
    if ".." in pure.parts:
        return (f"artifact {_show(path)} contains '..' (rule: artifacts stay inside the "
                f"work tree); {fix}")
    if pure.parts in ((), (".",)):
        return f"artifact {_show(path)} names the repository root, not a file; {fix}"
    return None


def launch_problems(launch: object, limits: dict[str, int], label: str = "launch") -> list[str]:
    """Every rule ``launch`` (one staged experiment) breaks."""
    if not isinstance(launch, dict):
        return [f"{label} is not a JSON object; fix: run `{TOOL} cancel` and stage it again"]
    problems: list[str] = []
    unknown = sorted(str(k) for k in launch if k not in LAUNCH_KEYS + OPTIONAL_LAUNCH_KEYS)
    missing = [k for k in LAUNCH_KEYS if k not in launch]
    if unknown or missing:
        problems.append(f"{label} has unknown fields {unknown} or lacks {missing}; fix: "
                        f"run `{TOOL} cancel` and stage it again with `launch`")
    name = launch.get("name")
    if isinstance(name, str) and _NAME_RE.fullmatch(name):
        label = f"launch {name!r}"
    problem = name_problem(name)
    if problem:
        problems.append(problem)
    top = limits["max_launch_minutes"]
    minutes = _as_int(launch.get("minutes"))
    if minutes is None or not 1 <= minutes <= top:
        problems.append(f"{label}: minutes {_show(launch.get('minutes'))} is outside 1..{top} "
                        f"(rule: a launch runs at most {top} minutes); fix: ask for 1 to "
                        f"{top} minutes, or split the work into several launches")
    top = limits["max_array"]
    array = _as_int(launch.get("array"))
    if array is None or not 1 <= array <= top:
        problems.append(f"{label}: array {_show(launch.get('array'))} is outside 1..{top} "
                        f"(rule: at most {top} array tasks per launch); fix: use a smaller "
                        f"array, or two launches")
    concurrency = _as_int(launch.get("concurrency"))
    if concurrency is None or not 1 <= concurrency <= (array or 1):
        problems.append(f"{label}: concurrency {_show(launch.get('concurrency'))} is outside "
                        f"1..{array or 1} (rule: concurrency is between 1 and the array "
                        f"size); fix: lower --concurrency or leave it out")
    if launch.get("gpus") is not None:
        top = limits["max_launch_gpus"]
        gpus = _as_int(launch.get("gpus"))
        if gpus is None or not 0 <= gpus <= top:
            problems.append(f"{label}: gpus {_show(launch.get('gpus'))} is outside 0..{top} "
                            f"(rule: a launch task gets at most {top} GPU(s) under this "
                            f"contract); fix: ask for 0 to {top}, or leave --gpus out")
    why = launch.get("why")
    top = limits["max_why_chars"]
    if not isinstance(why, str):
        problems.append(f"{label}: why must be text; fix: pass --why \"one line\"")
    elif len(why) > top:
        problems.append(f"{label}: why is {len(why)} characters, over the limit of {top}; "
                        f"fix: say it in one short line")
    problems.extend(_command_problems(launch.get("command"), limits, label))
    problems.extend(_artifacts_problems(launch.get("artifacts"), limits, label))
    return problems


def submit_problems(submit: object, limits: dict[str, int]) -> list[str]:
    """Every rule a staged submission breaks."""
    if not isinstance(submit, dict) or set(submit) != {"report", "minutes"}:
        return [f"the staged submit must be {{\"report\": text, \"minutes\": number or null}}; "
                f"fix: run `{TOOL} submit --report FILE` again"]
    problems = report_problems(submit["report"], limits, "submit report")
    minutes = submit["minutes"]
    top = limits["max_submit_minutes"]
    if minutes is not None and not 1 <= (_as_int(minutes) or 0) <= top:
        problems.append(f"submit minutes {_show(minutes)} is outside 1..{top}; fix: pass "
                        f"--minutes between 1 and {top}, or leave it out")
    return problems


def report_problems(report: object, limits: dict[str, int], label: str = "report") -> list[str]:
    """Every rule a report text breaks (a submit report or a stop report)."""
    top = limits["max_report_chars"]
    if not isinstance(report, str) or not report.strip():
        return [f"{label} is empty; fix: write the report into a file and pass --report FILE"]
    if len(report) > top:
        return [f"{label} is {len(report)} characters, over the limit of {top}; fix: "
                f"shorten it (keep the claim, the numbers and what failed)"]
    return []


def message_problems(message: object, limits: dict[str, int], label: str = "message") -> list[str]:
    """Every rule one staged message breaks."""
    if not isinstance(message, dict) or set(message) != {"to", "text"}:
        return [f"{label} must be {{\"to\": \"thread\" or \"self\", \"text\": text}}; fix: run "
                f"`{TOOL} cancel` and stage it again"]
    problems: list[str] = []
    if message["to"] not in MESSAGE_TARGETS:
        problems.append(f"{label}: to {_show(message['to'])} is not 'thread' or 'self'; fix: "
                        f"--to thread (posted on the run's thread) or --to self (a note)")
    text = message["text"]
    top = limits["max_message_chars"]
    if not isinstance(text, str) or not text.strip():
        problems.append(f"{label} is empty; fix: pass the text to send")
    elif len(text) > top:
        problems.append(f"{label} is {len(text)} characters, over the limit of {top}; fix: "
                        f"shorten it")
    return problems


def request_problems(request: object, limits: dict[str, int],
                     used_names: tuple[str, ...] | list[str] | frozenset[str] = ()) -> list[str]:
    """Every rule a whole staged request breaks (as in ``request.json``).

    ``used_names`` are launch names earlier sleeps of the run already used: results
    land in ``results/<name>/``, so a name is used once per run.
    """
    if not isinstance(request, dict):
        return [f"the staged request is not a JSON object; fix: run `{TOOL} cancel`"]
    problems: list[str] = []
    unknown = sorted(str(k) for k in request if k not in REQUEST_KEYS)
    if unknown:
        problems.append(f"the staged request has unknown fields {unknown}; fix: run "
                        f"`{TOOL} cancel` and stage again")
    launches = request.get("launches", [])
    if not isinstance(launches, list):
        problems.append(f"launches must be a list; fix: run `{TOOL} cancel` and stage again")
        launches = []
    top = limits["max_launches_per_sleep"]
    if len(launches) > top:
        problems.append(f"{len(launches)} launches staged, over the limit of {top} per sleep; "
                        f"fix: `sleep` to hand over {top} now, or `cancel` and stage fewer")
    left = limits.get("launches_left")
    if left is not None and len(launches) > left:
        problems.append(f"{len(launches)} launches staged but the run has {left} launch(es) "
                        f"left; fix: stage at most {left}, or `submit` what you have")
    seen: set[str] = set()
    for index, launch in enumerate(launches):
        problems.extend(launch_problems(launch, limits, f"launch #{index + 1}"))
        name = launch.get("name") if isinstance(launch, dict) else None
        if not isinstance(name, str):
            continue
        if name in seen:
            problems.append(f"launch name {name!r} is staged twice; fix: give each launch "
                            f"its own name")
        elif name in used_names:
            problems.append(f"launch name {name!r} was already used in this run (see "
                            f"`history`); fix: pick a new name")
        seen.add(name)
    submit = request.get("submit")
    if submit is not None:
        problems.extend(submit_problems(submit, limits))
    messages = request.get("messages", [])
    if not isinstance(messages, list):
        problems.append(f"messages must be a list; fix: run `{TOOL} cancel` and stage again")
        messages = []
    for index, message in enumerate(messages):
        problems.extend(message_problems(message, limits, f"message #{index + 1}"))
    if request.get("stop") is not None:
        problems.append(f"the staged request has a non-null 'stop'; fix: use `{TOOL} stop`")
    return problems


def committed_problems(doc: object, limits: dict[str, int],
                       used_names: tuple[str, ...] | list[str] | frozenset[str] = ()) -> list[str]:
    """Every rule a committed ``syscall.json`` document breaks."""
    if not isinstance(doc, dict):
        return ["syscall.json is not a JSON object; fix: stage again and run `sleep`"]
    problems: list[str] = []
    verb = doc.get("verb")
    allowed = {"verb", "request", "at"} | ({"report", "withdraw"} if verb == "stop" else set())
    unknown = sorted(str(k) for k in doc if k not in allowed)
    if verb not in ("sleep", "stop"):
        problems.append(f"syscall.json verb {_show(verb)} is not 'sleep' or 'stop'; fix: end "
                        f"the leg with `{TOOL} sleep` or `{TOOL} stop`")
    if unknown:
        problems.append(f"syscall.json has unknown fields {unknown}; fix: let the tool write "
                        f"it (`{TOOL} sleep`)")
    if not isinstance(doc.get("at"), str):
        problems.append(f"syscall.json lacks its 'at' time; fix: commit with `{TOOL} sleep`")
    problems.extend(request_problems(doc.get("request"), limits, used_names))
    report = doc.get("report")
    if verb == "stop" and report is not None:
        problems.extend(report_problems(report, limits, "stop report"))
    if verb == "stop" and doc.get("withdraw") is not None:
        problems.extend(withdraw_problems(doc["withdraw"], limits))
    return problems


def withdraw_problems(reason: object, limits: dict[str, int]) -> list[str]:
    """Every rule the reason of ``stop --withdraw`` breaks (it is posted on the PR)."""
    top = limits["max_message_chars"]
    if not isinstance(reason, str) or not reason.strip():
        return [f"--withdraw needs a reason; fix: `{TOOL} stop --withdraw \"why the pull "
                f"request should close\"`"]
    if "\x00" in reason:
        return ["the withdraw reason contains a NUL character; fix: remove it"]
    if len(reason) > top:
        return [f"the withdraw reason is {len(reason)} characters (rule: at most {top}); "
                f"fix: shorten it"]
    return []


def join_command(words: list[str]) -> str:
    """The command string for the words after ``--``.

    One word is kept as is, so ``-- "python a.py && python b.py"`` runs as a shell line;
    several words are shell-quoted so each arrives as one argument (``shlex.join``,
    spelled out because it is missing before Python 3.8).
    """
    if len(words) == 1:
        return words[0]
    return " ".join(shlex.quote(word) for word in words)


def _command_problems(command: object, limits: dict[str, int], label: str) -> list[str]:
    top = limits["max_command_chars"]
    if not isinstance(command, str) or not command.strip():
        return [f"{label}: the command is empty; fix: put it after `--`, e.g. "
                f"`{TOOL} launch --name a --minutes 30 -- python train.py`"]
    if "\x00" in command:
        return [f"{label}: the command contains a NUL character; fix: remove it"]
    if len(command) > top:
        return [f"{label}: the command is {len(command)} characters, over the limit of {top}; "
                f"fix: put the long part in a script in the repository and launch the script"]
    return []


def _artifacts_problems(artifacts: object, limits: dict[str, int], label: str) -> list[str]:
    if not isinstance(artifacts, list):
        return [f"{label}: artifacts must be a list of paths; fix: pass --artifact PATH"]
    top = limits["max_artifacts"]
    problems: list[str] = []
    if len(artifacts) > top:
        problems.append(f"{label}: {len(artifacts)} artifacts, over the limit of {top} per "
                        f"launch; fix: bundle them into fewer files (one JSON or archive)")
    for path in artifacts:
        problem = artifact_problem(path)
        if problem:
            problems.append(f"{label}: {problem}")
    return problems


def listed(problems: list[str]) -> str:
    """One problem inline; several as a list, one per line."""
    if len(problems) == 1:
        return problems[0]
    return f"{len(problems)} problems:\n" + "\n".join(f"- {p}" for p in problems)


def _as_int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _show(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
