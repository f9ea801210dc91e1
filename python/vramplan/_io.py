"""Every file the Python side reads goes through here: the type is checked before opening (a
FIFO, device or directory is refused by name, so nothing blocks), the size is capped before
reading, standard input is bounded in bytes and time, and output files are written atomically,
as regular files only (atomic_output).
Errors are `vramplan.Error`s naming the file."""

from __future__ import annotations

import contextlib
import json
import math
import os
import select
import stat
import sys
import tempfile
import time
from collections import deque
from collections.abc import Iterator
from pathlib import Path
from typing import Any, BinaryIO

from . import _core

# Standard input that has not ended after this long is refused (`- </dev/tty` left open, or a
# producer that never stops).
STDIN_SECONDS = 60.0
# ... or that has streamed this much without ending (`- </dev/zero`); the C++ log reader stops
# at the same size.
STDIN_MAX_STREAM_BYTES = 1 << 30
_CHUNK_BYTES = 1 << 20
# Logs are read as head (launch settings) and tail (the failure, the last launch's figures).
LOG_MAX_BYTES = 64 << 20
LOG_HEAD_BYTES = 4 << 20


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode):
        return "a character device"
    if stat.S_ISBLK(mode):
        return "a block device"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "not a regular file"


def _refuse(path: str | Path, what: str, problem: str) -> _core.ConfigError:
    return _core.ConfigError(f"{path}: cannot read the {what} ({problem})")


@contextlib.contextmanager
def open_regular(path: str | Path, *, what: str, max_bytes: int) -> Iterator[tuple[BinaryIO, int]]:
    """(binary handle, size) of a regular file no larger than `max_bytes`. The type is checked
    before opening and again on the open descriptor (O_NONBLOCK: a FIFO swapped in between
    cannot block the open)."""
    try:
        info = Path(path).stat()
    except (OSError, ValueError) as err:
        raise _refuse(path, what, getattr(err, "strerror", None) or str(err)) from err
    if not stat.S_ISREG(info.st_mode):
        raise _refuse(path, what, f"it is {_kind(info.st_mode)}, not a regular file")
    if info.st_size > max_bytes:
        raise _refuse(path, what, f"{info.st_size} bytes, over the {max_bytes}-byte limit")
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as err:
        raise _refuse(path, what, err.strerror or str(err)) from err
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _refuse(path, what, f"it is {_kind(info.st_mode)}, not a regular file")
        handle = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with handle:
        yield handle, info.st_size


def read_bytes(path: str | Path, *, what: str, max_bytes: int) -> bytes:
    """The whole of a regular file of at most `max_bytes` (a file that grew meanwhile too)."""
    with open_regular(path, what=what, max_bytes=max_bytes) as (handle, _):
        data = handle.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise _refuse(path, what, f"over the {max_bytes}-byte limit")
    return data


def decode(data: bytes, source: str | Path, what: str) -> str:
    """UTF-8 text, or a ParseError naming the file and the offset of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        msg = (
            f"{source}: the {what} is not valid UTF-8 (byte 0x{data[err.start]:02x} at offset "
            f"{err.start})"
        )
        raise _core.ParseError(msg) from None


def read_text(path: str | Path, *, what: str, max_bytes: int) -> str:
    return decode(read_bytes(path, what=what, max_bytes=max_bytes), path, what)


def read_head_tail(path: str | Path, *, what: str, head_bytes: int, max_bytes: int) -> bytes:
    """At most `max_bytes` of a regular file of any size: its first `head_bytes` and its last
    `max_bytes - head_bytes` (a newline between), read by seeking, never the middle."""
    with open_regular(path, what=what, max_bytes=sys.maxsize) as (handle, size):
        if size <= max_bytes:
            return handle.read(max_bytes)
        head = handle.read(head_bytes)
        handle.seek(size - (max_bytes - head_bytes))
        return head + b"\n" + handle.read(max_bytes - head_bytes)


def read_stdin_head_tail(*, what: str, head_bytes: int, max_bytes: int) -> bytes:
    """Head and tail of standard input, at most `max_bytes` kept; refused when it has not ended
    after STDIN_SECONDS or STDIN_MAX_STREAM_BYTES (so `- </dev/zero` or an open terminal
    returns with a named error)."""
    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:  # replaced by a text stream (tests, notebooks): read what it holds
        return sys.stdin.read(max_bytes).encode()
    return read_stream_head_tail(
        stream, what, head_bytes, max_bytes, STDIN_SECONDS, STDIN_MAX_STREAM_BYTES
    )


def read_stream_head_tail(
    stream: BinaryIO,
    what: str,
    head_bytes: int,
    max_bytes: int,
    seconds: float,
    max_stream_bytes: int,
) -> bytes:
    """Head and tail of a stream (see read_stdin_head_tail), bounded in time and bytes."""
    deadline = time.monotonic() + seconds
    streamed = 0
    try:
        fd: int | None = stream.fileno()
    except (OSError, ValueError):
        fd = None
    head = b""
    tail: deque[bytes] = deque()
    tail_bytes = 0
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            msg = f"standard input: the {what} did not end within {seconds:g} s"
            raise _core.ConfigError(msg)
        if fd is not None:
            ready, _, _ = select.select([fd], [], [], min(left, 1.0))
            if not ready:
                continue
            chunk = os.read(fd, _CHUNK_BYTES)
        else:
            chunk = stream.read(_CHUNK_BYTES)
        if not chunk:
            break
        streamed += len(chunk)
        if streamed > max_stream_bytes:
            msg = (
                f"standard input: the {what} streamed over {max_stream_bytes} bytes without ending"
            )
            raise _core.ConfigError(msg)
        if len(head) < head_bytes:
            take = head_bytes - len(head)
            head += chunk[:take]
            chunk = chunk[take:]
            if not chunk:
                continue
        tail.append(chunk)
        tail_bytes += len(chunk)
        while tail_bytes - len(tail[0]) >= max_bytes - head_bytes:
            tail_bytes -= len(tail.popleft())
    body = b"".join(tail)
    if len(body) > max_bytes - head_bytes:
        body = b"\n" + body[-(max_bytes - head_bytes) :]
    return head + body


def read_lines(
    path: str | Path, *, what: str, max_bytes: int, max_line_bytes: int
) -> Iterator[tuple[int, str]]:
    """(line number, text) of a UTF-8 line-oriented file, streamed: no line longer than
    `max_line_bytes`, no file larger than `max_bytes`."""
    with open_regular(path, what=what, max_bytes=max_bytes) as (handle, _):
        number = 0
        while True:
            raw = handle.readline(max_line_bytes + 1)
            if not raw:
                return
            number += 1
            if len(raw) > max_line_bytes:
                msg = f"{path}:{number}: a line of the {what} is over {max_line_bytes} bytes"
                raise _core.ParseError(msg)
            yield number, decode(raw, f"{path}:{number}", what)


def _umask() -> int:
    """The process's umask, read without changing it where /proc says it."""
    with contextlib.suppress(OSError, ValueError):
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _cannot_write(target: Path, what: str, problem: str) -> _core.ConfigError:
    return _core.ConfigError(f"{target}: cannot write the {what} ({problem})")


