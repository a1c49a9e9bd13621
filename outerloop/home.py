"""Create and describe a home (``outerloop init``)."""

from __future__ import annotations

import os
from pathlib import Path

from outerloop.config import CONFIG_FILE, Settings, check_home_permissions, load_settings
from outerloop.errors import ConfigError
from outerloop.ledger import gitrepo

HOME_DIRS = ("keys", "runs", "board", "cache")
SETTINGS_REFERENCE = "`outerloop help settings` lists every setting"


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
    if judge_script:
        lines += ["", "[review]", 'kind = "scripted"', f"script = {_toml_value(judge_script)}"]
    lines += ["", "[cadence]", "tick_minutes = 10", "", "[limits]",
              "max_new_runs_per_tick = 1", ""]
    for repo in targets:
        lines += ["[[targets]]", f"repo = {_toml_value(repo)}", ""]
    return "\n".join(lines)


def init_home(home: Path, *, forge: str, compute: str, harness: str, targets: list[str],
              script: str | None = None, judge_script: str | None = None) -> Settings:
    """Create the home (0700), its config, ``keys/`` (0700) and the ledger repository.

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
    gitrepo.init_repo(home)
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
