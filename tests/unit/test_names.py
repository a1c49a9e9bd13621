"""Names say what they hold: no two public classes of outerloop share a name, so a
reader (or an import) never has to ask which ``Budgets`` or ``JobRecord`` is meant."""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[2] / "outerloop"


def public_classes(root: Path) -> dict[str, list[str]]:
    """Class name -> the modules (relative paths) defining it at module level."""
    where: dict[str, list[str]] = defaultdict(list)
    for path in sorted(root.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                where[node.name].append(str(path.relative_to(root)))
    return where


def test_no_two_public_classes_share_a_name_when_the_package_is_scanned() -> None:
    shared = {name: paths for name, paths in public_classes(PACKAGE).items() if len(paths) > 1}
    assert shared == {}, "rename one of each pair so the name says what it holds"


def test_a_shared_name_is_found_when_two_modules_define_it(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text("class Budgets:\n    pass\n")
    (tmp_path / "b.py").write_text("class Budgets:\n    pass\nclass _Private:\n    pass\n")
    (tmp_path / "c.py").write_text("class _Private:\n    pass\n")
    assert public_classes(tmp_path)["Budgets"] == ["a.py", "b.py"]
    assert "_Private" not in public_classes(tmp_path)
