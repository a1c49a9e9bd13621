"""``[sandbox] child_user``: its shape is checked when settings load, the user itself
where children start (``sandbox/uid.py``); each refusal names the field and the fix."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from outerloop.config import SandboxSettings
from outerloop.errors import ConfigError
from outerloop.sandbox.base import SandboxError
from outerloop.sandbox.uid import DEFAULT_ID, child_ids
from tests.support import make_home


@pytest.mark.parametrize("value", [0, "0", -5, "4294967295", "Bad Name", "a;b"])
def test_child_user_is_refused_when_it_is_root_or_not_a_user(value: object,
                                                             tmp_path: Path) -> None:
    home = make_home(tmp_path).home
    (home / "outerloop.toml").write_text((home / "outerloop.toml").read_text()
                                         + f"\n[sandbox]\nchild_user = {value!r}\n"
                                         .replace("'", '"'))
    from outerloop.config import load_settings

    with pytest.raises(ConfigError, match="child_user"):
        load_settings(home)


def test_child_user_keeps_a_number_and_a_name_when_they_are_well_formed() -> None:
    assert SandboxSettings(child_user="65534").child_user == 65534
    assert SandboxSettings(child_user=1234).child_user == 1234
    assert SandboxSettings(child_user="nobody").child_user == "nobody"


@pytest.mark.skipif(os.geteuid() != 0, reason="the switch applies only to a root kernel")
def test_child_ids_name_the_field_and_the_fix_when_the_user_is_root_or_unknown(
        tmp_path: Path) -> None:
    assert child_ids(None) == (DEFAULT_ID, DEFAULT_ID)
    assert child_ids(4242) == (4242, 4242)  # a uid of its own, no passwd entry
    with pytest.raises(SandboxError, match=r"\[sandbox\] child_user = 'root' is root"):
        child_ids("root")
    with pytest.raises(SandboxError, match=r"no such user.*fix:"):
        child_ids("no-such-user-here")
    home = tmp_path / "home"
    home.mkdir()
    os.chown(home, 4242, 4242)
    with pytest.raises(SandboxError, match="owns the home"):
        child_ids(4242, home)
