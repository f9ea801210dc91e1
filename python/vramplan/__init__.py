"""vramplan: what vLLM's startup profiling will find, per GPU rank and on the host, before launch."""

from __future__ import annotations

try:
    from . import _core  # noqa: F401 - fail early with a hint when the core is missing
except ImportError as err:  # pragma: no cover - only without a build
    msg = f"{err}: vramplan's C++ core is not built: run ./scripts/setup.sh (or `pip install .`)"
    raise ImportError(msg) from err

import sys
import types
from typing import TYPE_CHECKING, Any

from ._core import ConfigError, Error, ParseError, SpecError
from .api import (
    DEFAULT_GPU,
    DEFAULT_MODEL,
    KNOBS,
    MAX_SWEEP_POINTS,
    Breakdown,
    Plan,
    breakdown,
    from_hf_config,
    gpus,
    inspect_checkpoint,
    load_gpu,
    load_model,
    models,
    parse_log,
    parse_vllm_log,
    plan,
    schema_markdown,
    spec_database,
    sweep,
)

# The rest on first use (module __getattr__ below): `import vramplan` loads no pandas, numpy,
# matplotlib, rich or huggingface_hub, nor the modules of the commands not run.
_LAZY = {
    "Profile": "calibrate",
    "calibrate": "calibrate",
    "Colocation": "colocate",
    "Instance": "colocate",
    "colocate": "colocate",
    "diagnose": "diagnose",
    "explain": "explain",
    "fit": "fit",
    "fit_models": "fit",
    "plot_fit": "plots",
    "plot_frontier": "plots",
    "auto_gpu": "probe",
}

if TYPE_CHECKING:
    from .calibrate import Profile, calibrate
    from .colocate import Colocation, Instance, colocate
    from .diagnose import diagnose
    from .explain import explain
    from .fit import fit, fit_models
    from .plots import plot_fit, plot_frontier
    from .probe import auto_gpu


class _Package(types.ModuleType):
    """The package: importing a submodule named as one of the package's functions
    (`vramplan.fit`) sets the package's attribute to that submodule; the function stays the
    public name, as when it was imported eagerly."""

    def __setattr__(self, name: str, value: Any) -> None:
        if isinstance(value, types.ModuleType) and _LAZY.get(name) == name:
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package

__version__ = "0.1.0"

__all__ = [
    "DEFAULT_GPU",
    "DEFAULT_MODEL",
    "KNOBS",
    "MAX_SWEEP_POINTS",
    "Breakdown",
    "Colocation",
    "ConfigError",
    "Error",
    "Instance",
    "ParseError",
    "Plan",
    "Profile",
    "SpecError",
    "__version__",
    "auto_gpu",
    "breakdown",
    "calibrate",
    "colocate",
    "diagnose",
    "explain",
    "fit",
    "fit_models",
    "from_hf_config",
    "gpus",
    "inspect_checkpoint",
    "load_gpu",
    "load_model",
    "models",
    "parse_log",
    "parse_vllm_log",
    "plan",
    "plot_fit",
    "plot_frontier",
    "schema_markdown",
    "spec_database",
    "sweep",
]


def __dir__() -> list[str]:
    return __all__


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        msg = f"module 'vramplan' has no attribute {name!r}"
        raise AttributeError(msg)
    from importlib import import_module

    value = getattr(import_module(f".{module}", __name__), name)
    globals()[name] = value  # the next lookup is a plain attribute
    return value
