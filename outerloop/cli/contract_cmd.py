"""``outerloop contract check FILE``: validate a target's ``.outerloop.yaml``.

Maintainers run this before committing a contract. An invalid contract prints every
problem, one ``field.path: problem`` line each, and exits 1; a valid one prints a
short summary of what the kernel will do with it (after clamping), then one
``warning:`` line per field this version accepts but does not act on
(``contract_fields``), and exits 0. ``--json``: ``problems`` (invalid), or the contract as
validated with the summary's lines and the warnings (valid).
"""

from __future__ import annotations

import click

from outerloop.cli.json_out import emit, json_option
from outerloop.contract import Benchmark, Contract, ContractInvalid, load_contract_file
from outerloop.contract_fields import ignored_field_warnings
from outerloop.limits import effective_limits


def _summary(path: str, contract: Contract) -> list[str]:
    limits = effective_limits(contract)
    lines = [f"{path}: valid contract", "benchmarks:"]
    for bench in contract.benchmarks:
        extras = [f"seed in {bench.seed_env}" if bench.seed_env else "no seed variable"]
        if bench.repeats > 1:
            extras.append(f"{bench.repeats} paired seeds")
        if bench.guard:
            extras.append("a guard: re-measured beside every candidate"
                          + (f" ({_allowance_words(bench)})" if bench.allowance else ""))
        if bench.lines_on:
            extras.append("research lines: one per agent slot")
        lines.append(f"  {bench.name}: {bench.metric} ({bench.direction}), "
                     f"eval {limits.for_benchmark(bench.name).eval_minutes} min, "
                     f"{bench.gpus} GPU(s), {', '.join(extras)}")
    lines.append("scope: " + ", ".join(contract.scope.allowed))
    aggregate = contract.suite_aggregate
    if aggregate is not None:
        lines.append(f"suite: every benchmark re-measured beside every candidate; the PR "
                     f"reports their aggregate {aggregate.metric} ({aggregate.direction}: "
                     f"the mean relative gain)")
    if contract.scope.shared:
        suite = ", ".join(contract.suite) if isinstance(contract.suite, list) else "every benchmark"
        lines.append("shared: " + ", ".join(contract.scope.shared)
                     + f" (touching it re-measures {suite})")
    budgets = contract.budgets
    lines.append(f"budgets: {budgets.gpu_hours_per_run:g} GPU-hours/run, "
                 f"{budgets.runs_per_week} runs/week, "
                 f"{limits.max_active_attempts} active at once")
    lines.append(f"session: {limits.session_max_turns} turns, {limits.session_minutes} min "
                 f"in a {limits.attempt_job_minutes}-min job")
    lines.append(f"roadmap: {contract.roadmap}; merge: {contract.merge}")
    if contract.guidance_text:
        lines.append(f"guidance: {len(contract.guidance_text):,} characters, quoted in "
                     f"every brief")
    return lines


def _allowance_words(bench: Benchmark) -> str:
    allowance = bench.allowance
    assert allowance is not None
    unit = "% of its baseline" if allowance.relative else ""
    scale = 100 if allowance.relative else 1

    def shown(value: float | None) -> str:
        return f"{(value or 0) * scale:g}{unit}"

    rel = "_rel" if allowance.relative else ""
    free, top = getattr(allowance, f"free{rel}"), getattr(allowance, f"max{rel}")
    needs = getattr(allowance, f"requires_gain{rel}")
    words = f"may get worse by {shown(free)} freely"
    if top is not None:
        words += f", by up to {shown(top)}"
        if needs is not None:
            words += (f" when the climbed benchmark gains at least {needs * scale:g}"
                      f"{'% of its own baseline' if allowance.relative else ''}")
    return words


@click.group("contract")
def contract_group() -> None:
    """Work with a target's contract (.outerloop.yaml)."""


@contract_group.command("check")
@click.argument("file", type=str)
@json_option
def check(file: str, as_json: bool) -> None:
    """Validate FILE; print every error with its field path, or a summary.

    An unreadable FILE (missing, a directory) is a ``ContractError`` the main group
    prints as one line; exit 1 either way.
    """
    try:
        contract = load_contract_file(file)
    except ContractInvalid as exc:
        if as_json:
            emit(False, file=file, problems=list(exc.errors))
            raise SystemExit(1) from None
        click.echo(f"{file}: invalid contract ({len(exc.errors)} problem(s))")
        for line in exc.errors:
            click.echo(line)
        raise SystemExit(1) from None
    if as_json:
        emit(file=file, problems=[], summary=_summary(file, contract),
             warnings=ignored_field_warnings(contract),
             contract=contract.model_dump(mode="json"))
        return
    for line in _summary(file, contract):
        click.echo(line)
    for line in ignored_field_warnings(contract):
        click.echo(f"warning: {line}")


COMMANDS: list[click.Command] = [contract_group]
