"""Kernel file operations under a directory an agent can write, never following its links.

Kernel code runs outside the sandbox. Whenever it opens, appends, replaces, lists or
removes something inside a directory an agent (or a process it left behind) can write
— the session HOME, the workspace and its ``.outerloop/`` channel, the launch and eval
trees, a job's scratch HOME — a symlink planted on the way would turn that operation
into one on the kernel's own files (``keys/``, the ledger, ``outerloop.toml``). So
every such operation goes through this module:

- ``root`` is a directory the kernel made and whose parents the agent cannot write
  (``runs/<run>/ws``); it is opened once with ``O_NOFOLLOW | O_DIRECTORY``;
- ``rel`` is a relative path below it (no ``..``, not absolute, no empty part); every
  component is resolved with ``openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS |
  RESOLVE_NO_MAGICLINKS)`` (syscall 437 on x86_64 and aarch64), or, where the kernel
  lacks it (``ENOSYS``, or a seccomp filter's ``EPERM``), by a walk that opens each
  directory with ``O_NOFOLLOW | O_DIRECTORY`` relative to its parent's descriptor;
- the last component is then opened, created, renamed or removed relative to its
  directory's descriptor, with ``O_NOFOLLOW``, so a directory swapped for a symlink
  after a check is never followed: there is no check, only descriptors.

A symlink anywhere on the path raises ``SymlinkRefused`` (an ``OSError`` with
``errno`` ``ELOOP``, and an ``OuterloopError``) naming the path; anything but a
regular file where one is read or appended raises ``NotRegular``. A missing file is
the ordinary ``FileNotFoundError``. Nothing here follows a link, blocks on a FIFO or
reads more than asked.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import functools
import os
import platform
import secrets
import stat
from collections.abc import Callable, Iterator
from pathlib import Path, PurePosixPath
from typing import BinaryIO

from outerloop.errors import OuterloopError

SYS_OPENAT2 = {"x86_64": 437, "aarch64": 437}
RESOLVE_NO_MAGICLINKS = 0x02
RESOLVE_NO_SYMLINKS = 0x04
RESOLVE_BENEATH = 0x08
RESOLVE_FLAGS = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS
OPENAT2_RETRIES = 8
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC
READ_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
CHUNK_BYTES = 1024 * 1024


class AgentPathError(OuterloopError, OSError):
    """A path under an agent-writable directory the kernel will not use as it is."""

    def __init__(self, code: int, message: str) -> None:
        OSError.__init__(self, code, message)
        self.message = message

    def __str__(self) -> str:
        return self.message


class SymlinkRefused(AgentPathError):
    """A symlink (or ``..``, or an absolute path) on the way: never followed."""

    def __init__(self, where: str, why: str = "is a symlink") -> None:
        super().__init__(errno.ELOOP, f"{where} {why}; the kernel does not follow "
                                      f"symlinks under a directory the agent can write")


class NotRegular(AgentPathError):
    """A FIFO, device, socket, directory or hard-linked file where a file was wanted."""

    def __init__(self, where: str, what: str = "not a regular file") -> None:
        super().__init__(errno.EINVAL, f"{where} is {what}; the kernel reads and writes "
                                       f"only regular files there")


# ------------------------------------------------------------------- resolution


class _OpenHow(ctypes.Structure):
    _fields_ = [("flags", ctypes.c_uint64), ("mode", ctypes.c_uint64),
                ("resolve", ctypes.c_uint64)]


_state: dict[str, bool] = {}
"""``works``: True once openat2 answered here, False once it was found missing."""


@functools.cache
def _syscall() -> tuple[Callable[..., int], int] | None:
    """libc's ``syscall`` and openat2's number, or None where it cannot be used."""
    number = SYS_OPENAT2.get(platform.machine())
    if number is None:
        return None
    try:
        call = ctypes.CDLL(None, use_errno=True).syscall
    except (OSError, AttributeError):
        return None
    call.restype = ctypes.c_long
    return call, number


def openat2_available() -> bool:
    """True once openat2 has been seen to work here (False before the first use)."""
    return _syscall() is not None and _state.get("works") is True


def _openat2(dir_fd: int, rel: str, flags: int) -> int | None:
    """``openat2(dir_fd, rel, flags, RESOLVE_*)``; None when the kernel lacks it."""
    found = _syscall()
    if found is None or _state.get("works") is False:
        return None
    call, number = found
    how = _OpenHow(flags | os.O_CLOEXEC, 0, RESOLVE_FLAGS)
    raw = os.fsencode(rel)
    for _ in range(OPENAT2_RETRIES):
        fd = int(call(number, dir_fd, raw, ctypes.byref(how), ctypes.sizeof(how)))
        if fd >= 0:
            _state["works"] = True
            return fd
        code = ctypes.get_errno()
        if code == errno.EAGAIN:  # a concurrent rename somewhere: retry, as documented
            continue
        if code in (errno.ENOSYS, errno.EPERM) and _state.get("works") is not True:
            _state["works"] = False
            return None
        _state["works"] = True  # it answered: the kernel has it
        raise OSError(code, os.strerror(code), rel)
    raise OSError(errno.EAGAIN, os.strerror(errno.EAGAIN), rel)


def parts_of(rel: str | PurePosixPath) -> list[str]:
    """The components of ``rel``; ``SymlinkRefused`` for ``..``, absolute or empty."""
    text = str(rel)
    pure = PurePosixPath(text)
    if pure.is_absolute() or text.startswith("~"):
        raise SymlinkRefused(text, "is absolute")
    parts = [p for p in pure.parts if p != "."]
    if ".." in parts:
        raise SymlinkRefused(text, "climbs out with '..'")
    if not parts:
        raise SymlinkRefused(text or "''", "names no file")
    return parts


def _open_root(root: Path) -> int:
    try:
        return os.open(root, DIR_FLAGS | os.O_NOFOLLOW)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and root.is_symlink():
            raise SymlinkRefused(str(root)) from None
        raise


def _walk(root: Path, parts: list[str]) -> int:
    """A descriptor of the directory ``root/parts...`` reached without any symlink."""
    root_fd = _open_root(root)
    if not parts:
        return root_fd
    try:
        try:
            fd = _openat2(root_fd, "/".join(parts), DIR_FLAGS)
        except OSError as exc:
            where = str(root.joinpath(*parts))
            if exc.errno in (errno.ELOOP, errno.EXDEV, errno.ENOTDIR):
                os.close(_walk_by_hand(root_fd, root, parts))  # raises, naming the part
            if exc.errno in (errno.ELOOP, errno.EXDEV):  # the link was gone again
                raise SymlinkRefused(where, "had a symlink on the way") from None
            raise OSError(exc.errno, exc.strerror, where) from None
        if fd is not None:
            return fd
        return _walk_by_hand(root_fd, root, parts)
    finally:
        os.close(root_fd)


def _walk_by_hand(root_fd: int, root: Path, parts: list[str]) -> int:
    fd = os.dup(root_fd)
    for index, part in enumerate(parts):
        try:
            next_fd = os.open(part, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
        except OSError as exc:
            where = str(root.joinpath(*parts[:index + 1]))
            info = _lstat_at(fd, part)
            os.close(fd)
            if info is not None and stat.S_ISLNK(info.st_mode):
                raise SymlinkRefused(where) from None
            if info is not None and not stat.S_ISDIR(info.st_mode):
                raise NotRegular(where, "not a directory") from None
            raise OSError(exc.errno, exc.strerror, where) from None
        os.close(fd)
        fd = next_fd
    return fd


def _lstat_at(dir_fd: int, name: str) -> os.stat_result | None:
    try:
        return os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except OSError:
        return None


@contextlib.contextmanager
def directory(root: Path, rel: str | PurePosixPath = "") -> Iterator[int]:
    """A descriptor of ``root/rel`` (a directory), closed on exit."""
    fd = _walk(root, parts_of(rel) if str(rel) not in ("", ".") else [])
    try:
        yield fd
    finally:
        os.close(fd)


@contextlib.contextmanager
def _parent(root: Path, rel: str | PurePosixPath) -> Iterator[tuple[int, str, str]]:
    """``(dir_fd, last name, shown path)`` of ``root/rel``'s directory."""
    parts = parts_of(rel)
    fd = _walk(root, parts[:-1])
    try:
        yield fd, parts[-1], str(root.joinpath(*parts))
    finally:
        os.close(fd)


