"""``outerloop contract check FILE``: exit codes and what it prints."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner

from outerloop.cli import main

REPO = Path(__file__).resolve().parents[2]
MINIMAL = REPO / "contracts" / "examples" / "minimal.yaml"


def _check(path: Path | str) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, ["contract", "check", str(path)])
    return result.exit_code, result.stdout, result.stderr


def test_check_exits_zero_with_a_summary_when_the_contract_is_valid() -> None:
    code, out, _ = _check(MINIMAL)
    assert code == 0
    assert "valid contract" in out
    assert "tsp: mean_tour_length (min)" in out
    assert "scope: src/quickstart/solvers/" in out
    assert "10 runs/week" in out


def test_check_prints_every_error_on_its_own_line_when_invalid(tmp_path: Path) -> None:
    bad = tmp_path / ".outerloop.yaml"
    bad.write_text(MINIMAL.read_text(encoding="utf-8")
                   .replace("direction: min", "direction: up\n    colour: red"),
                   encoding="utf-8")
    code, out, _ = _check(bad)
    assert code == 1
    lines = out.splitlines()
    assert "benchmarks[0].direction: must be 'min' or 'max'" in lines
    assert "benchmarks[0].colour: unknown field" in lines


def test_check_reports_yaml_problems_when_keys_repeat(tmp_path: Path) -> None:
    bad = tmp_path / ".outerloop.yaml"
    bad.write_text("roadmap: a.md\nroadmap: b.md\n", encoding="utf-8")
    code, out, _ = _check(bad)
    assert code == 1
    assert "duplicate key 'roadmap'" in out


def test_check_prints_one_line_without_traceback_when_the_file_is_missing(
        tmp_path: Path) -> None:
    code, out, err = _check(tmp_path / "absent.yaml")
    assert code == 1
    assert "Traceback" not in out + err
    assert len(err.strip().splitlines()) == 1
    assert "no such file" in err


def test_check_prints_one_line_when_the_path_is_a_directory(tmp_path: Path) -> None:
    code, _, err = _check(tmp_path)
    assert code == 1
    assert "is a directory" in err
    assert "Traceback" not in err
