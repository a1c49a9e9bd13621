"""The target and the scripted agent of ``bench/chaos.py``.

The target scores ``100 - the number of idea files`` under ``solver/<bench>/`` (lower is
better) on four benchmarks, one per kind. The agent is one shell script played at every
leg: a state machine over ``.outerloop/status.json`` and its workspace, as a real agent
resumes from what it finds, so any leg may be replayed after a kill. An experiment
that died (its job killed, a full disk) is launched again, three launches at most. A
write that fails
(a full disk) ends the step with exit 75 instead of going on without the file.
"""

from __future__ import annotations

from pathlib import Path

KINDS = ("gain", "merge", "nogain", "outside")

EVALUATE = '''"""Score = 100 - the number of idea files under solver/<bench>/ (lower is better)."""
import json
import sys
from pathlib import Path

bench = sys.argv[1]
ideas = [p for p in Path("solver", bench).glob("*.txt")] if Path("solver", bench).is_dir() else []
print(f"{bench}: {len(ideas)} ideas", flush=True)
print(json.dumps({"score": 100 - len(ideas)}))
'''

CONTRACT_ACTIVE = 100
LINES = ("merge",)
"""The kinds whose benchmark has research lines on (issue 49 point 6): each slot's runs
of it continue one line (``agents/<agent-id>``), pushed at every hand-over and merged
with the base at every start, under the same kills and faults."""
CONTRACT = "benchmarks:\n" + "".join(
    f"  - {{name: {kind}, command: python3 evaluate.py {kind}, metric: score, "
    f"direction: min, eval_minutes: 5" + (", lines: true" if kind in LINES else "")
    + "}\n" for kind in KINDS) + """\
budgets:
  gpu_hours_per_run: 0
  runs_per_week: 1000
  max_active_attempts: {active}
scope:
  allowed: [solver/]
roadmap: docs/roadmap.md
"""

AGENT = r'''set -u
tool="python3 .outerloop/syscall"
field() {  # a null field prints empty, a 0 prints 0 (never `or ''`: 0 is falsy)
  python3 -c "import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]
print('' if v is None else v)" .outerloop/status.json "$1"
}
put() { mkdir -p "$(dirname "$1")" && printf '%s\n' "$2" > "$1" || exit 75; }
bench=$(field benchmark); run=$(field run_id); pr=$(field pr)
launches=$(field launches_used); sleeps=$(field sleeps_used)
last=$(python3 -c "import json,sys; h=json.load(open(sys.argv[1]))
print(h[-1]['state'] if h else '')" .outerloop/history.json 2>/dev/null || true)
need_launch() {  # none yet, or the last one died (killed, full disk): again, 3 at most
  # (never `sleep` with nothing staged to wait on a live one: the kernel answers that
  # with another leg at once, a loop that spends the script's legs)
  [ "$launches" = 0 ] || { [ "$launches" -lt 3 ] && case "$last" in
    completed|pending|running|completing) false ;; *) true ;; esac; }
}
report() { put report.md "# $run

Chaos agent for $bench."; }
case "$bench" in
  gain|merge)
    if [ -n "$pr" ]; then
      $tool message --to thread "Thanks for the review of $run: the idea file is the whole change."
      $tool sleep
    elif need_launch; then
      put "solver/$bench/$run.txt" idea
      $tool launch --name "try$launches" --minutes 5 --why "one more idea" -- \
        python3 evaluate.py "$bench"
      $tool sleep
    else
      put "solver/$bench/$run.txt" idea
      report
      [ "$bench" = gain ] && $tool message --to thread "Submitting $run for measurement."
      $tool submit --report report.md
      $tool sleep
    fi ;;
  nogain)
    if need_launch; then
      $tool launch --name "try$launches" --minutes 5 --why "a baseline look" -- \
        python3 evaluate.py nogain
      $tool sleep
    elif [ "$sleeps" -le "$launches" ]; then  # woken with its result: submit once
      put "solver/nogain/$run.md" note
      report; $tool submit --report report.md; $tool sleep
    else
      report; $tool stop --report report.md
    fi ;;
  outside)
    if [ "$launches" != 0 ] && ! need_launch; then
      git checkout -- evaluate.py; report; $tool stop --report report.md
    elif [ "$launches" = 0 ] && git diff --quiet -- evaluate.py; then
      echo "# tuned" >> evaluate.py || exit 75
      $tool launch --name tuned --minutes 5 --why "a tuned evaluator" -- python3 evaluate.py outside
      $tool sleep
    else
      git checkout -- evaluate.py
      $tool launch --name "try$launches" --minutes 5 --why "the evaluator as it is" -- \
        python3 evaluate.py outside
      $tool sleep
    fi ;;
esac
'''
LEGS = 256
"""Legs the script is played for. A run in review is woken for each burst of comments,
and killed or full-disk legs are played again: at 16, one run of a 20-run chaos (seed 11)
was woken 19 times, its script ran out and the run ended for want of progress; at 64,
one run of a 50-run chaos (seed 11, 408 comments) was woken 67 times and ended the same
way (counted lost: the script's end, not the kernel's)."""


def build_target(root: Path, active: int) -> Path:
    target = root / "target"
    (target / "solver").mkdir(parents=True)
    (target / "docs").mkdir()
    (target / "evaluate.py").write_text(EVALUATE)
    (target / "solver" / "README.md").write_text("Ideas live here, one file each.\n")
    (target / "docs" / "roadmap.md").write_text("# Roadmap\n")
    (target / ".gitignore").write_text("report.md\n__pycache__/\n")
    (target / ".outerloop.yaml").write_text(CONTRACT.replace("{active}", str(active)))
    return target