def _refuse_link(dir_fd: int, name: str, where: str, exc: OSError) -> None:
    """Turn the ``ELOOP`` of ``O_NOFOLLOW`` on a symlink into ``SymlinkRefused``."""
    if exc.errno == errno.ELOOP:
        raise SymlinkRefused(where) from None
    info = _lstat_at(dir_fd, name)
    if info is not None and stat.S_ISLNK(info.st_mode):
        raise SymlinkRefused(where) from None


# ------------------------------------------------------------------ operations


def lstat(root: Path, rel: str | PurePosixPath) -> os.stat_result | None:
    """What is at ``root/rel`` (a symlink is reported, not followed); None if nothing."""
    try:
        with _parent(root, rel) as (fd, name, _):
            return _lstat_at(fd, name)
    except FileNotFoundError:
        return None


def _open_regular(fd: int, name: str, where: str, flags: int, mode: int = 0o600, *,
                  links_ok: bool = False) -> int:
    try:
        handle = os.open(name, flags, mode, dir_fd=fd)
    except OSError as exc:
        _refuse_link(fd, name, where, exc)
        if exc.errno == errno.ENXIO:  # a FIFO with no reader, a socket
            raise NotRegular(where) from None
        raise OSError(exc.errno, exc.strerror, where) from None
    info = os.fstat(handle)
    if not stat.S_ISREG(info.st_mode) or (info.st_nlink > 1 and not links_ok):
        os.close(handle)
        raise NotRegular(where, "not a regular file" if not stat.S_ISREG(info.st_mode)
                         else "a file with other hard links")
    return handle


