"""The ledger behind one door (issue 52, point 1): code of outerloop/ outside
``ledger/`` imports at most four of its modules, the ones ``ledger/book.py`` names
(events, state, history, book), and the tick's commit protocol is the ledger's.

Imports are read as ``test_import_layers`` reads them (module level, inside functions
and under ``TYPE_CHECKING``). Benches and tests that forge ledger bytes (chains,
segments, a damaged cache) reach the ledger's parts on purpose and are not counted.
"""

from __future__ import annotations

from tests.unit.test_import_layers import PACKAGE, Arrow, all_arrows, arrows_in

DOORS = frozenset({"ledger.events", "ledger.state", "ledger.history", "ledger.book"})
MAX_DOORS = 4


def through_the_wall(arrows: list[Arrow]) -> dict[str, list[str]]:
    """Ledger modules imported from outside ``ledger/`` other than a door: module ->
    its importers (``module:line``)."""
    found: dict[str, list[str]] = {}
    for arrow in arrows:
        inside = arrow.importer == "ledger" or arrow.importer.startswith("ledger.")
        if inside or not arrow.imported.startswith("ledger."):
            continue
        if arrow.imported not in DOORS:
            found.setdefault(arrow.imported, []).append(f"{arrow.importer}:{arrow.line}")
    return found


def test_outside_code_enters_the_ledger_only_by_its_four_doors() -> None:
    arrows = all_arrows()
    entered = {a.imported for a in arrows if a.imported.startswith("ledger.")
               and not (a.importer == "ledger" or a.importer.startswith("ledger."))}
    assert len(DOORS) <= MAX_DOORS
    assert entered <= DOORS, f"imported past the ledger's door: {through_the_wall(arrows)}"
    assert entered == DOORS, f"a door nobody uses: {sorted(DOORS - entered)}"


def test_the_count_sees_an_import_past_the_door() -> None:
    """The checker itself: a lane importing the store (or the fold) directly is found,
    inside a function as well."""
    source = ("from outerloop.ledger.store import run_file\n"
              "def f():\n    from outerloop.ledger import fold\n"
              "from outerloop.ledger.book import Book\n")
    found = through_the_wall(arrows_in(source, "kernel.lanes.intake", False))
    assert sorted(found) == ["ledger.fold", "ledger.store"]


def test_the_tick_commits_through_its_book_and_holds_no_commit_protocol() -> None:
    """``kernel/tick.py`` names none of the commit's steps: they are ``ledger/commit.py``'s."""
    tick = (PACKAGE / "kernel" / "tick.py").read_text()
    for step in ("gitrepo", "attest.", "sweep.", "integrity", "pending.", "note_for_commit",
                 "segments.", "unread_changes"):
        assert step not in tick, f"kernel/tick.py still does the commit's {step!r}"
    commit = (PACKAGE / "ledger" / "commit.py").read_text()
    for step in ("pending.read", "sweep.suspects", "integrity.unread_changes",
                 "attest.attest", "gitrepo.commit", "gitrepo.push"):
        assert step in commit, f"ledger/commit.py lost the commit's {step!r}"
