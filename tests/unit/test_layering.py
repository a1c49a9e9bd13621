"""Lanes are pure planners: importing them pulls in nothing that performs effects."""

from __future__ import annotations

import subprocess
import sys

EFFECTFUL = ("outerloop.kernel.executor", "outerloop.kernel.observe", "outerloop.kernel.tick",
             "outerloop.compute.local", "outerloop.compute.slurm", "outerloop.forge.local",
             "outerloop.forge.github", "outerloop.run.workspace",
             "outerloop.attempt.session", "outerloop.attempt.channel", "outerloop.harness.env",
             "outerloop.harness.scripted", "outerloop.harness.claude", "outerloop.harness.codex",
             "outerloop.harness.factory",
             "outerloop.ledger.gitrepo", "subprocess", "sqlite3")


def test_lanes_import_no_effector_when_loaded_alone() -> None:
    probe = (
        "import sys, pkgutil, importlib, outerloop.kernel.lanes as L\n"
        "for m in pkgutil.iter_modules(L.__path__):\n"
        "    importlib.import_module('outerloop.kernel.lanes.' + m.name)\n"
        "print('\\n'.join(sorted(sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True)
    loaded = set(done.stdout.split())
    bad = sorted(m for m in loaded if any(m == e or m.startswith(e + ".") for e in EFFECTFUL))
    assert bad == []


def test_no_module_reads_environment_when_not_config() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "outerloop"
    offenders = [str(p.relative_to(root)) for p in root.rglob("*.py")
                 if p.name != "config.py" and "agent_tool" not in p.parts
                 and ("os.environ" in p.read_text() or "os.getenv" in p.read_text())]
    assert offenders == []


def test_no_module_is_longer_than_house_limit_when_counted() -> None:
    from pathlib import Path

    root = Path(__file__).resolve().parents[2] / "outerloop"
    long = [(str(p.relative_to(root)), n) for p in root.rglob("*.py")
            if "agent_tool" not in p.parts
            and (n := len(p.read_text().splitlines())) > 650]
    assert long == []


def test_the_sandbox_package_names_each_export_from_its_own_module() -> None:
    """``outerloop.sandbox`` imports its parts when a name is asked for: each name in
    ``__all__`` is the object its module holds (a wrong map entry would fail here, not in
    a session)."""
    import importlib

    import outerloop.sandbox as sandbox

    for name in sandbox.__all__:
        home = importlib.import_module(f"outerloop.sandbox.{sandbox._HOME_OF[name]}")
        assert getattr(sandbox, name) is getattr(home, name), name
    assert set(sandbox._HOME_OF) == set(sandbox.__all__)
