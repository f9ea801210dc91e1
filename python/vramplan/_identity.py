"""What a value from a caller stands for: the files a model path names (a cache keyed by the
name keys on their identity too, so files changed between two calls are read again), and the
Python value of a numpy scalar."""

from __future__ import annotations

import os
import stat
from pathlib import Path

# A checkpoint folder holds a few dozen files; past this many entries the rest are not
# looked at (the folder's own mtime still changes when files are added or removed).
_MAX_ENTRIES = 4096


def local_path(model: str | Path) -> Path:
    """The path a model name denotes: `~` expanded only where the name starts with it, as a
    shell does (`./~/m` is the folder `~` in the working directory)."""
    if isinstance(model, str) and model.startswith("~"):
        return Path(model).expanduser()
    return Path(model)


def _stamp(info: os.stat_result) -> tuple[int, ...]:
    return (info.st_dev, info.st_ino, info.st_size, info.st_mtime_ns, info.st_ctime_ns)


def path_identity(model: object) -> tuple[object, ...]:
    """(device, inode, size, mtime, ctime) of the file a model name denotes and, for a
    folder, of each of its entries (links followed: a Hugging Face snapshot's files are links
    to blobs); () for a name that is not on disk."""
    if not isinstance(model, (str, Path)):
        return ()
    if isinstance(model, str) and model and not model.startswith("~"):
        # A database id or Hub name is no file: access(2) says so without a Path and without
        # the FileNotFoundError a stat raises (a plan asks on every call; the exception cost
        # more than the rest of the plan's Python). Not found as written is not found after
        # Path's normalisation either.
        try:
            if not os.access(model, os.F_OK):
                return ()
        except ValueError:  # a NUL in the name: the stat below says it is no file
            pass
    path = local_path(model)
    try:
        info = path.stat()
    except (OSError, ValueError):
        return ()
    parts: list[object] = [_stamp(info)]
    if stat.S_ISDIR(info.st_mode):
        try:
            with os.scandir(path) as entries:
                names = []
                for count, entry in enumerate(entries):
                    if count >= _MAX_ENTRIES:
                        break
                    try:
                        names.append((entry.name, _stamp(entry.stat())))
                    except OSError:
                        names.append((entry.name, ()))
        except OSError:
            return tuple(parts)
        parts.extend(sorted(names))
    return tuple(parts)


def plain_scalar(value: object) -> object:
    """A numpy scalar (np.int64, np.float32, np.bool_, a 0-d array) as the Python number or
    bool it holds; anything else as it is. numpy is not imported: its scalars are recognised
    by their module and `item()`."""
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        item = getattr(value, "item", None)
        if callable(item):
            return item()
    return value
