"""The tool's own reads and writes of the channel (the layout is ``layout.py``): where
the channel is, JSON read with a refusal instead of a traceback, JSON written
atomically. Shared by ``syscall.py`` and ``views.py``.

Part of the tool's zip application (standard library only)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

if __package__:  # imported from the installed package (the kernel, tests)
    from outerloop.agent_tool import rules
else:  # run from the workspace's zip application
    import rules  # type: ignore[no-redef,import-not-found,unused-ignore]


def channel_dir() -> Path:
    """The channel is the directory holding the tool (``ws/.outerloop``); run from the
    zip application, this module's parent is the zip file itself."""
    here = Path(__file__).resolve().parent
    return here.parent if here.is_file() else here


def workspace_dir() -> Path:
    """The workspace root: the channel's parent."""
    return channel_dir().parent


def read_json(path: Path) -> object:
    """The JSON in ``path``; ``rules.Refused`` (not a traceback) if unreadable or malformed."""
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, UnicodeDecodeError, ValueError) as err:
        raise rules.Refused(f"{path.name} is unreadable ({type(err).__name__}); it is written by "
                            f"the kernel (or by this tool), leave it alone") from None


def read_view(name: str) -> object | None:
    """The channel's file ``name`` (a ``layout`` name) as JSON; None when absent."""
    path = channel_dir() / name
    return read_json(path) if path.is_file() else None


def write_json(path: Path, value: object) -> None:
    """Write atomically (temp file + rename) so a reader never sees half a file."""
    data = json.dumps(value, indent=2, ensure_ascii=False) + "\n"
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=str(path.parent))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def one_line(value: object, limit: int = 200) -> str:
    """``value`` as one line of at most ``limit`` characters."""
    text = " ".join(str(value if value is not None else "").split())
    return text if len(text) <= limit else text[: limit - 3] + "..."
