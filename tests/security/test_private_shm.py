"""Nothing a sandboxed child leaves in ``/dev/shm`` outlives it or reaches another
child: each gets a tmpfs of its own, on every backend, as root and as an unprivileged
user (a stash a session or a launch writes that a later eval would read)."""

from __future__ import annotations

import os
import subprocess
import uuid

import pytest

from outerloop.sandbox import Grants
from tests.security.fixtures import as_user, backend, chown, fixture, skip_reason

pytestmark = pytest.mark.security

READ_ONLY = ("/usr", "/bin", "/lib", "/lib64", "/etc", "/proc")


@pytest.mark.parametrize("uid", [None, 65534], ids=["root", "nobody"])
@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_a_stash_in_dev_shm_never_outlives_the_child_that_wrote_it(
        kind: str, uid: int | None) -> None:
    reason = skip_reason(kind, uid)
    if reason:
        pytest.skip(reason)
    stash = f"outerloop-stash-{uuid.uuid4().hex[:8]}"
    with fixture(uid) as fx:
        chown(fx)
        sandbox = backend(kind, fx)
        grants = Grants(read_only=READ_ONLY, read_write=(str(fx.ws),),
                        devices=("/dev/null", "/dev/shm"))
        write = sandbox.wrap(["bash", "-c", f"echo payload > /dev/shm/{stash} && "
                              f"cat /dev/shm/{stash}"], grants)
        wrote = subprocess.run(as_user(uid) + write, capture_output=True, text=True,
                               timeout=60)
        assert wrote.returncode == 0 and wrote.stdout == "payload\n", wrote.stderr
        assert not os.path.exists(f"/dev/shm/{stash}")
        read = sandbox.wrap(["bash", "-c", f"cat /dev/shm/{stash}"], grants)
        again = subprocess.run(as_user(uid) + read, capture_output=True, text=True,
                               timeout=60)
        assert again.returncode != 0 and "payload" not in again.stdout


@pytest.mark.parametrize("kind", ["landlock", "bwrap"])
def test_a_stash_left_in_the_hosts_dev_shm_is_not_seen_by_a_child(kind: str) -> None:
    reason = skip_reason(kind, None)
    if reason:
        pytest.skip(reason)
    stash = f"/dev/shm/outerloop-host-{uuid.uuid4().hex[:8]}"
    with open(stash, "w") as handle:
        handle.write("payload\n")
    try:
        with fixture(None) as fx:
            grants = Grants(read_only=READ_ONLY, read_write=(str(fx.ws),),
                            devices=("/dev/null", "/dev/shm"))
            argv = backend(kind, fx).wrap(["bash", "-c", f"cat {stash}"], grants)
            seen = subprocess.run(argv, capture_output=True, text=True, timeout=60)
            assert "payload" not in seen.stdout
    finally:
        os.unlink(stash)
