"""Research lines and the agent's memory through real ticks on the local forge (issue 49,
points 2 and 3): two runs of one slot with ``lines`` on. The first run's line exists on
the forge; its memory, line-only notes and an instruction file of its own ride on the
line but never in the pull request (cut from the base with the win's changes only), the
measured tree or a scope note; a known secret in the memory never reaches the forge.
The second run starts on the line with the base merged in (the merged win comes back,
the instruction file is reset by the kernel's own commit), its brief shows the line,
its divergence and the first run's memory (fenced, as the agent's own earlier writing),
and the conflicting merge is its first task."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from click.testing import CliRunner

from outerloop.cli import main as cli_main
from outerloop.config import Settings
from outerloop.forge import localgit as g
from outerloop.ledger.state import RunRecord, State
from outerloop.sandbox.secrets import known_secrets
from tests.support import (
    AGENTS,
    EXAMPLE_TARGET,
    TARGET,
    ended,
    forge,
    in_review,
    jobs_import_this_checkout,
    make_home,
    open_issue,
    tick_until,
)

pytestmark = pytest.mark.e2e

LINE = "agents/agent-01"
MEMORY_V1 = "# Memory of agent-01\n\n2-opt after nearest neighbour works. MEMO-RUN-1\n"


def _git(*args: str, cwd: Path | None = None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True,
                          text=True).stdout.strip()


def target_with_lines(dest: Path) -> Path:
    """tinytsp with ``lines: 2`` on its ``tour`` benchmark and an ``AGENTS.md`` of its
    maintainers."""
    shutil.copytree(EXAMPLE_TARGET, dest)
    contract = dest / ".outerloop.yaml"
    text = contract.read_text().replace("    eval_minutes: 5\n  - name: spread",
                                        "    eval_minutes: 5\n    lines: 2\n  - name: spread", 1)
    assert "lines: 2" in text
    contract.write_text(text)
    (dest / "AGENTS.md").write_text("Reviewed instructions of the maintainers.\n")
    return dest


def _script(path: Path, secret: str) -> Path:
    """Run 1 (leg 0): 2-opt, its memory (with a known secret in a topic file), a note and
    an instruction file of its own outside the scope, then submit. Run 2 (a new session,
    so leg 0 of the script again: the scripted harness replays by session) checks where it
    starts, resolves the conflict, updates its memory and stops."""
    two_opt = (AGENTS / "tinytsp-2opt.yaml").read_text()
    solver = two_opt.split("        content: |\n", 1)[1].split("    - shell:", 1)[0]
    run1 = (
        "    - write:\n        path: solver/tour.py\n        content: |\n" + solver +
        "    - write: {path: AGENT_MEMORY.md, content: " + json.dumps(MEMORY_V1) + "}\n"
        "    - write: {path: agent_memory/tour.md, content: \"nearest neighbour is 7.5\\n\"}\n"
        "    - write: {path: agent_memory/key.md, content: " + json.dumps(secret) + "}\n"
        "    - write: {path: NOTES.md, content: \"the line's own notes\\n\"}\n"
        "    - write: {path: CLAUDE.md, content: \"instructions the agent wrote\\n\"}\n"
        "    - write: {path: report.md, content: \"# 2-opt after nearest neighbour\\n\\n"
        "2-opt removes crossings.\\n\"}\n"
        "    - syscall: \"submit --report report.md\"\n"
        "    - syscall: sleep\n")
    run2 = (
        "    - expect: \"Your first task: resolve a conflicted merge\"\n"
        "    - expect: \"MEMO-RUN-1\"\n"
        "    - shell: \"grep -q '<<<<<<<' NOTES.md && test ! -e CLAUDE.md && "
        "grep -q Reviewed AGENTS.md && test \\\"$(git log -1 --format=%an)\\\" = outerloop "
        "&& grep -q two_opt solver/tour.py\"\n"
        "    - write: {path: NOTES.md, content: \"resolved: both notes kept\\n\"}\n"
        "    - write: {path: AGENT_MEMORY.md, content: \"# Memory\\n\\nMEMO-RUN-2\\n\"}\n"
        "    - write: {path: report.md, content: \"# Nothing new\\n\\nResolved the merge.\\n\"}\n"
        "    - syscall: \"stop --report report.md\"\n")
    text = ("legs:\n  - - shell: \"test ! -e NOTES.md\"\n" + run1 +
            "  - - expect: \"never reached\"\n")
    path.write_text(text)
    (path.parent / "run2.yaml").write_text("legs:\n  - - shell: \"true\"\n" + run2)
    return path


def _tree(bare: Path, rev: str) -> list[str]:
    return _git("--git-dir", str(bare), "ls-tree", "-r", "--name-only", rev).splitlines()


def _show(bare: Path, rev: str, path: str) -> str:
    return _git("--git-dir", str(bare), "show", f"{rev}:{path}")


def _main_moves(settings: Settings, work: Path) -> str:
    """A maintainer adds their own NOTES.md on main (the line's NOTES.md differs)."""
    bare = forge(settings).repo_dir(TARGET)
    _git("clone", "--quiet", "--branch", "main", str(bare), str(work))
    (work / "NOTES.md").write_text("the maintainers' notes\n")
    _git("add", "NOTES.md", cwd=work)
    _git("-c", "user.name=maintainer", "-c", "user.email=m@example.com", "commit", "--quiet",
         "-m", "notes", cwd=work)
    _git("push", "--quiet", "origin", "main", cwd=work)
    return _git("rev-parse", "HEAD", cwd=work)


def _pushed(run_id: str) -> Callable[[State], bool]:
    """The run's line is on the forge (a settled run, whose line record is dropped, only
    settles once it is)."""
    def done(state: State) -> bool:
        line = state.runs[run_id].line
        return line is None or not line.unpushed
    return done


def _runs(state: State) -> list[RunRecord]:
    return sorted(state.runs.values(), key=lambda r: r.queued_at)


def test_two_runs_of_a_slot_share_its_line_and_memory_but_publish_only_the_win(
        tmp_path: Path) -> None:
    settings = make_home(tmp_path, tmp_path / "agent.yaml",
                         target_dir=target_with_lines(tmp_path / "target"))
    settings = jobs_import_this_checkout(settings)
    secret = next(s for s in known_secrets(settings) if len(s) >= 16)
    _script(tmp_path / "agent.yaml", f"token {secret}\n")
    local = forge(settings)
    bare = local.repo_dir(TARGET)
    main0 = local.branch_head(TARGET, "main")
    open_issue(settings, "Shorter tours", "Please try local search on tour.")

    state = tick_until(settings, lambda s: in_review(s) or ended(s), timeout_s=600)
    (run1,) = state.runs.values()
    assert not run1.ended, run1.end_reason
    assert run1.line is not None and run1.line.branch == LINE and run1.line.start == main0
    # the line holds the hand-over, memory included; the secret stayed off it
    state = tick_until(settings, _pushed(run1.run_id))
    line1 = local.branch_head(TARGET, LINE)
    assert line1 == state.runs[run1.run_id].line.head != main0  # type: ignore[union-attr]
    on_line = _tree(bare, line1)
    assert {"AGENT_MEMORY.md", "agent_memory/tour.md", "NOTES.md", "CLAUDE.md"} <= set(on_line)
    assert "agent_memory/key.md" not in on_line
    assert state.runs[run1.run_id].line.withheld == ["agent_memory/key.md"]  # type: ignore[union-attr]
    # the maintainer sees the slot's memory, in status and explain (issue 49, point 5)
    home = ["--home", str(settings.home)]
    shown = json.loads(CliRunner().invoke(cli_main, ["status", "--json", *home]).output)
    (line_row,) = shown["lines"]
    assert "MEMO-RUN-1" in line_row["memory_excerpt"] and secret not in json.dumps(shown)
    told = CliRunner().invoke(cli_main, ["explain", run1.run_id, *home]).output
    assert "MEMO-RUN-1" in told and f"{LINE}:AGENT_MEMORY.md" in told
    # the PR: the base plus the win's changes, never the line
    pr = local.get_pr(TARGET, run1.pr_number or 0)
    assert g.is_ancestor(main0, pr.head_sha, git_dir=bare)
    assert not g.is_ancestor(line1, pr.head_sha, git_dir=bare)
    changed = _git("--git-dir", str(bare), "diff", "--name-only", main0, pr.head_sha)
    assert changed.splitlines() == ["solver/tour.py"]
    assert "AGENT_MEMORY" not in pr.body and "agent_memory" not in pr.body
    assert not any("AGENT_MEMORY" in p or "agent_memory" in p for p in run1.park_left_out)
    # the measured candidate is the PR's tree: no memory there either
    assert run1.published_sha == pr.head_sha
    assert "AGENT_MEMORY.md" not in _tree(bare, pr.head_sha)

    local.merge_pr(TARGET, run1.pr_number or 0)
    state = tick_until(settings, ended, timeout_s=300)
    moved = _main_moves(settings, tmp_path / "maintainer")
    # the memory lives on the forge's line alone: the first run's clones are gone
    for part in ("kernel", "ws"):
        shutil.rmtree(settings.home / "runs" / run1.run_id / part)

    (tmp_path / "agent.yaml").write_text((tmp_path / "run2.yaml").read_text())
    open_issue(settings, "Shorter tours again", "Please try local search on tour again.")
    state = tick_until(settings, lambda s: len(s.runs) == 2 and ended(s), timeout_s=600)
    run2 = _runs(state)[1]
    assert run2.agent == "agent-01" and run2.ending == "negative-result", run2.end_reason
    assert run2.line is not None and run2.line.conflicts == ["NOTES.md"]
    start = run2.line.start
    # the merged win and the moved base came back to the line, by the kernel's commit
    assert g.is_ancestor(moved, start, git_dir=settings.home / "runs" / run2.run_id / "kernel"
                         / ".git")
    brief = (settings.home / "runs" / run2.run_id / "legs" / "001-prompt.md").read_text()
    assert f"`{LINE}`" in brief and ("file changed" in brief or "files changed" in brief)
    assert "Your own earlier writing" in brief and "MEMO-RUN-1" in brief
    assert brief.index("Your first task") < brief.index("## Contract")
    assert secret not in brief
    state = tick_until(settings, _pushed(run2.run_id))
    line2 = local.branch_head(TARGET, LINE)
    assert line2 is not None and g.is_ancestor(line1, line2, git_dir=bare)
    assert "MEMO-RUN-2" in _show(bare, line2, "AGENT_MEMORY.md")
    assert _show(bare, line2, "NOTES.md") == "resolved: both notes kept"
    assert "CLAUDE.md" not in _tree(bare, line2)
    hygiene = _git("--git-dir", str(bare), "log", "-1", "--format=%an%n%B", start)
    assert hygiene.startswith("outerloop\n") and "CLAUDE.md" in hygiene
    # the maintainer sees the target's lessons and the slot's standing (issues 49, 50)
    home = ["--home", str(settings.home)]
    shown = json.loads(CliRunner().invoke(cli_main, ["status", "--json", *home]).output)
    (lessons,) = shown["lessons"]
    assert lessons["ended"] == 2 and any(" agent-01 merged" in ln for ln in lessons["lines"])
    (board,) = shown["leaderboard"]
    assert (board["runs"], board["credited_prs"], board["merged_prs"]) == (2, 1, 1)
    told = json.loads(CliRunner().invoke(cli_main, ["explain", run2.run_id, "--json",
                                                    *home]).output)
    assert len(told["lessons"]) == 1 and told["lessons"][0].startswith(
        state.runs[run1.run_id].ended_at[:10])  # type: ignore[index]


@pytest.mark.github
def test_line_branch_is_on_github_and_its_pr_holds_no_line_only_file(tmp_path: Path) -> None:
    from tests.e2e.test_github_research_run import github_home
    from tests.github.fake import FakeGitHub
    from tests.github.fixtures import KERNEL, MAINTAINER, finish

    fake = FakeGitHub(tmp_path / "fake-github").start()
    fake.create_repo(TARGET, target_with_lines(tmp_path / "target"))
    fake.grant(TARGET, MAINTAINER, "admin")
    fake.grant(TARGET, KERNEL, "write")
    try:
        script = tmp_path / "agent.yaml"
        settings = jobs_import_this_checkout(github_home(tmp_path, fake, script=str(script)))
        secret = next(s for s in known_secrets(settings) if len(s) >= 16)
        _script(script, f"token {secret}\n")
        main0 = fake.branch_head(TARGET, "main")
        from github import Auth, Github

        gh = Github(base_url=fake.base_url, auth=Auth.Token(fake.token_for(MAINTAINER)),
                    retry=None, seconds_between_requests=None, seconds_between_writes=None)
        gh.get_repo(TARGET).create_issue(title="Shorter tours",
                                         body="Please try local search on tour.")
        state = tick_until(settings, lambda s: in_review(s) or ended(s), timeout_s=600)
        (run,) = state.runs.values()
        assert not run.ended, run.end_reason
        tick_until(settings, _pushed(run.run_id))
        line = fake.branch_head(TARGET, LINE)
        assert line is not None and line != main0
        assert "MEMO-RUN-1" in (fake.file_at(TARGET, line, "AGENT_MEMORY.md") or "")
        assert fake.file_at(TARGET, line, "NOTES.md") is not None
        assert fake.file_at(TARGET, line, "agent_memory/key.md") is None  # the secret
        head = run.published_sha
        assert head is not None and fake.branch_head(TARGET, run.pr_head or "") == head
        for line_only in ("AGENT_MEMORY.md", "agent_memory/tour.md", "NOTES.md", "CLAUDE.md"):
            assert fake.file_at(TARGET, head, line_only) is None, line_only
        bare = fake.repos[TARGET].bare
        assert _git("--git-dir", str(bare), "diff", "--name-only", main0 or "", head) == \
            "solver/tour.py"
        assert not g.is_ancestor(line, head, git_dir=bare)
    finally:
        fake.stop()
    finish(fake)
