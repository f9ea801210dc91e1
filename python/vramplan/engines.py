"""The serving engines vramplan plans, by their `--engine` name: each is one `Engine`, the same
calls for every engine (breakdown, plan, sweep, one option of `fit`, its own CLI commands), and
`api`, `fit`, `colocate` and the CLI dispatch through `get` once. An unknown name is an error
listing the engines, never an answer for another engine. The built-in engines' names, display
names and launch commands come from the core's descriptors (`_core.engine_row`); `register` adds
one at run time (a plugin, a test)."""

from __future__ import annotations

import importlib
import sys
import types
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, cast

from . import _core, _database

# The `--engine` of a call that names none.
DEFAULT_ENGINE = "vllm"
# Why calibrate refuses an engine whose rows it cannot fit (the default for a new engine).
CALIBRATE_REFUSAL = "calibrate fits vLLM's engine rows only"
# Why SGLang is not calibrated: its rows (model_specs/sglang.yaml) are compiled in and its
# breakdown and plan take no fitted row, so fitted constants would have nowhere to apply.
SGLANG_CALIBRATE_REFUSAL = (
    f"{CALIBRATE_REFUSAL}: SGLang's baseline constants (CUDA context, NCCL) "
    "are fitted in model_specs/sglang.yaml, and SGLang's breakdown and plan take no calibrated "
    "row yet; check an SGLang log against the plan with `vramplan validate --engine sglang`"
)


# A NamedTuple, not a dataclass: `dataclasses` imports `inspect` and friends, a tenth of the
# CLI's start (the registry loads on every `plan`).
class Engine(NamedTuple):
    """One serving engine. The callables take the arguments of `vramplan.breakdown`, `plan`
    and `sweep` (model, gpu, then keywords) and refuse by name those the engine has no use for;
    `fit_option` plans one GPU type x count x (TP, PP, DP) split for `vramplan.fit` and returns
    its row under fit's column names (`fit_columns` renames them to the engine's own)."""

    name: str
    display_name: str
    serve_command: str
    breakdown: Callable[..., Any]
    plan: Callable[..., Any]
    sweep: Callable[..., Any]
    fit_option: Callable[..., dict[str, Any]]
    # fit's columns that name a knob (vLLM's names) to the engine's names; empty: vLLM's.
    fit_columns: Mapping[str, str] = types.MappingProxyType({})
    # Its CLI commands (argv as cli.main got them); None: the main parser's (vLLM's).
    cli: Callable[[list[str]], int] | None = None
    # Whether `vramplan fit --engine NAME` is one of `cli`'s commands (its own search) rather
    # than the main parser's fit, which searches through fit_option.
    cli_fits: bool = False
    # Whether a launch line (argv) is this engine's: `check` picks the engine from it.
    reads_launch_line: Callable[[list[str]], bool] | None = None
    # Whether fit_models and colocate search this engine's launches (catalogue-wide searches).
    searches_catalogue: bool = False
    # Plans the fix of a diagnosis (`diagnose.diagnose`'s result, updated in place, with the
    # log text and diagnose's launch keywords); None: the diagnosis is the cause and the core's
    # advice only. The cause itself is the core's (`_core.diagnose_log`), for every engine.
    diagnosis_fix: Callable[..., None] | None = None
    # fit's rows for a whole search at once (fit_option's arguments, the splits as a list, and
    # the progress callback), or None where that search is not one it batches; None: fit plans
    # one option at a time through fit_option.
    fit_rows: Callable[..., list[dict[str, Any]] | None] | None = None
    # Why `vramplan.calibrate` refuses this engine; None: calibrate fits its engine rows.
    calibrate_refusal: str | None = CALIBRATE_REFUSAL

    def column(self, name: str) -> str:
        """fit's column `name` (vLLM's knob name) as this engine names it."""
        return self.fit_columns.get(name, name)


_registered: dict[str, Engine] = {}


def _descriptor(name: str) -> dict[str, Any]:
    if name not in _core.ENGINE_NAMES:
        raise _database.config_error(  # pragma: no cover - a build without the engine
            "engine", name, ", ".join(_core.ENGINE_NAMES), "not in this build"
        )
    return dict(_core.engine_row(name))


def _implemented_in(module: str, name: str) -> Callable[..., Any]:
    """The callable `name` of this package's `module`, imported on its first call: the
    registry sits below the modules that implement the engines and names them, as entry
    points do, instead of importing them (each implementation imports the registry)."""

    loaded = sys.modules.get(f"{__package__}.{module}")
    if loaded is not None:  # already imported (api, for vLLM): no wrapper frame on each call
        return cast("Callable[..., Any]", getattr(loaded, name))
    found: list[Callable[..., Any]] = []  # the implementation, once imported

    def call(*args: Any, **kwargs: Any) -> Any:
        if not found:
            found.append(getattr(importlib.import_module(f"{__package__}.{module}"), name))
        return found[0](*args, **kwargs)

    call.__name__ = call.__qualname__ = f"{module}.{name}"
    return call


def _knob_equivalents() -> dict[str, str]:
    """vLLM's knob names that SGLang names otherwise, to SGLang's (the core's equivalents)."""
    return {
        str(knob["name"]): _core.sglang_equivalent_knob(str(knob["name"]))
        for knob in _core.KNOBS
        if _core.sglang_equivalent_knob(str(knob["name"]))
    }


