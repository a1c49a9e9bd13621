"""GitHub requests and wall time of the tick's forge pass: N targets, each with 50 open
issues (5 of them carrying the approved label) and 10 open pull requests that runs are
reviewing, on the in-process fake GitHub answering each API request after
``--latency-ms`` (as GitHub's round trip would).

Runs the tick's forge pass (``observe.observe_forge``) through the home's own forge
(``forge.factory``, real PyGithub) three times, each with a fresh forge as the next
``outerloop tick`` process would have: a first tick that fills the caches, a quiet tick
(nothing changed), and a quiet tick after the home's ``cache/`` (documented as
deletable) was removed. Prints, per tick, the requests that cost rate limit (304s and
the free ``/rate_limit`` excluded, as GitHub counts them), all HTTP requests sent
(304s included; ``/rate_limit`` apart), and the pass's wall time. Budget for a quiet
tick at 10 targets and 100 ms: <= 30 requests, <= 5 s. Nothing asserts.

    python bench/forge_calls.py --targets 10 --latency-ms 100
"""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

ISSUES = 50
PULLS = 10
APPROVED_EVERY = 10
HUMAN = "maintainer"
QUIET_BUDGET = 30
WALL_BUDGET_S = 5.0


def _seed(fake: Any, target: str) -> list[int]:
    """Issues, labels, comments and PRs written straight into the fake's state (the
    same route functions the API runs, without HTTP: seeding 10 targets over HTTP and
    git would take minutes)."""
    from tests.github import fake_routes as routes
    from tests.github.fake import _git, _stamp

    owner, name = target.split("/")
    repo = fake.repos[target]
    with fake.lock:
        for i in range(ISSUES):
            issue = routes._new_issue(fake, repo, HUMAN, f"idea {i}", "try something on tour")
            if i % APPROVED_EVERY == 0:
                routes._add_labels(fake, HUMAN, {}, ["outerloop:approved"], owner, name,
                                   str(issue["number"]))
        numbers = []
        tree = _git(["rev-parse", "main^{tree}"], cwd=repo.bare)
        for i in range(PULLS):
            sha = _git(["-c", "user.name=a", "-c", "user.email=a@example.com", "commit-tree",
                        tree, "-p", "main", "-m", f"pr {i}"], cwd=repo.bare)
            branch = f"outerloop/agent-01/run-{i}"
            _git(["update-ref", f"refs/heads/{branch}", sha], cwd=repo.bare)
            status, _, body = routes._create_pull(
                fake, HUMAN, {}, {"head": branch, "base": "main",
                                  "title": f"[agent-01] run {i}", "body": "b"}, owner, name)
            assert status == 201, body
            numbers.append(int(body["number"]))
            routes._create_comment(fake, HUMAN, {}, {"body": f"a review remark on {i}"},
                                   owner, name, str(numbers[-1]))
        for issue in repo.issues.values():  # a quiet target: nothing changed for an hour
            issue["updated_at"] = _stamp(time.time() - 3600)
    return numbers


def _home(scratch: Path, fake: Any, targets: list[str]) -> Path:
    from outerloop.home import init_home
    from tests.github.fixtures import KERNEL

    home = scratch / "home"
    init_home(home, forge="github", compute="local", harness="scripted", targets=targets)
    config = home / "outerloop.toml"
    config.write_text(config.read_text().replace(
        'kind = "github"', f'kind = "github"\napi_url = "{fake.base_url}"'))
    token = home / "keys" / "forge-token"
    token.write_text(fake.token_for(KERNEL))
    token.chmod(0o600)
    return home


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--targets", type=int, default=1)
    parser.add_argument("--latency-ms", type=float, default=0.0)
    args = parser.parse_args()

    from outerloop import clock
    from outerloop.config import load_settings
    from outerloop.kernel.executor import Effects
    from outerloop.kernel.observations import Observations
    from outerloop.kernel.observe import observe_forge
    from outerloop.ledger.state import RunRecord, State
    from tests.github.fake import FakeGitHub
    from tests.github.fixtures import KERNEL
    from tests.support import EXAMPLE_TARGET

    targets = [f"demo/target-{i:02d}" for i in range(args.targets)]
    with tempfile.TemporaryDirectory(prefix="forge-calls-") as tmp:
        scratch = Path(tmp)
        fake = FakeGitHub(scratch / "fake").start()
        fake.validate = False
        try:
            state = State()
            for target in targets:
                fake.create_repo(target, EXAMPLE_TARGET)
                fake.grant(target, KERNEL, "admin")
                fake.grant(target, HUMAN, "admin")
                for i, number in enumerate(_seed(fake, target)):
                    run_id = f"{target.split('/')[1]}-run-{i}"
                    state.runs[run_id] = RunRecord(
                        run_id=run_id, target=target, benchmark="tour", agent="agent-01",
                        issue=None, issue_title="", hypothesis="", queued_at="",
                        state="parked", park_reason="review", pr_number=number,
                        last_activity_at="2026-01-01T00:00:00.000000Z")
            home = _home(scratch, fake, targets)
            settings = load_settings(home)
            fake.latency_s = args.latency_ms / 1000
            figures = []
            for tick in ("first", "quiet", "quiet, cache/ deleted"):
                if tick.endswith("deleted"):
                    shutil.rmtree(home / "cache")
                    (home / "cache").mkdir(mode=0o700)
                fx = Effects(settings)
                before, sent = fake.costly_requests(), len(fake.log)
                fake.max_in_flight = 0
                obs = Observations(now=clock.now())
                start = time.monotonic()
                observe_forge(state, fx, obs)
                wall = time.monotonic() - start
                for target in targets:
                    seen = obs.targets[target]
                    assert seen.error is None, seen.error
                    assert len(seen.issues) == ISSUES and len(seen.pulls) == PULLS
                asked = [path for _, path, _ in fake.log[sent:] if path != "/rate_limit"]
                figures.append((tick, fake.costly_requests() - before, len(asked),
                                len(fake.log) - sent - len(asked), wall, fake.max_in_flight))
        finally:
            fake.stop()
    label = f"{args.targets} target(s) x {ISSUES} issues x {PULLS} PRs, {args.latency_ms:g} ms"
    for tick, costly, sent, free, wall, most in figures:
        print(f"{label}: {tick} tick: {costly} rate-limited requests, {sent} HTTP requests "
              f"sent (and {free} to the free /rate_limit), {wall:.2f} s wall, at most {most} "
              f"at once")
    _, quiet_costly, quiet_sent, _, quiet_wall, _ = figures[1]
    met = quiet_sent <= QUIET_BUDGET and quiet_wall <= WALL_BUDGET_S
    print(f"quiet tick: {quiet_sent} requests sent ({quiet_costly} rate-limited), "
          f"{quiet_wall:.2f} s wall (budget <= {QUIET_BUDGET} requests, <= {WALL_BUDGET_S:g} s: "
          f"{'met' if met else 'NOT met'}); after deleting cache/: {figures[2][1]} "
          f"rate-limited")
    return 0


if __name__ == "__main__":
    sys.exit(main())
