"""The paths a research line treats apart (pure): the agent's memory, which lives on
its line only, and the files that carry instructions to agents, which the line takes
from the base branch at every run start.

- **Memory**: ``AGENT_MEMORY.md`` (an index the brief shows) and ``agent_memory/``
  (topic files the agent reads on demand), at the repository root. They are the
  agent's notebook: kept on its line branch, never part of a candidate (every
  measured tree and every pull request holds the base's version there, usually
  nothing), so never a change the scope check sees.
- **Instruction files**: any path with a component an agent CLI reads as instructions
  (``CLAUDE.md``, ``AGENTS.md``, ``.claude/``, ``.codex/`` ...; compared case-folded):
  the reviewed versions of the base branch are what a session reads, never what an
  earlier session left on its line (``run/lines.py`` resets them, as the kernel's own
  commit). The review panel hides the same names from its judges (``attempt/panel``).
"""

from __future__ import annotations

MEMORY_FILE = "AGENT_MEMORY.md"
MEMORY_DIR = "agent_memory"
LINE_PREFIX = "agents/"
FRESH_LINES = 3
"""A run's line whose branch a person rewrote is pushed to a fresh branch
(``<branch>-2``...) at most this many times; past that its push waits on a human."""
INSTRUCTION_NAMES = frozenset({"claude.md", "claude.local.md", "agents.md",
                               "agents.override.md", "gemini.md", ".claude", ".codex",
                               ".cursorrules", ".cursor", ".github"})
"""Files and directories an agent CLI reads as instructions (compared case-folded)."""


def line_branch(agent: str, resets: int = 0) -> str:
    """The forge branch of an agent slot's research line: ``agents/<agent-id>``, and
    after the operator's ``resets`` fresh starts (``outerloop line reset``)
    ``agents/<agent-id>-L<resets + 1>``: a new branch, so the old line stays as it is."""
    return f"{LINE_PREFIX}{agent}" + (f"-L{resets + 1}" if resets else "")


def line_heads(branch: str) -> list[str]:
    """The branches a run's line may be pushed to, in order: the slot's line, then
    ``FRESH_LINES`` fresh ones (``<branch>-2``...) when a person rewrote it."""
    return [branch, *(f"{branch}-{n}" for n in range(2, FRESH_LINES + 2))]


def line_head(branch: str, moved: list[str]) -> str:
    """Where a run's line is pushed: the first of ``line_heads`` no person moved (the
    last when all were: it waits on a human)."""
    heads = line_heads(branch)
    return next((h for h in heads if h not in moved), heads[-1])


def memory_path(path: str) -> bool:
    """True for the agent's memory: ``AGENT_MEMORY.md`` or anything under
    ``agent_memory/`` (repo-relative, at the root; compared case-folded, as a
    case-insensitive file system would see it)."""
    folded = path.casefold()
    return folded == MEMORY_FILE.casefold() or folded == MEMORY_DIR \
        or folded.startswith(MEMORY_DIR + "/")


def instruction_path(path: str) -> bool:
    """True when a component of ``path`` is an agent instruction file or folder."""
    return any(part.casefold() in INSTRUCTION_NAMES for part in path.split("/"))
