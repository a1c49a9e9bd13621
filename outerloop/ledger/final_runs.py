"""The fold cache's set of final runs, pickled as one text.

``_Cache.final`` names every run whose run file was read to its end before the run was
summarised: 100,000 ids at 100,000 runs. Pickled as a set, loading them costs every
tick ~15 ms (an object per id); a tick reads them only when it lists a ``runs/`` folder
(a run file was created or removed since) or summarises a run. So they are pickled as
one newline-joined text (a single object, ~1 ms to load) and made a set on first use.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator


class FinalRuns:
    """A set of run ids that loads as one text and becomes a set when first asked."""

    __slots__ = ("_ids", "_text")

    def __init__(self, ids: Iterable[str] = ()) -> None:
        self._ids: set[str] | None = set(ids)
        self._text = ""

    def _set(self) -> set[str]:
        if self._ids is None:
            self._ids = set(self._text.split("\n")) if self._text else set()
            self._text = ""
        return self._ids

    def __contains__(self, run_id: object) -> bool:
        return run_id in self._set()

    def add(self, run_id: str) -> None:
        if "\n" in run_id:
            raise ValueError(f"a run id holds a newline: {run_id!r}")
        self._set().add(run_id)

    def __iter__(self) -> Iterator[str]:
        return iter(self._set())

    def __len__(self) -> int:
        return len(self._set())

    def __bool__(self) -> bool:
        return bool(self._text) if self._ids is None else bool(self._ids)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, FinalRuns):
            return self._set() == other._set()
        if isinstance(other, set | frozenset):
            return self._set() == other
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"FinalRuns({len(self)} runs)"

    def __getstate__(self) -> str:
        return "\n".join(self._ids) if self._ids is not None else self._text

    def __setstate__(self, text: str) -> None:
        self._ids, self._text = None, text