def read(root: Path, rel: str | PurePosixPath, limit: int) -> bytes:
    """At most ``limit + 1`` bytes of the regular file ``root/rel`` (one more than
    allowed, so the caller sees it is too big)."""
    with _parent(root, rel) as (fd, name, where):
        handle = _open_regular(fd, name, where, READ_FLAGS)
    with os.fdopen(handle, "rb") as stream:
        return stream.read(limit + 1)


def open_read(root: Path, rel: str | PurePosixPath, *, links_ok: bool = False) -> BinaryIO:
    """The regular file ``root/rel`` opened for reading (the caller closes it).
    ``links_ok`` accepts a file with other hard links (git's object store)."""
    with _parent(root, rel) as (fd, name, where):
        handle = _open_regular(fd, name, where, READ_FLAGS, links_ok=links_ok)
    return os.fdopen(handle, "rb")


def read_tail(root: Path, rel: str | PurePosixPath, limit: int) -> bytes:
    """The last ``limit`` bytes of the regular file ``root/rel`` (a 100 GB sparse file
    costs one seek)."""
    with _parent(root, rel) as (fd, name, where):
        handle = _open_regular(fd, name, where, READ_FLAGS)
    with os.fdopen(handle, "rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        stream.seek(max(0, size - limit))
        return stream.read(limit)


def append(root: Path, rel: str | PurePosixPath, data: bytes, mode: int = 0o600) -> None:
    """Append ``data`` to the regular file ``root/rel``, creating it (``mode``)."""
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | \
        os.O_CLOEXEC
    with _parent(root, rel) as (fd, name, where):
        handle = _open_regular(fd, name, where, flags, mode)
    with os.fdopen(handle, "ab") as stream:
        stream.write(data)


def write(root: Path, rel: str | PurePosixPath, data: bytes, mode: int = 0o644, *,
          clear: bool = False) -> None:
    """Replace ``root/rel`` with ``data`` atomically: a fresh temp file in the same
    directory descriptor, then a rename there. A symlink at ``rel`` is replaced, never
    followed; a directory there is removed first when ``clear`` (a kernel file the
    agent buried under a directory), else an error (``IsADirectoryError``)."""
    with _parent(root, rel) as (fd, name, where):
        tmp = f".{name}.{secrets.token_hex(6)}.tmp"
        handle = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW |
                         os.O_CLOEXEC, 0o600, dir_fd=fd)
        try:
            with os.fdopen(handle, "wb") as stream:
                stream.write(data)
                os.fchmod(stream.fileno(), mode)
            try:
                os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
            except OSError as exc:
                if not clear or exc.errno not in (errno.EISDIR, errno.ENOTEMPTY, errno.EEXIST):
                    raise
                _remove_at(fd, name)
                os.rename(tmp, name, src_dir_fd=fd, dst_dir_fd=fd)
        except OSError as exc:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise OSError(exc.errno, exc.strerror, where) from None
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=fd)
            raise