def _vllm() -> Engine:
    row = _descriptor("vllm")
    return Engine(
        name="vllm",
        display_name=str(row["display_name"]),
        serve_command=str(row["serve_command"]),
        breakdown=_implemented_in("api", "_vllm_breakdown"),
        plan=_implemented_in("api", "_vllm_plan"),
        sweep=_implemented_in("api", "_vllm_sweep"),
        fit_option=_implemented_in("fit", "_split_plan"),
        fit_rows=_implemented_in("fit", "_vllm_rows"),
        searches_catalogue=True,
        diagnosis_fix=_implemented_in("diagnose", "_vllm_fix"),
        calibrate_refusal=None,
    )


def _sglang() -> Engine:
    row = _descriptor("sglang")
    return Engine(
        name="sglang",
        display_name=str(row["display_name"]),
        serve_command=str(row["serve_command"]),
        breakdown=_implemented_in("api", "_sglang_breakdown"),
        plan=_implemented_in("api", "_sglang_plan"),
        sweep=_implemented_in("api", "_sglang_sweep"),
        fit_option=_implemented_in("fit", "_sglang_split_plan"),
        fit_columns=_knob_equivalents(),
        cli=_implemented_in("cli_sglang", "main"),
        reads_launch_line=_implemented_in("cli_sglang", "is_sglang_line"),
        calibrate_refusal=SGLANG_CALIBRATE_REFUSAL,
    )


def _llamacpp() -> Engine:
    return Engine(
        name="llamacpp",
        display_name="llama.cpp",
        serve_command="llama-server",
        breakdown=_implemented_in("llamacpp", "breakdown"),
        plan=_implemented_in("llamacpp", "plan"),
        sweep=_implemented_in("llamacpp", "not_yet"),
        fit_option=_implemented_in("llamacpp", "not_yet"),
        cli=_implemented_in("cli_llamacpp", "main"),
        cli_fits=True,
    )


def _ollama() -> Engine:
    return Engine(
        name="ollama",
        display_name="Ollama",
        serve_command="ollama serve",
        breakdown=_implemented_in("llamacpp", "not_yet"),
        plan=_implemented_in("ollama", "plan"),
        sweep=_implemented_in("llamacpp", "not_yet"),
        fit_option=_implemented_in("llamacpp", "not_yet"),
        cli=_implemented_in("ollama", "main"),
    )


_BUILTIN: dict[str, Callable[[], Engine]] = {
    "vllm": _vllm,
    "sglang": _sglang,
    "llamacpp": _llamacpp,
    "ollama": _ollama,
}
# Other spellings of a built-in engine's name.
_ALIASES = {"llama.cpp": "llamacpp"}
_built: dict[str, Engine] = {}


def names() -> tuple[str, ...]:
    """Every engine's name: the built-in ones, then the registered ones."""
    return (*_BUILTIN, *_registered)


def get(name: object, *, argument: str = "engine") -> Engine:
    """The engine called `name`; a ConfigError naming `argument` (the Python keyword or the
    CLI flag) and listing the engines otherwise."""
    if isinstance(name, str):
        name = _ALIASES.get(name, name)
        if name in _registered:
            return _registered[name]
        if name in _BUILTIN:
            if name not in _built:
                _built[name] = _BUILTIN[name]()
            return _built[name]
    raise _database.config_error(
        argument, name if isinstance(name, str) else repr(name), ", ".join(names()),
        "unknown serving engine",
    )  # fmt: skip


def register(engine: Engine) -> None:
    """Adds `engine` under its name; a name already taken is an error (unregister it first)."""
    if not engine.name or engine.name in names():
        raise _database.config_error(
            "engine.name", engine.name or "''", "a name no engine has", "already an engine"
        )
    _registered[engine.name] = engine


def unregister(name: str) -> None:
    """Removes an engine `register` added (the built-in ones stay)."""
    _registered.pop(name, None)


def engine_named(words: list[str]) -> str:
    """The engine argv names: `--engine NAME` / `--engine=NAME` before any `--`; else, for
    `check`, the engine whose launch line follows; else the default. An unknown name is an
    error naming --engine."""
    named = None
    end = words.index("--") if "--" in words else len(words)
    for i, word in enumerate(words[:end]):
        if word == "--engine":
            named = words[i + 1] if i + 1 < end else ""
        elif word.startswith("--engine="):
            named = word.partition("=")[2]
    if named is not None:
        return get(named, argument="--engine").name
    if words and words[0] == "check":
        for name in names():
            reads = get(name).reads_launch_line
            if reads is not None and reads(words[end + 1 :]):
                return name
    return DEFAULT_ENGINE


def without_engine(words: list[str]) -> list[str]:
    """argv without its `--engine NAME` words (those after `--` are the launch's, kept)."""
    end = words.index("--") if "--" in words else len(words)
    out: list[str] = []
    skip = False
    for word in words[:end]:
        if skip:
            skip = False
        elif word == "--engine":
            skip = True
        elif not word.startswith("--engine="):
            out.append(word)
    return out + words[end:]
