"""The packaged spec database, loaded once per process, and the core-shaped ConfigError: the
layer below model resolution and the public API, so that both can use it."""

from __future__ import annotations

import functools

from . import _core
from ._resources import model_specs_dir


@functools.lru_cache(maxsize=1)
def spec_database() -> _core.SpecDatabase:
    """The packaged database, loaded once per process."""
    return _core.SpecDatabase.load_directory(str(model_specs_dir()))


def config_error(field: str, value: object, allowed: str, problem: str) -> _core.ConfigError:
    """A ConfigError worded and shaped as the core's (`.field`, `.value`, `.allowed`)."""
    err = _core.ConfigError(f"{field}: {problem} (got {value!r}; allowed: {allowed})")
    err.field, err.value, err.allowed = field, repr(value), allowed
    return err
