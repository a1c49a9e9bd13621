"""A benchmark whose number comes from the candidate's own process, said so everywhere.

Without a trusted scorer (``score``), the benchmark's ``command`` runs the candidate's
code in the very process that prints the metric line, so that code can write the line
itself: comment the evaluator's line out (``print("# ", end="")``) and print its own
from a finaliser at interpreter shutdown. No reading of the source lists every way to
do that. Such a benchmark still runs, but every surface says what its number is:

- the pull request (``templates/pr_body.md.j2``, the Measured section) and the ledger's
  verdict (``ev.Verdict.in_process``, which the board shows beside the verdict);
- ``outerloop doctor`` (a warning naming the benchmark and the fix, ``score:``).

What a credit on such a benchmark needs beyond the label: a reproduction on the scorer
path *where one exists*. A scorer path is per benchmark (its ``score``), so a benchmark
with one is measured on it in every pair (the gate's pairs are the reproduction), and a
benchmark without one has none to reproduce on: the label is the honest minimum, and
the fix is to give it a scorer (docs/contract.md, "Scorer first").
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from outerloop.vocabulary import IN_PROCESS_MARK

if TYPE_CHECKING:  # the board imports this module: no pydantic models on its path
    from outerloop.contract import Benchmark

LABEL = "the number came from the candidate's own process"
FIX = ("give the benchmark a trusted scorer: `score:` (with `outputs:`), run from the "
       "base tree in a process of its own that reads the candidate's outputs as data "
       "(docs/contract.md, \"Scorer first\")")
BOARD_MARK = IN_PROCESS_MARK


def is_in_process(bench: Benchmark) -> bool:
    """The benchmark's metric line is printed by the process that runs candidate code."""
    return bench.score is None


def pr_note(bench: Benchmark) -> str:
    """What the PR says of an in-process benchmark (empty for a scorer benchmark)."""
    if not is_in_process(bench):
        return ""
    return (f"{LABEL}: the benchmark {bench.name!r} has no trusted scorer, so the "
            f"candidate's code ran in the process that printed the metric line the gate "
            f"read, and could have written that line itself. Fix: {FIX}.")


def doctor_detail(repo: str, names: Iterable[str]) -> str:
    """The doctor warning's words for ``repo``'s in-process benchmarks ``names``."""
    listed = ", ".join(names)
    return f"{repo}: {listed}: {LABEL} (no `score:`); its credit rests on candidate output"
