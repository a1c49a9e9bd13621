"""GitHub requests per quiet tick: one target with 50 open issues (5 of them carrying
the approved label) and 10 open pull requests that runs are reviewing.

Runs the tick's forge pass (``observe.observe_target``) twice against the in-process
fake GitHub with real PyGithub: a first tick that fills the ETag cache, then a quiet
tick (nothing changed) with a fresh forge, as the next ``outerloop tick`` process
would have. Prints the quiet tick's requests that cost rate limit (304s and the free
``/rate_limit`` excluded, as GitHub counts them). Budget: <= 5. Nothing asserts.

    python bench/forge_calls.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

ISSUES = 50
PULLS = 10
APPROVED_EVERY = 10


def _seed(fake: object, target: str, scratch: Path) -> list[int]:
    from tests.github.fake import FakeGitHub
    from tests.github.fixtures import kernel_forge

    assert isinstance(fake, FakeGitHub)
    human = kernel_forge(fake, scratch / "human")
    for i in range(ISSUES):
        issue = human.create_issue(target, f"idea {i}", "try something on tour")
        if i % APPROVED_EVERY == 0:
            human.gh.get_repo(target).get_issue(issue.number).add_to_labels("outerloop:approved")
    clone = scratch / "clone"
    human.fetch(target, clone, "main")
    numbers = []
    for i in range(PULLS):
        subprocess.run(["git", "-C", str(clone), "-c", "user.name=a", "-c",
                        "user.email=a@example.com", "commit", "--allow-empty", "-qm", f"pr {i}"],
                       check=True)
        sha = subprocess.run(["git", "-C", str(clone), "rev-parse", "HEAD"], check=True,
                             capture_output=True, text=True).stdout.strip()
        branch = f"outerloop/agent-01/run-{i}"
        human.push(target, clone, sha, branch)
        numbers.append(human.open_pr(target, branch, "main", f"[agent-01] run {i}", "b").number)
        human.post_comment(target, numbers[-1], f"a review remark on {i}")
    return numbers


def main() -> int:
    from outerloop.config import load_settings
    from outerloop.home import init_home
    from outerloop.kernel.executor import Effects
    from outerloop.kernel.observe import observe_target
    from outerloop.ledger.state import RunRecord, State
    from tests.github.fake import FakeGitHub
    from tests.github.fixtures import KERNEL
    from tests.support import EXAMPLE_TARGET, TARGET

    with tempfile.TemporaryDirectory(prefix="forge-calls-") as tmp:
        scratch = Path(tmp)
        fake = FakeGitHub(scratch / "fake").start()
        fake.validate = False
        try:
            fake.create_repo(TARGET, EXAMPLE_TARGET)
            fake.grant(TARGET, KERNEL, "admin")
            pulls = _seed(fake, TARGET, scratch)
            home = scratch / "home"
            init_home(home, forge="local", compute="local", harness="scripted",
                      targets=[TARGET])
            settings = load_settings(home)
            state = State()
            for i, number in enumerate(pulls):
                state.runs[f"run-{i}"] = RunRecord(
                    run_id=f"run-{i}", target=TARGET, benchmark="tour", agent="agent-01",
                    issue=None, issue_title="", hypothesis="", queued_at="", state="parked",
                    park_reason="review", pr_number=number,
                    last_activity_at="2026-01-01T00:00:00.000000Z")
            from tests.github.fixtures import kernel_forge

            figures = []
            for tick in ("first", "quiet"):
                forge = kernel_forge(fake, scratch)
                before = fake.costly_requests()
                seen = observe_target(TARGET, state, Effects(settings, _forge=forge))
                assert seen.error is None, seen.error
                assert len(seen.issues) == ISSUES and len(seen.pulls) == PULLS
                figures.append((tick, fake.costly_requests() - before, forge.counters))
        finally:
            fake.stop()
    for tick, costly, counters in figures:
        print(f"{tick:>5} tick: {costly} rate-limited requests "
              f"({counters.not_modified} conditional 304s free, "
              f"{counters.served_from_cache} served from cache without a request)")
    quiet = figures[-1][1]
    print(f"GitHub requests per quiet tick (target {ISSUES} issues, {PULLS} PRs in review): "
          f"{quiet} (budget <= 5: {'met' if quiet <= 5 else 'NOT met'})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