def _replaced_mode(target: Path, what: str) -> int:
    """The permission bits the written file gets: those of the regular file it replaces, else
    what the umask leaves of 0666. Anything else at `target` is refused, before anything is
    written: a symbolic link (it is not followed), a FIFO (writing would block), a device
    (renaming onto /dev/null would replace the node), a directory."""
    try:
        info = os.lstat(target)
    except FileNotFoundError:
        return 0o666 & ~_umask()
    except (OSError, ValueError) as err:
        raise _cannot_write(target, what, getattr(err, "strerror", None) or str(err)) from err
    if stat.S_ISLNK(info.st_mode):
        problem = "it is a symbolic link, which is not followed: give the path it points to"
        raise _cannot_write(target, what, problem)
    if not stat.S_ISREG(info.st_mode):
        raise _cannot_write(target, what, f"it is {_kind(info.st_mode)}, not a regular file")
    return stat.S_IMODE(info.st_mode)


@contextlib.contextmanager
def atomic_output(path: str | Path, *, what: str) -> Iterator[Path]:
    """A temporary path beside `path` to write; when the block ends normally it is synced to
    disk and renamed onto `path`, otherwise removed (Ctrl-C, a full disk, an error): the file
    at `path` is either the old one, intact, or the whole new one. Every file vramplan writes
    goes through here; see _replaced_mode for what is refused."""
    target = Path(path)
    mode = _replaced_mode(target, what)
    try:
        fd, name = tempfile.mkstemp(
            prefix=f".{target.name}.", suffix=".tmp", dir=target.parent or Path()
        )
    except OSError as err:
        raise _cannot_write(target, what, err.strerror or str(err)) from err
    os.close(fd)
    temporary = Path(name)
    try:
        yield temporary
        with open_regular(temporary, what=what, max_bytes=sys.maxsize) as (handle, _):
            os.fsync(handle.fileno())
        temporary.chmod(mode)
        _replaced_mode(target, what)  # still nothing but a regular file there
        temporary.replace(target)
    except OSError as err:
        raise _cannot_write(target, what, err.strerror or str(err)) from err
    finally:
        with contextlib.suppress(OSError):
            temporary.unlink()


def write_text_atomic(path: str | Path, text: str, *, what: str) -> None:
    with atomic_output(path, what=what) as temporary:
        temporary.write_text(text, encoding="utf-8")


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise ValueError(f"duplicate key {key!r}")
        out[key] = value
    return out


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"number {text} does not fit a double")
    return value


def _no_constant(text: str) -> float:
    raise ValueError(f"non-finite number {text}")


def loads_json(text: str, source: str) -> Any:
    """JSON with no duplicate keys and no non-finite numbers (NaN, Infinity, 1e400); a
    ParseError naming `source` otherwise, for nesting too deep as well."""
    try:
        return json.loads(
            text,
            object_pairs_hook=_no_duplicates,
            parse_float=_finite,
            parse_constant=_no_constant,
        )
    except json.JSONDecodeError as err:
        msg = f"{source}: not JSON ({err.msg} at column {err.colno})"
        raise _core.ParseError(msg) from None
    except RecursionError:
        msg = f"{source}: JSON nested too deep"
        raise _core.ParseError(msg) from None
    except ValueError as err:
        msg = f"{source}: {err}"
        raise _core.ParseError(msg) from None
