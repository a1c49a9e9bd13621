"""Each backend, as root and as an unprivileged user: a child cannot reach the home.

Positive controls in the same run (workspace writes, TMPDIR, python, git, node, TCP)
show the denials come from confinement, not from a broken child; the negative control
(the same probe with the sandbox off) must report the leaks, so the probe can see one.
"""

from __future__ import annotations

import pytest

from tests.security.fixtures import UNPRIVILEGED_UID, fixture, run_probe, skip_reason

pytestmark = pytest.mark.security

USERS = {"root": None, "unprivileged": UNPRIVILEGED_UID}
NEGATIVE_CONTROL_LEAKS = ("read_key", "read_ledger_key", "append_heads", "walk_up_to_key",
                          "read_key_via_symlink", "list_home", "append_ledger", "create_key",
                          "write_cache", "write_forge",
                          "write_other_run", "write_kernel_clone", "forge_job_exit_code",
                          "read_other_environ", "signal_outside")


@pytest.mark.parametrize("user", sorted(USERS))
@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_child_cannot_read_keys_or_write_home_when_sandboxed(kind: str, user: str) -> None:
    uid = USERS[user]
    reason = skip_reason(kind, uid)
    if reason:
        pytest.skip(f"{kind} cannot run here: {reason}")
    with fixture(uid) as fx:
        before = fx.snapshot()
        found = run_probe(kind, fx)
        leaked = {k: v for k, v in found["leaks"].items() if v == "ok"}
        broken = {k: v for k, v in found["controls"].items() if v != "ok"}
        assert leaked == {}, f"{kind} as {user} leaked: {leaked}"
        assert broken == {}, f"{kind} as {user} broke normal work: {broken}"
        assert fx.snapshot() == before


@pytest.mark.parametrize("user", sorted(USERS))
def test_probe_reports_every_leak_when_sandbox_is_off(user: str) -> None:
    uid = USERS[user]
    reason = skip_reason("off", uid)
    if reason:
        pytest.skip(reason)
    with fixture(uid) as fx:
        found = run_probe("off", fx)
        missed = {k: found["leaks"][k] for k in NEGATIVE_CONTROL_LEAKS
                  if found["leaks"][k] != "ok"}
        assert missed == {}, f"the unconfined probe could not do {missed}: it cannot see leaks"
        assert (fx.home / "keys" / "planted").exists()
