"""Validated settings and contracts kept under the home (``validated.py``): read back
only for the same input and the same code; anything else is validated anew."""

from __future__ import annotations

import importlib
import os
import pickle
import sys
from pathlib import Path

import pytest

from outerloop.config import load_settings
from outerloop.contract import Contract, ContractInvalid, load_contract_text
from outerloop.errors import ConfigError
from outerloop.home import init_home
from outerloop.validated import VALIDATED_DIR, code_fingerprint, kept

CONTRACT = Path(__file__).resolve().parents[2] / "examples" / "tinytsp" / ".outerloop.yaml"


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    init_home(home, forge="local", compute="local", harness="scripted", targets=["o/n"])
    return home


def _entries(home: Path, kind: str) -> list[Path]:
    return sorted((home / VALIDATED_DIR).glob(f"{kind}-*.pickle"))


def test_settings_are_read_back_for_the_same_file_and_environment(tmp_path: Path) -> None:
    home = _home(tmp_path)
    first = load_settings(home)
    (entry,) = _entries(home, "settings")
    planted = first.model_copy(update={"ledger_remote": "planted"})
    entry.write_bytes(pickle.dumps(planted))  # what a second process reads back
    assert load_settings(home).ledger_remote == "planted"


def test_a_changed_file_environment_or_flag_is_validated_anew(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    home = _home(tmp_path)
    assert load_settings(home).cadence.tick_minutes == 10
    toml = home / "outerloop.toml"
    toml.write_text(toml.read_text().replace("tick_minutes = 10", "tick_minutes = 7"))
    assert load_settings(home).cadence.tick_minutes == 7
    monkeypatch.setenv("OUTERLOOP_LIMITS_STALE_DAYS", "3")
    assert load_settings(home).limits.stale_days == 3
    assert load_settings(home, {"limits": {"stale_days": 4}}).limits.stale_days == 4
    assert len(_entries(home, "settings")) == 4


def test_settings_that_fail_are_refused_every_time_and_never_kept(tmp_path: Path) -> None:
    home = _home(tmp_path)
    before = _entries(home, "settings")  # init's own, valid
    toml = home / "outerloop.toml"
    toml.write_text(toml.read_text().replace("tick_minutes = 10", "tick_minutes = -1"))
    for _ in range(2):
        with pytest.raises(ConfigError, match="tick_minutes"):
            load_settings(home)
    assert _entries(home, "settings") == before


def test_a_damaged_entry_is_validated_anew(tmp_path: Path) -> None:
    home = _home(tmp_path)
    first = load_settings(home)
    (entry,) = _entries(home, "settings")
    entry.write_bytes(entry.read_bytes()[:30])  # cut short by a crash
    assert load_settings(home) == first
    assert pickle.loads(entry.read_bytes()) == first  # written whole again


def test_an_edited_module_makes_a_new_key(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                          ) -> None:
    source = tmp_path / "validating_model.py"
    source.write_text("LIMIT = 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    importlib.import_module("validating_model")
    monkeypatch.setitem(sys.modules, "validating_model", sys.modules["validating_model"])
    before = code_fingerprint(["validating_model"])
    assert code_fingerprint(["validating_model"]) == before
    source.write_text("LIMIT = 22\n")
    os.utime(source, ns=(1, 1))  # another size and mtime, as an edit or an upgrade
    assert code_fingerprint(["validating_model"]) != before
    home = tmp_path / "h"
    made = []
    for _ in range(2):
        kept(home, "thing", b"same", ["validating_model"], int, lambda: made.append(1) or 5)
    assert made == [1]  # the second read it back
    source.write_text("LIMIT = 333\n")
    kept(home, "thing", b"same", ["validating_model"], int, lambda: made.append(1) or 5)
    assert made == [1, 1]  # other code: validated anew


def test_a_contract_is_read_back_for_the_same_bytes_and_refused_each_time_when_bad(
        tmp_path: Path) -> None:
    raw = CONTRACT.read_bytes()
    calls: list[int] = []

    def validate(text: bytes) -> Contract:
        calls.append(1)
        return load_contract_text(text.decode())

    first = kept(tmp_path, "contract", raw, ["outerloop.contract"], Contract,
                 lambda: validate(raw))
    again = kept(tmp_path, "contract", raw, ["outerloop.contract"], Contract,
                 lambda: validate(raw))
    assert again == first and calls == [1]
    bad = raw + b"\nunknown_field: 1\n"
    for _ in range(2):
        with pytest.raises(ContractInvalid):
            kept(tmp_path, "contract", bad, ["outerloop.contract"], Contract,
                 lambda: validate(bad))
    assert calls == [1, 1, 1] and len(_entries(tmp_path, "contract")) == 1


def test_an_entry_of_another_type_is_not_taken(tmp_path: Path) -> None:
    assert kept(tmp_path, "thing", b"x", [], int, lambda: 5) == 5
    (entry,) = _entries(tmp_path, "thing")
    entry.write_bytes(pickle.dumps("not an int"))
    assert kept(tmp_path, "thing", b"x", [], int, lambda: 6) == 6


@pytest.mark.parametrize(("module", "named"), [("outerloop.config", "SETTINGS_MODULES"),
                                               ("outerloop.contract", "CONTRACT_MODULES")])
def test_the_key_names_every_outerloop_module_the_validating_code_imports(
        module: str, named: str) -> None:
    # an imported module left out of the key could change what validates, unseen
    probe = (f"import json, sys, {module} as m\n"
             f"print(json.dumps(sorted(n for n in sys.modules if n.startswith('outerloop.'))))\n"
             f"print(json.dumps(sorted(m.{named})))")
    import json
    import subprocess

    loaded, listed = subprocess.run([sys.executable, "-c", probe], capture_output=True,
                                    text=True, check=True, timeout=60).stdout.splitlines()
    # listed and not imported yet: a validator imported only to parse (the yaml loader)
    assert set(json.loads(loaded)) <= set(json.loads(listed))


def test_a_listed_module_not_imported_yet_keys_by_its_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # the contract's yaml loader is imported only to parse: its edit must still make a
    # new key in a process that has not imported it (a quiet tick's)
    source = tmp_path / "lazy_validator.py"
    source.write_text("STRICT = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_validator", raising=False)
    before = code_fingerprint(["lazy_validator"])
    assert "lazy_validator" not in sys.modules  # found, not imported
    source.write_text("STRICT = False  # an edit\n")
    assert code_fingerprint(["lazy_validator"]) != before
    assert code_fingerprint(["no_such_module_here"]).endswith("no_such_module_here:-")
