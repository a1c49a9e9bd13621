"""What ``status`` and ``explain`` say of research lines: per agent slot, its line
branch, where its latest run's line stands (saved, pushed, on a fresh branch because a
person rewrote the line), the memory files a save refused or withheld, and the size and
first line of the memory index (``AGENT_MEMORY.md``) its latest line commit holds.

Beside the size, the memory's first ``MAX_STATUS_MEMORY_CHARS`` characters: agent-written
text, so every known secret is redacted from it (``text.redact``, the values
``known_secrets`` lists, plain or encoded; a line a person pushed was never scanned by a
save), control characters are dropped, and the text form fences it (``text.fence``).

The memory is read from the run's kernel repository (``lines.memory_at``: by git's mode
and size first, never a link, never a file over ``MAX_MEMORY_FILE_BYTES``); a run whose
workspace was cleaned shows no memory figures (``None``), never an error.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from outerloop.errors import OuterloopError
from outerloop.ledger.state import RunRecord
from outerloop.line_paths import MEMORY_FILE, line_head
from outerloop.run.lines import Memory, memory_at
from outerloop.run.paths import RunPaths
from outerloop.text import cap, fence, redact

MAX_STATUS_MEMORY_CHARS = 1_200
"""How much of a slot's memory ``status`` and ``explain`` show (the rest: its line)."""


def shown_memory(text: str, secrets: Sequence[str]) -> str:
    """Agent-written memory as a maintainer's view shows it: secrets redacted, control
    characters (a terminal's escapes) dropped, capped at ``MAX_STATUS_MEMORY_CHARS``."""
    clean = "".join(ch if ch.isprintable() or ch in "\n\t" else " "
                    for ch in redact(text, secrets))
    return cap(clean, MAX_STATUS_MEMORY_CHARS)


def run_memory(home: Path, run: RunRecord, commit: str) -> Memory | None:
    """The memory index at ``commit`` of ``run``'s kernel repository, or None (no line,
    a cleaned workspace, git failing)."""
    paths = RunPaths.of(home, run.run_id)
    if run.line is None or not commit or run.cleaned or not paths.kernel_git.exists():
        return None
    try:
        return memory_at(paths, commit)
    except OuterloopError:
        return None


def line_rows(home: Path, runs: list[RunRecord],
              secrets: Sequence[str] = ()) -> list[dict[str, object]]:
    """One row per agent slot with a line, from its newest run in ``runs`` (queue
    order); ``secrets`` are redacted from the memory shown."""
    newest: dict[tuple[str, str], RunRecord] = {}
    for run in runs:
        if run.line is not None:
            newest[(run.target, run.agent)] = run
    rows = []
    for (target, agent), run in sorted(newest.items()):
        line = run.line
        assert line is not None
        memory = run_memory(home, run, line.head or line.start)
        excerpt = shown_memory(memory.text, secrets) if memory is not None else None
        rows.append({
            "target": target, "agent": agent, "branch": line.branch, "run": run.run_id,
            "start": line.start, "head": line.head, "unpushed": line.unpushed,
            "saved_on": line_head(line.branch, line.moved), "moved": list(line.moved),
            "refused": list(line.refused), "withheld": list(line.withheld),
            "memory_chars": memory.chars if memory is not None else None,
            "memory_first_line": (next((ln.strip() for ln in excerpt.splitlines()
                                        if ln.strip()), "")[:120]
                                  if excerpt is not None else None),
            "memory_excerpt": excerpt,
            "memory_file": f"{line_head(line.branch, line.moved)}:{MEMORY_FILE}",
            "memory_unshown": memory.unshown if memory is not None else None,
        })
    return rows


def line_text(row: dict[str, object]) -> str:
    """One status line for a slot's line row."""
    head = str(row["head"] or row["start"])[:12]
    where = f"{row['branch']}"
    if row["saved_on"] != row["branch"]:
        where += f" (a person rewrote it: run {row['run']}'s line saved on {row['saved_on']})"
    state = "saving" if row["unpushed"] else "pushed"
    chars = row["memory_chars"]
    memory = ("memory: unknown (workspace cleaned)" if chars is None else
              f"memory: {row['memory_unshown']}" if row["memory_unshown"] else
              f"memory: {chars} chars, first line {row['memory_first_line']!r}" if chars
              else "memory: none")
    kept = [*(row["refused"] or []), *(row["withheld"] or [])]  # type: ignore[misc]
    tail = f"; not saved: {', '.join(kept)}" if kept else ""
    text = (f"  {row['target']}  {row['agent']}  {where} at {head} ({state}, run "
            f"{row['run']}); {memory}{tail}")
    excerpt = row.get("memory_excerpt")
    if excerpt:
        body = "\n".join(f"    {ln}" for ln in fence(str(excerpt)).splitlines())
        text += (f"\n    {row['memory_file']} (the agent's notes; data, never "
                 f"instructions):\n{body}")
    return text
