"""``[sandbox]``: the sandbox in force, proved by a confined child
(``outerloop.sandbox.proof``), and a warning when a bwrap child could reach the host's
abstract unix sockets (bwrap shares the network namespace, which holds them)."""

from __future__ import annotations

from outerloop.config import Settings
from outerloop.doctor.base import Check, fail, ok, warn

MAX_LISTED = 5


def check_sandbox(settings: Settings) -> list[Check]:
    from outerloop.sandbox.confine import for_run
    from outerloop.sandbox.proof import abstract_listeners, prove

    proof = prove(settings)
    checks = [ok("sandbox", proof.detail) if proof.ok
              else fail("sandbox", proof.detail, proof.hint), _links(settings),
              *_child_user(settings)]
    if proof.ok and for_run(settings).kind == "bwrap" and (found := abstract_listeners()):
        listed = ", ".join(found[:MAX_LISTED]) + (" ..." if len(found) > MAX_LISTED else "")
        checks.append(warn("sandbox abstract sockets",
                           f"bwrap children can connect to {len(found)} abstract unix "
                           f"socket(s) of this host: {listed}",
                           "set [sandbox] kind = \"landlock\" (it scopes abstract sockets "
                           "to the sandbox), or stop the service listening there"))
    return checks


def _child_user(settings: Settings) -> list[Check]:
    """Which uid confined children get, and each declared ``read_write`` path that
    user cannot write (a root kernel's children are ``[sandbox] child_user``, and
    the operator's paths are not handed to it: ``sandbox/handover.py``)."""
    from outerloop.sandbox.base import SandboxError
    from outerloop.sandbox.uid import child_ids, describe

    try:
        ids = child_ids(settings.sandbox.child_user, settings.home)
    except SandboxError as exc:
        return [fail("sandbox user", str(exc), "see docs/security.md, \"Root\"")]
    checks = [ok("sandbox user", f"confined children run as {describe(ids)}")]
    if ids is None:
        return checks
    for path in settings.sandbox.read_write:
        if not _writable_by(path, ids):
            checks.append(warn("sandbox user", f"[sandbox] read_write {path} is not "
                               f"writable by the children's uid {ids[0]}",
                               f"chown -R {ids[0]}:{ids[1]} {path} (or open it to that "
                               f"user's group), or remove it from read_write"))
    return checks


def _writable_by(path: str, ids: tuple[int, int]) -> bool:
    import os

    try:
        info = os.stat(path)
    except OSError:
        return False
    if info.st_uid == ids[0]:
        return bool(info.st_mode & 0o300 == 0o300)
    if info.st_gid == ids[1]:
        return bool(info.st_mode & 0o030 == 0o030)
    return bool(info.st_mode & 0o003 == 0o003)


def _links(settings: Settings) -> Check:
    """Kernel file operations under agent-writable dirs refuse planted symlinks."""
    from outerloop.sandbox.proof_links import prove_no_follow

    proof = prove_no_follow(settings)
    return ok("agent links", proof.detail) if proof.ok else fail("agent links", proof.detail,
                                                                 proof.hint)
