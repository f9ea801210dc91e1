"""vramplan: what vLLM's startup profiling will find, per GPU rank and on the host, before launch."""

from __future__ import annotations

try:
    from . import _core  # noqa: F401 - fail early with a hint when the core is missing
except ImportError as err:  # pragma: no cover - only without a build
    msg = f"{err}: vramplan's C++ core is not built: run ./scripts/setup.sh (or `pip install .`)"
    raise ImportError(msg) from err

from ._core import ConfigError, Error, ParseError, SpecError, parse_vllm_log
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
    plan,
    schema_markdown,
    spec_database,
    sweep,
)
from .calibrate import Profile, calibrate
from .colocate import Colocation, Instance, colocate
from .diagnose import diagnose
from .explain import explain
from .fit import fit, fit_models
from .plots import plot_fit, plot_frontier
from .probe import auto_gpu

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
