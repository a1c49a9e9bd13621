"""``[sandbox] eval_only`` is validated like ``read_only`` and kept apart from every
path all sandboxed children read or write (grants only add: no subtree can be carved
out of a granted directory)."""

from __future__ import annotations

from pathlib import Path

import pytest

from outerloop.config import SandboxSettings, Settings
from outerloop.sandbox import SandboxError, for_run
from outerloop.sandbox.bwrap import BwrapSandbox
from outerloop.sandbox.confine import Confinement


def _settings(tmp_path: Path, **sandbox: list[str]) -> Settings:
    return Settings(home=tmp_path / "home", sandbox=SandboxSettings(kind="off", **sandbox))


def _dirs(tmp_path: Path, *names: str) -> list[str]:
    out = []
    for name in names:
        (tmp_path / name).mkdir(parents=True, exist_ok=True)
        out.append(str(tmp_path / name))
    return out


def test_eval_only_paths_reach_the_confinement_resolved_when_valid(tmp_path: Path) -> None:
    held, data = _dirs(tmp_path, "heldout", "data")
    confinement = for_run(_settings(tmp_path, eval_only=[held], read_only=[data]))
    assert confinement.eval_only == (held,) and confinement.read_only == (data,)


@pytest.mark.parametrize(("raw", "problem"), [("relative/labels", "not an absolute path"),
                                             ("/no/such/heldout", "does not exist")])
def test_eval_only_path_is_refused_when_relative_or_missing(tmp_path: Path, raw: str,
                                                            problem: str) -> None:
    with pytest.raises(SandboxError, match=rf"\[sandbox\] eval_only: .*{problem}"):
        for_run(_settings(tmp_path, eval_only=[raw]))


def test_eval_only_path_is_refused_when_it_overlaps_the_home(tmp_path: Path) -> None:
    (tmp_path / "home" / "data").mkdir(parents=True)
    with pytest.raises(SandboxError, match=r"\[sandbox\] eval_only: .*overlaps the outerloop"):
        for_run(_settings(tmp_path, eval_only=[str(tmp_path / "home" / "data")]))


@pytest.mark.parametrize("setting", ["read_only", "read_write"])
@pytest.mark.parametrize("nesting", ["inside", "holding", "same"])
def test_eval_only_path_is_refused_naming_both_settings_when_it_overlaps_a_declared_path(
        tmp_path: Path, setting: str, nesting: str) -> None:
    data, held = _dirs(tmp_path, "data", "data/heldout")
    if nesting == "holding":
        data, held = held, data
    elif nesting == "same":
        held = data
    with pytest.raises(SandboxError) as refused:
        for_run(_settings(tmp_path, eval_only=[held], **{setting: [data]}))
    message = str(refused.value)
    assert f"[sandbox] eval_only: {held} overlaps [sandbox] {setting} {data}" in message
    assert "fix: keep held-out data in a directory of its own" in message


def test_eval_only_path_is_refused_when_every_child_reads_it_as_a_system_path(
        tmp_path: Path) -> None:
    with pytest.raises(SandboxError, match=r"eval_only: /etc .*every sandboxed process"):
        for_run(_settings(tmp_path, eval_only=["/etc"]))


def test_non_scorer_is_refused_when_its_path_dirs_reach_an_eval_only_path(
        tmp_path: Path) -> None:
    held, tools = _dirs(tmp_path, "tools/heldout", "tools")
    confinement = Confinement(sandbox=BwrapSandbox(), home=tmp_path / "home",
                              eval_only=(held,))
    (tmp_path / "home").mkdir()
    env = {"PATH": f"{tools}:/usr/bin:/bin"}
    with pytest.raises(SandboxError, match=r"eval_only: .* overlaps .*tools"):
        confinement.command(["true"], env, workdir=tmp_path / "home" / "ws",
                            scratch=tmp_path / "home" / "s")
    argv, _ = confinement.command(["true"], env, workdir=tmp_path / "home" / "ws",
                                  scratch=tmp_path / "home" / "s", scorer=True)
    assert held in argv
