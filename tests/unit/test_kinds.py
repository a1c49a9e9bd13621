"""Each seam's backend names are written once (``outerloop/kinds.py``): the settings, the
CLI's choices, ``outerloop help settings`` and the factories all read them there."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from outerloop.cli import main
from outerloop.cli.help_cmd import settings_reference
from outerloop.compute.factory import make_compute
from outerloop.config import Settings, load_settings
from outerloop.errors import ConfigError
from outerloop.forge.factory import make_forge
from outerloop.harness.factory import make_harness
from outerloop.home import init_home
from outerloop.kinds import (
    MODEL_CLIS,
    ComputeKind,
    ForgeKind,
    HarnessKind,
    ModelHarnessKind,
    SandboxKind,
    names,
)
from outerloop.sandbox.resolve import MODEL_HARNESSES

SEAMS: list[tuple[str, str, Any]] = [
    ("forge", "kind", ForgeKind),
    ("compute", "kind", ComputeKind),
    ("harness", "kind", HarnessKind),
    ("review", "kind", HarnessKind),
    ("sandbox", "kind", SandboxKind),
]


def _home(tmp_path: Path) -> Path:
    home = tmp_path / "home"
    init_home(home, forge="local", compute="local", harness="scripted", targets=["o/n"])
    return home


def test_names_are_the_literals_values_in_order_when_literals_nest() -> None:
    assert names(HarnessKind) == ("scripted", "claude", "codex")
    assert names(SandboxKind) == ("auto", "landlock", "bwrap", "off")


@pytest.mark.parametrize(("section", "field", "kind"), SEAMS)
def test_an_unknown_name_is_refused_naming_the_field_and_every_choice_when_configured(
        tmp_path: Path, section: str, field: str, kind: Any) -> None:
    home = _home(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_settings(home, {section: {field: "pbs"}})
    message = str(caught.value)
    assert f"{section}.{field}" in message and "fix" in message
    for name in names(kind):
        assert repr(name) in message


@pytest.mark.parametrize(("option", "kind"), [("--forge", ForgeKind),
                                              ("--compute", ComputeKind),
                                              ("--harness", HarnessKind)])
def test_init_offers_the_seams_names_and_refuses_another_when_given(
        tmp_path: Path, option: str, kind: Any) -> None:
    done = CliRunner().invoke(main, ["init", "--home", str(tmp_path / "h"), option, "pbs"])
    assert done.exit_code == 2
    assert option in done.output
    for name in names(kind):
        assert name in done.output
    assert not (tmp_path / "h").exists()


def test_help_settings_lists_each_seams_choices_when_printed() -> None:
    lines = settings_reference()
    for section, field, kind in SEAMS:
        line = next(line for line in lines if f"OUTERLOOP_{section.upper()}_{field.upper()})"
                    in line)
        assert f"one of: {', '.join(names(kind))}" in line


def test_every_model_harness_has_its_cli_facts_and_is_never_unconfined_unasked() -> None:
    assert tuple(MODEL_CLIS) == names(ModelHarnessKind)
    assert frozenset(names(ModelHarnessKind)) == MODEL_HARNESSES


def _bypassing_validation(settings: Settings, section: str, kind: str) -> Settings:
    """Settings whose ``[section] kind`` never met the validator (``model_copy``)."""
    part = getattr(settings, section).model_copy(update={"kind": kind})
    return settings.model_copy(update={section: part})


@pytest.mark.parametrize(("section", "make", "kind"), [
    ("compute", make_compute, ComputeKind),
    ("forge", make_forge, ForgeKind),
    ("harness", make_harness, HarnessKind),
])
def test_a_factory_names_the_field_and_the_choices_when_a_kind_has_no_backend(
        tmp_path: Path, section: str, make: Any, kind: Any) -> None:
    settings = _bypassing_validation(load_settings(_home(tmp_path)), section, "pbs")
    with pytest.raises(ConfigError) as caught:
        make(settings)
    message = str(caught.value)
    assert f"[{section}] kind = 'pbs'" in message
    assert ", ".join(names(kind)) in message and "fix" in message


def test_the_sandbox_names_the_field_and_the_choices_when_a_kind_has_no_backend() -> None:
    from outerloop.config import SandboxSettings
    from outerloop.sandbox.resolve import available

    with pytest.raises(ConfigError) as caught:
        available(SandboxSettings().model_copy(update={"kind": "pbs"}))
    assert "[sandbox] kind = 'pbs'" in str(caught.value)
    assert ", ".join(names(SandboxKind)) in str(caught.value)