def makedirs(root: Path, rel: str | PurePosixPath, mode: int = 0o755, *,
             clear: bool = False) -> None:
    """Make ``root/rel`` and every directory on the way. Something else in the way (a
    symlink, a file) is removed when ``clear`` (the kernel's own directories, such as
    the channel's ``results/``), else refused."""
    parts = parts_of(rel)
    fd = _open_root(root)
    try:
        for index, part in enumerate(parts):
            where = str(root.joinpath(*parts[:index + 1]))
            with contextlib.suppress(FileExistsError):
                os.mkdir(part, mode, dir_fd=fd)
            try:
                next_fd = os.open(part, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError as exc:
                info = _lstat_at(fd, part)
                if info is None or stat.S_ISDIR(info.st_mode):
                    raise OSError(exc.errno, exc.strerror, where) from None
                if not clear:
                    if stat.S_ISLNK(info.st_mode):
                        raise SymlinkRefused(where) from None
                    raise NotRegular(where, "not a directory") from None
                os.unlink(part, dir_fd=fd)
                os.mkdir(part, mode, dir_fd=fd)
                next_fd = os.open(part, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            os.close(fd)
            fd = next_fd
    finally:
        os.close(fd)


def unlink(root: Path, rel: str | PurePosixPath) -> bool:
    """Remove the file or symlink ``root/rel`` (the link, never its target); True when
    something was removed. A directory there is left alone (``IsADirectoryError``)."""
    try:
        with _parent(root, rel) as (fd, name, _):
            os.unlink(name, dir_fd=fd)
    except FileNotFoundError:
        return False
    return True


def remove(root: Path, rel: str | PurePosixPath) -> bool:
    """Remove whatever is at ``root/rel``: a file or symlink is unlinked, a directory
    removed with everything in it, descending only through descriptors (no link inside
    is followed; read-only directories are made writable first). True when something
    was removed."""
    try:
        with _parent(root, rel) as (fd, name, _):
            return _remove_at(fd, name)
    except FileNotFoundError:
        return False


def _remove_at(dir_fd: int, name: str) -> bool:
    info = _lstat_at(dir_fd, name)
    if info is None:
        return False
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(name, dir_fd=dir_fd)
        return True
    sub = _open_dir_owned(dir_fd, name, info)
    try:
        for entry in os.listdir(sub):
            _remove_at(sub, entry)
    finally:
        os.close(sub)
    os.rmdir(name, dir_fd=dir_fd)
    return True


def _open_dir_owned(dir_fd: int, name: str, info: os.stat_result) -> int:
    """The directory ``name`` (the one ``info`` describes) opened for listing and
    removing, its owner bits set to rwx first when they are not (a read-only tree)."""
    path_fd = os.open(name, os.O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                      dir_fd=dir_fd)
    try:
        here = os.fstat(path_fd)
        if (here.st_dev, here.st_ino) != (info.st_dev, info.st_ino):
            raise SymlinkRefused(name, "changed while it was being removed")
        if stat.S_IMODE(here.st_mode) & stat.S_IRWXU != stat.S_IRWXU:
            os.chmod(f"/proc/self/fd/{path_fd}", stat.S_IMODE(here.st_mode) | stat.S_IRWXU)
        return os.open(f"/proc/self/fd/{path_fd}", DIR_FLAGS)
    finally:
        os.close(path_fd)


def listdir(root: Path, rel: str | PurePosixPath = "") -> list[str]:
    """The names in the directory ``root/rel``."""
    with directory(root, rel) as fd:
        return os.listdir(fd)


def chmod(root: Path, rel: str | PurePosixPath, mode: int) -> None:
    """Set the mode of the file or directory ``root/rel`` (a symlink is refused)."""
    with _parent(root, rel) as (fd, name, where):
        try:
            handle = os.open(name, os.O_PATH | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except OSError as exc:
            raise OSError(exc.errno, exc.strerror, where) from None
    try:
        if stat.S_ISLNK(os.fstat(handle).st_mode):
            raise SymlinkRefused(where)
        os.chmod(f"/proc/self/fd/{handle}", mode)
    finally:
        os.close(handle)


def walk_files(root: Path, rel: str | PurePosixPath = "") -> Iterator[tuple[str, os.stat_result]]:
    """Every entry under ``root/rel``, depth first, as ``(path relative to root,
    lstat)``; directories are entered through descriptors, symlinks reported and never
    entered."""
    base = parts_of(rel) if str(rel) not in ("", ".") else []
    with directory(root, "/".join(base)) as fd:
        yield from _walk_fd(fd, "/".join(base))


def _walk_fd(fd: int, prefix: str) -> Iterator[tuple[str, os.stat_result]]:
    for name in sorted(os.listdir(fd)):
        info = _lstat_at(fd, name)
        if info is None:
            continue
        path = f"{prefix}/{name}" if prefix else name
        yield path, info
        if stat.S_ISDIR(info.st_mode):
            try:
                sub = os.open(name, DIR_FLAGS | os.O_NOFOLLOW, dir_fd=fd)
            except OSError:
                continue
            try:
                yield from _walk_fd(sub, path)
            finally:
                os.close(sub)
