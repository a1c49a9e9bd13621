"""Create and describe a home (``outerloop init``)."""

from __future__ import annotations

import os
from pathlib import Path

from outerloop import score_seed
from outerloop.config import CONFIG_FILE, Settings, load_settings
from outerloop.errors import ConfigError
from outerloop.ledger import book
from outerloop.private_files import check_home_permissions

HOME_DIRS = ("keys", "runs", "board", "cache")
SETTINGS_REFERENCE = "`outerloop help settings` lists every setting"
JUDGE_FILE = "judges/checks-passed.yaml"
"""Where ``init`` writes the scripted judge of a scripted home (relative to the home,
as ``[review] script`` names it)."""
JUDGE_TEMPLATE = "judge-checks-passed.yaml"


def _toml_value(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value).replace("\\", "\\\\").replace('"', '\\"')
    return f'"{text}"'


def render_config(forge: str, compute: str, harness: str, targets: list[str],
                  script: str | None = None, login: str = "outerloop",
                  judge_script: str | None = None) -> str:
    lines = [
        "# outerloop operator settings. Precedence: flag > OUTERLOOP_* env > this file > default.",
        f"# Reference: {SETTINGS_REFERENCE}",
        "",
        "[forge]",
        f"kind = {_toml_value(forge)}",
        f"login = {_toml_value(login)}",
        "",
        "[compute]",
        f"kind = {_toml_value(compute)}",
        "",
        "[harness]",
        f"kind = {_toml_value(harness)}",
    ]
    if script:
        lines.append(f"script = {_toml_value(script)}")
    lines += ["", *review_section(harness, judge_script)]
    lines += ["", "[cadence]", "tick_minutes = 10", "", "[limits]",
              "max_new_runs_per_tick = 1", ""]
    for repo in targets:
        lines += ["[[targets]]", f"repo = {_toml_value(repo)}", ""]
    return "\n".join(lines)


def review_section(harness: str, judge_script: str | None) -> list[str]:
    """The ``[review]`` ``init`` writes: a panel that can give a verdict on any target.

    A scripted home gets a scripted judge (``judge_script``, else the one ``init``
    writes at ``JUDGE_FILE``: it approves what the deterministic checks passed and says
    in the PR that no model read the change); a model harness's judges run that same
    harness, so nothing more is needed than the section itself. Why not "no panel":
    a panel that stays silent makes every PR a draft (silence is not endorsement), and
    the recipe in the README must reach a ready PR (docs/architecture.md)."""
    if judge_script or harness == "scripted":
        script = judge_script or JUDGE_FILE
        said = "" if judge_script else " (its finding says so in each PR)"
        return [f"# The review panel. This judge is scripted: no model reads the "
                f"change{said}.",
                "# For a model judge: kind = \"claude\" or \"codex\" (the [harness] kind).",
                "[review]", "judges = 1", 'kind = "scripted"',
                f"script = {_toml_value(script)}"]
    return ["# The review panel: each credited candidate is read by a judge session of the",
            "# [harness] kind before its PR is ready.", "[review]", "judges = 1"]


def write_judge(home: Path) -> Path:
    """The scripted judge ``init`` configures for a scripted home, at ``JUDGE_FILE``."""
    from importlib.resources import files

    path = home / JUDGE_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    text = files("outerloop").joinpath("templates", JUDGE_TEMPLATE).read_text(
        encoding="utf-8")
    path.write_text(text, encoding="utf-8")
    return path


def init_home(home: Path, *, forge: str, compute: str, harness: str, targets: list[str],
              script: str | None = None, judge_script: str | None = None) -> Settings:
    """Create the home (0700), its config, ``keys/`` (0700) with the ledger's
    attestation key, and the ledger repository.

    Refuses to overwrite an existing ``outerloop.toml``: the operator edits it. The
    settings are validated before anything is written, so a bad value leaves no half
    home behind to block the corrected command. A relative ``script`` is made absolute
    against the current directory (where the operator typed it), not the home."""
    config = home / CONFIG_FILE
    if config.exists():
        raise ConfigError(f"{config} already exists; fix: edit it, or choose another --home")
    if script:
        script = str(Path(script).expanduser().absolute())
    if judge_script:
        judge_script = str(Path(judge_script).expanduser().absolute())
    text = render_config(forge, compute, harness, targets, script, judge_script=judge_script)
    validate_config_text(text, home)
    home.mkdir(parents=True, exist_ok=True, mode=0o700)
    check_home_permissions(home)
    for name in HOME_DIRS:
        (home / name).mkdir(exist_ok=True, mode=0o700)
    os.chmod(home / "keys", 0o700)
    tmp = config.with_suffix(".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, config)
    if harness == "scripted" and not judge_script:
        write_judge(home)
    book.init_repo(home)  # the ledger's repository and its attestation key
    score_seed.ensure_key(home)  # the scorers' own seeds (score_seed.py)
    return load_settings(home)


def validate_config_text(text: str, home: Path) -> None:
    """Raise ``ConfigError`` naming the setting when ``text`` would not load."""
    import tomllib

    from pydantic import ValidationError

    try:
        Settings.model_validate({**tomllib.loads(text), "home": home})
    except ValidationError as exc:
        problems = "; ".join(f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}"
                             for e in exc.errors())
        raise ConfigError(f"invalid settings, nothing written: {problems}; fix the "
                          f"option and run `outerloop init` again") from None
