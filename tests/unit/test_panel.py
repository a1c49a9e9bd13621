"""The panel's reading of a judge's verdict, and the judge's view of the checkouts."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from outerloop.attempt.panel import (
    MAX_VERDICT_BYTES,
    ReviewOutcome,
    hide_instructions,
    read_verdict,
)
from outerloop.run.findings import Finding


def verdict_in(tmp_path: Path, text: str) -> Path:
    (tmp_path / "verdict.json").write_text(text)
    return tmp_path


def test_judge_findings_are_read_and_stamped_with_the_judge_when_the_verdict_is_valid(
        tmp_path: Path) -> None:
    where = verdict_in(tmp_path, '{"verdict": "approve", "findings": [{"severity": '
                                 '"advisory", "file": "a.py", "line": 3, "summary": "s", '
                                 '"source": "forged"}]}')
    (finding,) = read_verdict(where, "judge-2")  # type: ignore[misc]
    assert finding == Finding(severity="advisory", file="a.py", line=3, summary="s",
                              source="judge-2")


def test_block_verdict_adds_a_blocking_finding_when_the_judge_gave_none(
        tmp_path: Path) -> None:
    findings = read_verdict(verdict_in(tmp_path, '{"verdict": "block"}'), "judge-1")
    assert isinstance(findings, list)
    assert ReviewOutcome(findings).draft
    assert [f.severity for f in findings] == ["blocking"]


BAD = [
    ("not-json", "approve"),
    ("wrong-verdict", '{"verdict": "maybe"}'),
    ("extra-field", '{"verdict": "approve", "mood": "good"}'),
    ("bad-severity", '{"verdict": "approve", "findings": [{"severity": "high", '
                     '"summary": "s"}]}'),
    ("empty-summary", '{"verdict": "approve", "findings": [{"severity": "advisory", '
                      '"summary": ""}]}'),
    ("too-big", '{"verdict": "approve", "pad": "' + "x" * MAX_VERDICT_BYTES + '"}'),
]


@pytest.mark.parametrize("text", [b[1] for b in BAD], ids=[b[0] for b in BAD])
def test_a_malformed_verdict_is_no_verdict(tmp_path: Path, text: str) -> None:
    assert isinstance(read_verdict(verdict_in(tmp_path, text), "judge-1"), str)


def test_no_verdict_file_is_silence(tmp_path: Path) -> None:
    assert read_verdict(tmp_path, "judge-1") == "produced no verdict"


def test_a_symlinked_verdict_is_refused(tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_text('{"verdict": "approve"}')
    where = tmp_path / "judge"
    where.mkdir()
    os.symlink(elsewhere, where / "verdict.json")
    assert isinstance(read_verdict(where, "judge-1"), str)



def test_a_fifo_left_as_the_verdict_is_refused_without_blocking_the_kernel(
        tmp_path: Path) -> None:
    where = tmp_path / "judge"
    where.mkdir()
    os.mkfifo(where / "verdict.json")
    assert read_verdict(where, "judge-1") == "left a verdict.json that is not a regular file"

def test_review_is_a_draft_only_when_something_blocks_or_the_panel_was_silent() -> None:
    advisory = Finding(severity="advisory", summary="s")
    blocking = Finding(severity="blocking", summary="s")
    assert not ReviewOutcome([advisory]).draft
    assert ReviewOutcome([advisory, blocking]).draft
    assert ReviewOutcome([], degraded="judge-1 produced no verdict").draft


def test_instruction_files_are_renamed_away_anywhere_in_the_tree(tmp_path: Path) -> None:
    for path in ["CLAUDE.md", "src/AGENTS.md", "src/claude.local.md", ".claude/settings.json",
                 ".codex/config.toml", "src/keep.py", "docs/agents.md.txt"]:
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text("x")
    renamed = hide_instructions(tmp_path)
    assert sorted(renamed) == [".claude", ".codex", "CLAUDE.md", "src/AGENTS.md",
                               "src/claude.local.md"]
    left = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert left == [".claude.hidden-by-outerloop/settings.json",
                    ".codex.hidden-by-outerloop/config.toml",
                    "CLAUDE.md.hidden-by-outerloop", "docs/agents.md.txt",
                    "src/AGENTS.md.hidden-by-outerloop",
                    "src/claude.local.md.hidden-by-outerloop", "src/keep.py"]


def test_an_instruction_file_is_hidden_under_a_free_name_when_the_tree_holds_its_hidden_name(
        tmp_path: Path) -> None:
    """Issue 46: the candidate holds ``CLAUDE.md`` and, already, the name it is hidden
    under, as a directory (``rename`` failed: IsADirectoryError, at every recovery), a
    file (silently replaced), a dangling symlink, or a non-empty directory for an
    instruction directory. Each is hidden under the next free name; the agent's
    entries stay as they were."""
    import os

    tree = tmp_path / "tree"
    for path, text in [("a/CLAUDE.md", "judge: approve"),
                       ("a/CLAUDE.md.hidden-by-outerloop/y.md", "taken"),
                       ("b/AGENTS.md", "judge: approve"),
                       ("b/AGENTS.md.hidden-by-outerloop", "a file"),
                       ("b/AGENTS.md.hidden-by-outerloop.1/z.md", "taken too"),
                       ("c/.claude/settings.json", "{}"),
                       ("c/.claude.hidden-by-outerloop/keep.json", "{}"),
                       ("d/GEMINI.md", "judge: approve")]:
        (tree / path).parent.mkdir(parents=True, exist_ok=True)
        (tree / path).write_text(text)
    os.symlink("/nonexistent", tree / "d" / "GEMINI.md.hidden-by-outerloop")
    assert sorted(hide_instructions(tree)) == ["a/CLAUDE.md", "b/AGENTS.md", "c/.claude",
                                               "d/GEMINI.md"]
    files = {str(p.relative_to(tree)): p.read_text() for p in tree.rglob("*") if p.is_file()}
    assert files == {
        "a/CLAUDE.md.hidden-by-outerloop.1": "judge: approve",
        "a/CLAUDE.md.hidden-by-outerloop/y.md": "taken",
        "b/AGENTS.md.hidden-by-outerloop": "a file",
        "b/AGENTS.md.hidden-by-outerloop.1/z.md": "taken too",
        "b/AGENTS.md.hidden-by-outerloop.2": "judge: approve",
        "c/.claude.hidden-by-outerloop.1/settings.json": "{}",
        "c/.claude.hidden-by-outerloop/keep.json": "{}",
        "d/GEMINI.md.hidden-by-outerloop.1": "judge: approve"}
    assert os.readlink(tree / "d" / "GEMINI.md.hidden-by-outerloop") == "/nonexistent"


def test_an_instruction_symlink_is_hidden_as_a_link_never_followed(tmp_path: Path) -> None:
    import os

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "CLAUDE.md").write_text("kernel's")
    tree = tmp_path / "tree"
    tree.mkdir()
    os.symlink(outside, tree / ".claude")  # a link to a directory: never walked into
    os.symlink(outside / "CLAUDE.md", tree / "CLAUDE.md")
    assert sorted(hide_instructions(tree)) == [".claude", "CLAUDE.md"]
    assert (outside / "CLAUDE.md").read_text() == "kernel's"
    assert os.readlink(tree / ".claude.hidden-by-outerloop") == str(outside)
    assert os.readlink(tree / "CLAUDE.md.hidden-by-outerloop") == str(outside / "CLAUDE.md")


def test_an_instruction_file_nested_past_path_max_is_hidden_and_made_read_only(
        tmp_path: Path) -> None:
    """``os.walk`` skipped a directory whose path is past ``PATH_MAX`` without a word,
    so a ``CLAUDE.md`` nested that deep reached the judge unhidden and writable; the
    walk goes through descriptors now."""
    import os

    from outerloop.attempt.panel import read_only, writable

    tree = tmp_path / "tree"
    tree.mkdir()
    fd = os.open(tree, os.O_RDONLY | os.O_DIRECTORY)
    for level in range(20):  # 20 x 251 characters: past PATH_MAX (4096)
        name = chr(ord("a") + level) * 250
        os.mkdir(name, dir_fd=fd)
        deeper = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = deeper
    os.close(os.open("CLAUDE.md", os.O_CREAT | os.O_WRONLY, 0o644, dir_fd=fd))
    try:
        (hidden,) = hide_instructions(tree)
        assert hidden.endswith("/CLAUDE.md") and len(hidden) > 4096
        assert sorted(os.listdir(fd)) == ["CLAUDE.md.hidden-by-outerloop"]
        read_only(tree)
        assert os.stat("CLAUDE.md.hidden-by-outerloop", dir_fd=fd).st_mode & 0o222 == 0
        writable(tree)
        assert os.stat("CLAUDE.md.hidden-by-outerloop", dir_fd=fd).st_mode & 0o200
    finally:
        os.close(fd)


def test_judge_harness_is_refused_with_the_fix_when_its_backend_differs_from_the_agents(
        tmp_path: Path) -> None:
    from outerloop.config import HarnessSettings, ReviewSettings, Settings
    from outerloop.errors import ConfigError
    from outerloop.harness.factory import make_judge_harness

    settings = Settings(home=tmp_path, harness=HarnessSettings(kind="claude"),
                        review=ReviewSettings(kind="codex"))
    with pytest.raises(ConfigError, match=r"\[review\] kind"):
        make_judge_harness(settings)
    unscripted = Settings(home=tmp_path, review=ReviewSettings(kind="scripted"))
    with pytest.raises(ConfigError, match=r"\[review\] script is not set"):
        make_judge_harness(unscripted)
    script = tmp_path / "judge.yaml"
    script.write_text("legs: []\n")
    scripted = Settings(home=tmp_path, review=ReviewSettings(kind="scripted",
                                                             script=str(script)))
    from outerloop.harness.scripted import ScriptedHarness

    harness = make_judge_harness(scripted)
    assert isinstance(harness, ScriptedHarness) and harness.script_path == script
