"""A vLLM launch as the user wrote it: a `vllm serve` / `python -m vllm.entrypoints.openai.
api_server` / `docker run ... vllm/vllm-openai` command line, or an `LLM(**kwargs)` file, read
into vLLM's own argument names, the environment it sets, and the planner's knobs.

The names vLLM accepts are data (model_specs/engine_args.yaml, per release): a name vramplan
models becomes a knob; an accepted name it does not model is listed as having no memory effect
(or, for the few in `unmodelled`, an effect not modelled); anything else is an error naming the
nearest accepted names.
"""

from __future__ import annotations

import functools
import json
import math
import os
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from . import _core, _io
from ._identity import plain_scalar
from ._resources import model_specs_dir
from ._units import GIB

# A command line or kwargs file is small: refuse anything larger than this.
MAX_LAUNCH_BYTES = 1 << 20

# vLLM keyword -> (knob name, scale): the flags whose unit differs from the knob's (GiB), from
# the knob table's flag_unit_bytes column.
_SCALED = {
    str(k["kwarg"]): (str(k["name"]), int(k["flag_unit_bytes"]))
    for k in _core.KNOBS
    if k["kwarg"] and k["flag_unit_bytes"] != 1
}
# vLLM's short spellings of a few flags.
_SHORT_FLAGS = {
    "-tp": "tensor_parallel_size",
    "-pp": "pipeline_parallel_size",
    "-dp": "data_parallel_size",
    "-q": "quantization",
    "-O": "compilation_config",
    "-ep": "enable_expert_parallel",
    "-sc": "speculative_config",
    "-cc": "compilation_config",
    "-ac": "attention_config",
    "-dcp": "decode_context_parallel_size",
    "-pcp": "prefill_context_parallel_size",
    "-asc": "api_server_count",
}
# The keys of --speculative-config vramplan models; other keys are accepted unmodelled.
_SPECULATIVE_KEYS = {
    "num_speculative_tokens": "num_speculative_tokens",
    "method": "speculative_method",
    "model": "speculative_model",
}
# 0.22+: --spec-method / --spec-model / --spec-tokens fill these keys of speculative_config
# (arg_utils.py, create_speculative_config).
_SPECULATIVE_FLAGS = {
    "spec_method": "method",
    "spec_model": "model",
    "spec_tokens": "num_speculative_tokens",
}
# Knobs vLLM takes as a JSON object on the command line and as a dict in LLM(...).
_JSON_KNOBS = frozenset({"limit_mm_per_prompt", "kv_transfer_config"})
# Environment variables that change what vramplan plans: the knob table's env_var column.
_ENV_KNOBS = {str(k["env_var"]): str(k["name"]) for k in _core.KNOBS if k["env_var"]}
# Log figures (parse_vllm_log) that name a runtime part selected by one of those variables:
# "Using V2 Model Runner", "Using FlashInfer for top-p & top-k sampling" (or the native fallback).
LOGGED_RUNTIME_KNOBS = {
    "model_runner_v2": "vllm_use_v2_model_runner",
    "flashinfer_sampler": "vllm_use_flashinfer_sampler",
}
# Read by vLLM as bool(int(value)): any integer, nonzero meaning on.
_INTEGER_FLAG_ENV = frozenset({"VLLM_USE_V2_MODEL_RUNNER", "VLLM_USE_FLASHINFER_SAMPLER"})


@functools.lru_cache(maxsize=1)
def _knob_table() -> dict[str, dict[str, Any]]:
    return {str(k["name"]): dict(k) for k in _core.KNOBS}


@functools.lru_cache(maxsize=1)
def _kwarg_to_knob() -> dict[str, str]:
    """vLLM keyword -> knob, for the knobs whose keyword is their own name."""
    return {
        str(k["kwarg"]): str(k["name"])
        for k in _core.KNOBS
        if k["kwarg"] and k["kwarg"] != "speculative_config"
    }


@functools.lru_cache(maxsize=1)
def _arg_data() -> dict[str, Any]:
    # Read by the core (a file of names: every value a string), not PyYAML, whose import and
    # pure-Python parse took a quarter of a CLI run.
    path = model_specs_dir() / "engine_args.yaml"
    data = _core.load_yaml_names_file(str(path), "vLLM's argument list", MAX_LAUNCH_BYTES)
    if not isinstance(data, dict) or "base" not in data or "releases" not in data:
        msg = f"{path}: not vLLM's argument list (needs base and releases)"
        raise _core.SpecError(msg)
    return data


def newest_release() -> str:
    """The newest release the argument list covers."""
    return str(_arg_data()["releases"][-1]["release"])


@functools.lru_cache(maxsize=64)
def engine_arg_names(version: str | None = None) -> frozenset[str]:
    """vLLM's argument names (keyword form) for `version` (None: the newest release listed);
    a version between two listed releases takes the earlier one."""
    data = _arg_data()
    names = set(data["base"])
    target = _core.Version.parse(version, "engine_version") if version else None
    for row in data["releases"]:
        if target is not None and _core.Version.parse(str(row["release"])) > target:
            break
        names |= set(row.get("adds") or [])
        names -= set(row.get("removes") or [])
    return frozenset(names)


def canonical_name(name: str, version: str | None = None) -> str:
    """The argument a flag sets: vLLM parses a few second spellings into another argument
    (--device-memory-utilization sets gpu_memory_utilization from 0.31)."""
    target = (_arg_data().get("aliases") or {}).get(name)
    return str(target) if target and name in engine_arg_names(version) else name


def unmodelled_names() -> frozenset[str]:
    return frozenset(_arg_data().get("unmodelled") or [])


def flag_of(name: str) -> str:
    return "--" + name.replace("_", "-")


class Launch:
    """A launch as written: the model exactly as given, vLLM's arguments under their keyword
    names (values as written, booleans True/False), and the environment the command sets.
    (A plain class, not a dataclass: the CLI starts without `dataclasses` and its `inspect`.)"""

    def __init__(
        self,
        model: str | None,
        args: dict[str, Any] | None = None,
        env: dict[str, str] | None = None,
        form: str = "flags",
        image_version: str | None = None,
        gpus: int | None = None,
    ) -> None:
        self.model = model
        self.args: dict[str, Any] = {} if args is None else args
        self.env: dict[str, str] = {} if env is None else env
        self.form = form  # vllm serve, api_server, docker, kwargs, flags
        self.image_version = image_version  # vllm/vllm-openai:vX.Y.Z
        self.gpus = gpus  # docker --gpus N / device list, CUDA_VISIBLE_DEVICES

    def __repr__(self) -> str:
        return f"Launch({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


def _did_you_mean(name: str, version: str | None) -> str:
    import difflib  # only for a name vLLM does not take: not on every start

    near = difflib.get_close_matches(name, sorted(engine_arg_names(version)), n=3, cutoff=0.6)
    hint = f"; did you mean {', '.join(flag_of(n) for n in near)}?" if near else ""
    release = version or newest_release()
    return f"{flag_of(name)}: not an argument of vLLM {release}{hint}"


def unknown_argument(name: str, version: str | None, where: str = "") -> _core.ConfigError:
    """The error for a name vLLM does not accept: worded with the nearest names, shaped as
    the core's (`.field`, `.value`, `.allowed`)."""
    err = _core.ConfigError(where + _did_you_mean(name, version))
    err.field, err.value = name, repr(name)
    err.allowed = f"vLLM {version or newest_release()}'s argument names"
    return err


def _is_flag(token: str) -> bool:
    return token.startswith("-") and not re.fullmatch(r"-\d+(\.\d+)?", token)


# vLLM's list arguments (list-typed fields of EngineArgs and FrontendArgs, 0.33's
# arg_utils.py and entrypoints/common/cli_args.py): argparse nargs="+", every following word up
# to the next flag is an item (`--served-model-name a b`).
_NARGS_PLUS = frozenset(
    {
        "served_model_name", "allowed_media_domains", "cudagraph_capture_sizes",
        "numa_bind_nodes", "numa_bind_cpus", "lora_target_modules", "ignore_patterns",
        "collect_detailed_traces", "sleep_preserve_parameter_names", "kv_cache_dtype_skip_layers",
        "logits_processors", "lora_modules", "api_key",
    }
)  # fmt: skip
# `-O3`, `-O=3`, `-O 3`: the optimization level where the release has it, before that the
# compilation level (compilation_config).
_OPTIMIZATION = re.compile(r"-O(?:=?(.+))?")


def _dotted_value(text: str) -> Any:
    """A dotted key's value as vLLM reads it: JSON, else a human-readable integer, else the
    text."""
    try:
        return json.loads(text)
    except ValueError:
        pass
    try:
        return _number("", text, int)
    except _core.ConfigError:
        return text


def parse_flags(tokens: Sequence[str], *, version: str | None = None) -> dict[str, Any]:
    """vLLM flags (`--name value`, `--name=value`, store-true `--name`, `--no-name`, `-O3`,
    dotted `--name.key value` / `--name.key+ a,b`, list arguments' several words) as
    {keyword: value}, as vLLM's FlexibleArgumentParser reads them; a name the release does not
    accept, or a value given to one of its boolean options (`--enforce-eager false`), raises
    ConfigError (did you mean; vLLM's reason)."""
    if not tokens:
        return {}  # no flags: the argument list is not read (a tenth of a CLI start)
    names = engine_arg_names(version)
    switches = boolean_options(version)
    args: dict[str, Any] = {}
    dotted: dict[str, dict[str, Any]] = {}
    i = 0
    while i < len(tokens):
        token = tokens[i]
        i += 1
        if not _is_flag(token):
            msg = f"{token!r}: expected a vLLM flag (--name [value])"
            raise _core.ConfigError(msg)
        level = _OPTIMIZATION.fullmatch(token)
        if level and (level.group(1) or (i < len(tokens) and tokens[i] in ("0", "1", "2", "3"))):
            chosen = level.group(1) or tokens[i]
            i += 0 if level.group(1) else 1
            name = "optimization_level" if "optimization_level" in names else "compilation_config"
            args[name] = chosen
            continue
        text, eq, inline = token.partition("=")
        if text.startswith("--") and "." in text:
            base, *keys = text[2:].split(".")
            base = base.replace("-", "_")
            if base not in names:
                raise unknown_argument(base, version)
            if not eq:
                if i >= len(tokens):
                    msg = f"{text}: expected a value"
                    raise _core.ConfigError(msg)
                inline = tokens[i]
                i += 1
            item: Any
            if keys[-1].endswith("+"):
                keys[-1] = keys[-1][:-1]
                item = inline.split(",")
            else:
                item = _dotted_value(inline)
            node = dotted.setdefault(canonical_name(base, version), {})
            for key in keys[:-1]:
                child = node.get(key)
                if not isinstance(child, dict):
                    child = node[key] = {}
                node = child
            node[keys[-1]] = item
            continue
        name = _SHORT_FLAGS.get(text) or text.lstrip("-").replace("-", "_")
        value: Any
        negated = name.startswith("no_") and name[3:] in names and name not in names
        if switches and name not in names and (off := _turned_off(name, switches, version)):
            name, value = off, False
            _check_switch(text, eq, inline, tokens[i:], name, switches, version)
        elif switches.get(name) in ("negatable", "store_true"):
            value = True
            _check_switch(text, eq, inline, tokens[i:], name, switches, version)
        elif negated and not switches:
            name, value = name[3:], False
        elif eq:
            value = inline
        elif name in _NARGS_PLUS and i < len(tokens) and not _is_flag(tokens[i]):
            value = []
            while i < len(tokens) and not _is_flag(tokens[i]):
                value.append(tokens[i])
                i += 1
            value = value[0] if len(value) == 1 else value
        elif i < len(tokens) and not _is_flag(tokens[i]):
            value = tokens[i]
            i += 1
        elif name in _NARGS_PLUS:
            msg = f"{flag_of(name)}: expected at least one value (vLLM's argument parser)"
            raise _core.ConfigError(msg)
        else:
            value = True  # a store-true flag
        if name not in names:
            raise unknown_argument(name, version)
        args[canonical_name(name, version)] = value
    # vLLM appends the dotted keys as one JSON value after the other flags: it wins.
    for name, config in dotted.items():
        args[name] = json.dumps(config)
    return args


@functools.lru_cache(maxsize=64)
def _boolean_row(version: str | None) -> dict[str, Any]:
    """engine_args.yaml's boolean_options row at or before `version` (None: the newest); empty
    before the first row."""
    target = _core.Version.parse(version, "engine_version") if version else None
    chosen: dict[str, Any] = {}
    for row in _arg_data().get("boolean_options") or []:
        if target is not None and _core.Version.parse(str(row["release"])) > target:
            break
        chosen = row
    return chosen


def boolean_options(version: str | None = None) -> dict[str, str]:
    """vLLM's boolean options as `version`'s parser reads them: keyword -> negatable,
    store_true or optional_value; empty before the first release read (booleans read as
    before: a value word after one is taken as true or false)."""
    row = _boolean_row(version)
    return {
        str(name): kind
        for kind in ("negatable", "store_true", "optional_value")
        for name in row.get(kind) or []
    }


def _inverse_prefixes(version: str | None) -> list[tuple[str, str]]:
    """The spellings that turn a negatable option off: `no_x` for x, and where vLLM's
    EnableDisableAction pairs them (0.33), `disable_x` for enable_x and `enable_x` for
    disable_x (prefix written, prefix of the option)."""
    forms = _boolean_row(version).get("inverse_forms") or []
    pairs = [("no_", "")] if "no_name" in forms else []
    if "enable_disable" in forms:
        pairs += [("disable_", "enable_"), ("enable_", "disable_")]
    return pairs


def _turned_off(name: str, switches: Mapping[str, str], version: str | None) -> str | None:
    """The negatable option `name` turns off (`--no-x`, or `--disable-x` / `--enable-x` where
    the release pairs them); None for any other name."""
    for prefix, inverse in _inverse_prefixes(version):
        target = inverse + name.removeprefix(prefix)
        if name.startswith(prefix) and switches.get(target) == "negatable":
            return target
    return None


def _switch_spellings(name: str, switches: Mapping[str, str], version: str | None) -> str:
    """An option's spellings as vLLM's parser names it in errors (`--a/--no-a`)."""
    if switches.get(name) != "negatable":
        return flag_of(name)
    for written, prefix in _inverse_prefixes(version):
        if prefix and name.startswith(prefix):
            return f"{flag_of(name)}/{flag_of(written + name.removeprefix(prefix))}"
    return f"{flag_of(name)}/{flag_of('no_' + name)}"


def _check_switch(
    text: str,
    eq: str,
    inline: str,
    following: Sequence[str],
    name: str,
    switches: Mapping[str, str],
    version: str | None,
) -> None:
    """A boolean option takes no value: `--x=false` and `--x false` stop vLLM's parser, and
    are refused with its reason (so `--enforce-eager false` is not read as false)."""
    release = version or newest_release()
    spellings = _switch_spellings(name, switches, version)
    write = f"write {spellings.replace('/', ' or ')}"
    if eq:
        msg = (
            f"argument {spellings}: ignored explicit argument {inline!r} (vLLM {release}'s "
            f"argument parser takes no value after {text}); {write}"
        )
        raise _core.ConfigError(msg)
    if following and not _is_flag(following[0]):
        word = following[0]
        msg = (
            f"{text} takes no value in vLLM {release}: its argument parser stops at {word!r} "
            f"(unrecognized arguments: {word}); {write}"
        )
        raise _core.ConfigError(msg)


# `docker run`'s options that take no value (docker run --help); every other option takes
# one, so that an option vramplan has not listed (`--pid host`) does not shift the image.
_DOCKER_SWITCHES = frozenset(
    {
        "--rm", "-d", "--detach", "-i", "--interactive", "-t", "--tty", "--privileged", "--init",
        "--read-only", "-P", "--publish-all", "--no-healthcheck", "--oom-kill-disable", "-q",
        "--quiet", "--disable-content-trust", "--use-api-socket", "--help",
    }
)  # fmt: skip
# Short switches docker lets one word group: `-it`, `-dit`.
_DOCKER_SHORT_SWITCHES = re.compile(r"-[dtiPq]+")
# An --env-file is a few variables: refuse anything larger.
_MAX_ENV_FILE_BYTES = 1 << 20


def _gpu_count(text: str) -> int | None:
    """GPUs a `--gpus` value or CUDA_VISIBLE_DEVICES names (None for `all` / unknown)."""
    text = text.strip().strip("'\"")
    text = text.removeprefix("device=")
    if text.isdigit() and "," not in text and not text.startswith("device"):
        return int(text) if text != "0" else None
    parts = [p for p in text.split(",") if p.strip()]
    return len(parts) if parts and text != "all" else None


def _env_file(path: str, launch: Launch) -> None:
    """docker's --env-file: `KEY=value` lines taken as written (no quotes removed), `KEY`
    alone from this environment, `#` lines and blank lines skipped."""
    for number, line in _io.read_lines(
        path, what="docker --env-file", max_bytes=_MAX_ENV_FILE_BYTES, max_line_bytes=65536
    ):
        line = line.rstrip("\r\n")
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        key, eq, value = line.partition("=")
        key = key.lstrip()
        if not key or not re.fullmatch(r"[^\s=]+", key):
            msg = f"{path}:{number}: not a KEY=value line of a docker --env-file"
            raise _core.ConfigError(msg)
        if eq:
            launch.env[key] = value
        elif key in os.environ:
            launch.env[key] = os.environ[key]


def _docker(tokens: list[str], launch: Launch) -> list[str]:
    """The vLLM arguments after the image of a `docker run` line; docker's -e, --env-file
    and --gpus read."""
    i = 0
    while i < len(tokens):
        token = tokens[i]
        text, eq, inline = token.partition("=")
        if token.startswith("-"):
            switch = text in _DOCKER_SWITCHES or bool(_DOCKER_SHORT_SWITCHES.fullmatch(text))
            value = inline if eq else (tokens[i + 1] if i + 1 < len(tokens) else "")
            step = 1 if eq or switch else 2
            if switch:
                pass
            elif text in ("-e", "--env") and "=" in value:
                key, _, env_value = value.partition("=")
                launch.env[key] = env_value
            elif text in ("-e", "--env") and value in os.environ:
                launch.env[value] = os.environ[value]
            elif text == "--env-file":
                _env_file(value, launch)
            elif text == "--gpus":
                launch.gpus = _gpu_count(value)
            i += step
            continue
        image = token
        tag = image.rpartition(":")[2] if ":" in image.rpartition("/")[2] else ""
        # A release tag ("v0.11.0", "0.8.5-cu124"); "latest" or "nightly" names none.
        version = _core.Version.read(tag) if re.match(r"v?\d", tag) else None
        launch.image_version = None if version is None else str(version)
        return tokens[i + 1 :]
    msg = "docker run: no image found on the line"
    raise _core.ConfigError(msg)


def parse_command(command: str | Sequence[str], *, version: str | None = None) -> Launch:
    """A launch from a command line: `vllm serve MODEL ...`, `python -m
    vllm.entrypoints.openai.api_server --model MODEL ...`, `docker run ... IMAGE ...`, with
    leading `VAR=value` assignments (or `env VAR=value`), a pasted `$ ` prompt and `\\` line
    continuations."""
    if isinstance(command, str):
        if len(command) > MAX_LAUNCH_BYTES:
            msg = f"the command line is longer than {MAX_LAUNCH_BYTES} bytes"
            raise _core.ConfigError(msg)
        text = re.sub(r"\\\r?\n", " ", command).strip()
        text = re.sub(r"^\$\s+", "", text)
        try:
            tokens = shlex.split(text)
        except ValueError as err:
            msg = f"cannot split the command line as a shell would ({err})"
            raise _core.ConfigError(msg) from None
    else:
        tokens = list(command)
    if len(tokens) == 1 and len(tokens[0].split()) > 1:
        # The whole line as one quoted word (`check -- "vllm serve M --tp 2"`).
        return parse_command(tokens[0], version=version)
    launch = Launch(model=None)
    while tokens and (tokens[0] == "env" or re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*=.*", tokens[0])):
        head = tokens.pop(0)
        if head != "env":
            key, _, value = head.partition("=")
            launch.env[key] = value
    if not tokens:
        msg = "the command line is empty: give `vllm serve MODEL ...`"
        raise _core.ConfigError(msg)
    rest: list[str]
    if tokens[0] in ("docker", "podman") and len(tokens) > 1 and tokens[1] == "run":
        launch.form = "docker"
        rest = _docker(tokens[2:], launch)
        version = version or launch.image_version
    elif Path(tokens[0]).name == "vllm" and len(tokens) > 1 and tokens[1] == "serve":
        launch.form = "vllm serve"
        rest = tokens[2:]
    elif Path(tokens[0]).name.startswith("python") and tokens[1:3] == [
        "-m",
        "vllm.entrypoints.openai.api_server",
    ]:
        launch.form = "api_server"
        rest = tokens[3:]
    else:
        msg = (
            f"{tokens[0]!r}: not a vLLM launch (give `vllm serve MODEL ...`, `python -m "
            "vllm.entrypoints.openai.api_server ...` or `docker run ... vllm/vllm-openai ...`)"
        )
        raise _core.ConfigError(msg)
    if rest and not _is_flag(rest[0]):
        launch.model = rest.pop(0)
    if rest and rest[0] == "serve":  # `docker run ... image vllm serve M` style images
        rest.pop(0)
        if rest and not _is_flag(rest[0]):
            launch.model = rest.pop(0)
    rest = _with_config_file(rest, version)
    launch.args = parse_flags(rest, version=version)
    model_flag = launch.args.pop("model", None)
    if model_flag is not None and launch.model is not None and launch.form != "api_server":
        # vLLM moves --model to the front, and the positional model is then an extra word.
        msg = (
            f"`vllm serve {launch.model} ... --model {model_flag}` names two models: vLLM "
            "refuses the line (unrecognized arguments); give the model once"
        )
        raise _core.ConfigError(msg)
    if model_flag is not None:
        launch.model = str(model_flag)
    return launch


# A --config file holds a few dozen arguments: refuse anything larger.
_MAX_CONFIG_BYTES = 1 << 20


def _with_config_file(words: list[str], version: str | None = None) -> list[str]:
    """The flags with `--config FILE` replaced by the file's arguments, put before the other
    flags so that the command line wins, as vLLM's FlexibleArgumentParser does (booleans as
    `--name` / `--no-name`, false dropped where the release has no `--no-name`; lists as
    several words, mappings as one JSON word)."""
    at = [i for i, word in enumerate(words) if word == "--config" or word.startswith("--config=")]
    if not at:
        return words
    if len(at) > 1:
        msg = "--config is given more than once (vLLM takes one config file)"
        raise _core.ConfigError(msg)
    index = at[0]
    word = words[index]
    path = word.partition("=")[2] if "=" in word else (words[index + 1 : index + 2] or [""])[0]
    end = index + 1 if "=" in word else index + 2
    if not path or _is_flag(path):
        msg = "--config: no config file given"
        raise _core.ConfigError(msg)
    if Path(path).suffix.lower() not in (".yaml", ".yml"):
        msg = f"--config {path}: vLLM reads a YAML config file (.yaml or .yml)"
        raise _core.ConfigError(msg)
    text = _io.read_text(path, what="vLLM config file", max_bytes=_MAX_CONFIG_BYTES)
    data = _strict_yaml(text, path)
    if not isinstance(data, dict):
        msg = f"{path}: a vLLM config file is a mapping of argument names to values"
        raise _core.ConfigError(msg)
    config: list[str] = []
    switches = boolean_options(version)
    for key, value in data.items():
        flag = "--" + str(key)
        if isinstance(value, bool):
            negatable = not switches or switches.get(str(key).replace("-", "_")) == "negatable"
            config += [flag] if value else [f"--no-{key}"] if negatable else []
        elif isinstance(value, list):
            config += [flag, *(str(item) for item in value)] if value else []
        elif isinstance(value, dict):
            config += [flag, json.dumps(value)]
        else:
            config += [flag, str(value)]
    return config + words[:index] + words[end:]


def _strict_yaml(text: str, source: str) -> Any:
    """YAML with no duplicate keys and no anchors or aliases (a kwargs file needs none, and
    expanding them is unbounded); a ParseError naming `source` and the line otherwise."""
    import yaml

    class StrictLoader(yaml.SafeLoader):  # type: ignore[misc]  # PyYAML ships no types
        def compose_node(self, parent: Any, index: Any) -> Any:
            event = self.peek_event()
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise yaml.composer.ComposerError(
                    None, None, "anchors and aliases are not accepted", event.start_mark
                )
            return super().compose_node(parent, index)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                if isinstance(key, str) and key in seen:
                    raise yaml.constructor.ConstructorError(
                        None, None, f"duplicate key {key!r}", key_node.start_mark
                    )
                if isinstance(key, str):
                    seen.add(key)
            return super().construct_mapping(node, deep)

    StrictLoader.add_constructor(
        yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, StrictLoader.construct_mapping
    )
    try:
        return yaml.load(text, Loader=StrictLoader)  # a SafeLoader subclass
    except yaml.YAMLError as err:
        msg = f"{source}: not valid YAML ({err})".replace("\n", " ")
        raise _core.ParseError(msg) from None
    except RecursionError:
        msg = f"{source}: YAML nested too deep"
        raise _core.ParseError(msg) from None


def read_kwargs_file(path: str | Path, *, version: str | None = None) -> Launch:
    """A launch from a JSON or YAML file of `vllm.LLM(**kwargs)` keyword arguments."""
    path = Path(path)
    # A user's file: bounded and refused by type (a FIFO or device) like every other read.
    text = _io.read_text(path, what="LLM(**kwargs) file", max_bytes=MAX_LAUNCH_BYTES)
    source = str(path)
    data: Any = (
        _io.loads_json(text, source)
        if path.suffix.lower() == ".json"
        else _strict_yaml(text, source)
    )
    if not isinstance(data, dict):
        msg = f"{path}: expected a mapping of LLM(**kwargs) keyword arguments"
        raise _core.ConfigError(msg)
    names = engine_arg_names(version)
    launch = Launch(model=None, form="kwargs")
    for key, value in data.items():
        if not isinstance(key, str) or key not in names:
            raise unknown_argument(str(key), version, f"{path}: ")
        launch.args[key] = value
    model = launch.args.pop("model", None)
    launch.model = None if model is None else str(model)
    return launch


# The arguments vLLM 0.33 parses with human_readable_int (arg_utils.py): 1k, 25.6k, 2K, 1G.
_HUMAN_READABLE = frozenset(
    {
        "max_model_len", "max_num_batched_tokens", "max_num_scheduled_tokens",
        "kv_cache_memory_bytes", "safetensors_prefetch_block_size", "max_num_queued_tokens",
    }
)  # fmt: skip
_DECIMAL_SUFFIX = {"k": 10**3, "m": 10**6, "g": 10**9, "t": 10**12}
_BINARY_SUFFIX = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
# What vLLM reads as "the longest context that fits" for --max-model-len (0.33:
# human_readable_int_or_auto).
_AUTO_CONTEXT = ("auto", "-1")


def _number(name: str, value: Any, kind: type) -> Any:
    if isinstance(value, bool):
        msg = f"{flag_of(name)}: expected a number (got {value!r})"
        raise _core.ConfigError(msg)
    if isinstance(value, float) and not math.isfinite(value):
        msg = f"{flag_of(name)}: expected a finite number (got {value!r})"
        raise _core.ConfigError(msg)
    if isinstance(value, (int, float)) and kind is float:
        return float(value)
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if kind is int:
        match = re.fullmatch(r"(\d+(?:\.\d+)?)([kKmMgGtT]?)", text)
        digits, suffix = match.groups() if match else ("", "")
        if match and not suffix and "." not in digits:
            return int(digits)
        if match and suffix and (not name or name in _HUMAN_READABLE):
            # vLLM's human_readable_int: 32k = 32000 (int() of the product), 32K = 32768, and
            # no decimals with a binary suffix.
            if suffix in _DECIMAL_SUFFIX:
                return int(float(digits) * _DECIMAL_SUFFIX[suffix])
            if "." not in digits:
                return int(digits) * _BINARY_SUFFIX[suffix]
            msg = (
                f"{flag_of(name)}: {value!r}: decimals are not allowed with binary suffixes like "
                f"{suffix} (vLLM's argument parser); did you mean {digits}{suffix.lower()}?"
            )
            raise _core.ConfigError(msg)
        if match and suffix:
            sized = ", ".join(flag_of(n) for n in sorted(_HUMAN_READABLE))
            msg = (
                f"{flag_of(name)}: expected an integer (got {value!r}); vLLM reads sizes like "
                f"32k only for {sized}"
            )
            raise _core.ConfigError(msg)
    else:
        try:
            number = float(text)
        except ValueError:
            pass
        else:
            if math.isfinite(number):
                return number
    what = "an integer" if kind is int else "a finite number"
    msg = f"{flag_of(name)}: expected {what} (got {value!r})"
    raise _core.ConfigError(msg)


def _boolean(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    msg = f"{flag_of(name)}: expected true or false (got {value!r})"
    raise _core.ConfigError(msg)


def _json_object(name: str, value: Any) -> dict[str, Any]:
    if isinstance(value, Mapping):
        return dict(value)
    try:
        data = json.loads(str(value))
    except ValueError:
        data = None
    if not isinstance(data, dict):
        msg = f"{flag_of(name)}: expected a JSON object (got {value!r})"
        raise _core.ConfigError(msg)
    return data


def _limit_mm(value: Any) -> str:
    """--limit-mm-per-prompt as JSON text; older releases wrote `image=2,video=1`."""
    if isinstance(value, Mapping):
        return json.dumps(dict(value), separators=(",", ":"))
    text = str(value).strip()
    if text.startswith("{"):
        return text
    pairs = {}
    for part in text.split(","):
        key, eq, count = part.partition("=")
        if not eq or not count.strip().isdigit():
            msg = f"--limit-mm-per-prompt: expected JSON or modality=count pairs (got {text!r})"
            raise _core.ConfigError(msg)
        pairs[key.strip()] = int(count)
    return json.dumps(pairs, separators=(",", ":"))


class Knobs:
    """What vLLM arguments and environment mean to the planner (filled in by `to_knobs`)."""

    def __init__(self) -> None:
        self.knobs: dict[str, Any] = {}
        self.no_memory_effect: list[str] = []  # vLLM keywords
        self.unmodelled: list[str] = []  # memory effect not modelled
        self.env_used: dict[str, str] = {}
        self.env_ignored: dict[str, str] = {}
        self.num_gpus: int | None = None
        self.context_auto = False  # --max-model-len auto / -1: the longest context that fits

    def __repr__(self) -> str:
        return f"Knobs({', '.join(f'{k}={v!r}' for k, v in vars(self).items())})"


def to_knobs(
    args: Mapping[str, Any],
    *,
    env: Mapping[str, str] | None = None,
    version: str | None = None,
    typed: bool = True,
) -> Knobs:
    """The planner's knobs for vLLM arguments (keyword names, values as written or typed).
    `typed=False` (the Python API) renames and rescales only: the core checks the types."""
    table = _knob_table()
    by_kwarg = _kwarg_to_knob()
    # No arguments (a bare `plan`): the release's argument list is not read.
    names = engine_arg_names(version) if args else frozenset()
    unmodelled = unmodelled_names() if args else frozenset()
    out = Knobs()
    given_as: dict[str, str] = {}  # knob -> the name the caller used
    for written, value in args.items():
        name = canonical_name(written, version)
        if name in table and name not in by_kwarg:
            knob_name = name  # vramplan's own spelling (a documented alias)
        elif name in _SCALED:
            knob_name = _SCALED[name][0]
        elif name in by_kwarg:
            knob_name = by_kwarg[name]
        elif name in ("speculative_config", "speculative_model", "num_speculative_tokens"):
            _speculative(name, value, out)
            continue
        elif name in _SPECULATIVE_FLAGS and name in names:
            _speculative("speculative_config", {_SPECULATIVE_FLAGS[name]: value}, out)
            continue
        elif name == "eplb_config" and name in names:
            redundant = _eplb_redundant_experts(value)
            if redundant is not None:
                out.knobs["num_redundant_experts"] = redundant
                given_as["num_redundant_experts"] = written
            continue
        elif name == "enable_lora":
            if _boolean(name, value):
                out.knobs.setdefault("max_loras", 1)  # vLLM's default with LoRA on
            continue
        elif name in names:
            (out.unmodelled if name in unmodelled else out.no_memory_effect).append(name)
            continue
        else:
            raise unknown_argument(name, version)
        value = plain_scalar(value)
        if typed and knob_name == "max_model_len" and str(value).strip().lower() in _AUTO_CONTEXT:
            out.context_auto = True
            continue
        vllm_typed = knob_name in _JSON_KNOBS and isinstance(value, Mapping)
        if typed or name in _SCALED or vllm_typed:
            # A dict is vLLM's own type for limit_mm_per_prompt (what to_llm_kwargs gives).
            value = _typed(name, knob_name, value, table[knob_name])
        out.knobs[knob_name] = value
        given_as[knob_name] = written
    _check_release(out.knobs, table, names, version, given_as)
    for key, value in (env or {}).items():
        if key in _ENV_KNOBS:
            out.knobs.setdefault(_ENV_KNOBS[key], _env_value(key, value))
            out.env_used[key] = value
        elif key == "CUDA_VISIBLE_DEVICES":
            out.num_gpus = _gpu_count(value)
            out.env_used[key] = value
        elif key.startswith("VLLM_") or key == "PYTORCH_CUDA_ALLOC_CONF":
            out.env_ignored[key] = value
    if typed:
        _check_parallel_sizes(out.knobs)
    _check_visible_devices(out, env or {})
    return out


def _eplb_redundant_experts(value: Any) -> Any:
    """--eplb-config's num_redundant_experts (JSON text or a dict, as vLLM takes it); None
    when it leaves the count at vLLM's default. Its other keys (window and step sizes, the
    policy) are not modelled, and refused by name."""
    config = value
    if isinstance(value, str):
        try:
            config = json.loads(value)
        except json.JSONDecodeError:
            config = None
    if not isinstance(config, Mapping):
        msg = f"--eplb-config: expected a JSON object (got {value!r})"
        raise _core.ConfigError(msg)
    others = sorted(str(key) for key in config if key != "num_redundant_experts")
    if others:
        # The launch vramplan writes would drop them: refused rather than changed unseen.
        msg = (
            f"--eplb-config: only num_redundant_experts is modelled (got {', '.join(others)}); "
            "plan with --eplb-config '{\"num_redundant_experts\": R}' and add the rest to the "
            "launch line"
        )
        raise _core.ConfigError(msg)
    return config.get("num_redundant_experts")


def _check_parallel_sizes(knobs: Mapping[str, Any]) -> None:
    """A parallel size below 1 is refused under its own flag (vLLM refuses it too), not later
    as a GPU count."""
    for knob in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size"):
        size = knobs.get(knob)
        if isinstance(size, int) and size < 1:
            msg = f"{flag_of(knob)}: expected a positive integer (got {size})"
            raise _core.ConfigError(msg)


def _check_visible_devices(out: Knobs, env: Mapping[str, str]) -> None:
    """A launch needs TP x PP x DP GPUs of those CUDA_VISIBLE_DEVICES shows it; with fewer,
    vLLM stops at startup (its world size is larger than the GPUs it sees)."""
    if out.num_gpus is None:
        return
    sizes = [
        (knob, out.knobs.get(knob))
        for knob in ("tensor_parallel_size", "pipeline_parallel_size", "data_parallel_size")
    ]
    if not all(isinstance(size, int) and size > 0 for _, size in sizes if size is not None):
        return  # a bad size is refused by name when the launch compiles
    needed = math.prod(int(size) for _, size in sizes if size is not None)
    if needed > out.num_gpus:
        given = " x ".join(f"{knob} {size}" for knob, size in sizes if size is not None)
        msg = (
            f"CUDA_VISIBLE_DEVICES={env.get('CUDA_VISIBLE_DEVICES', '')!r} shows {out.num_gpus} "
            f"GPU(s), and the launch needs {given} = {needed}: vLLM would stop at startup"
        )
        raise _core.ConfigError(msg)


def _env_value(key: str, value: str) -> str | int:
    """A memory-relevant environment variable's value as the knob takes it. vLLM reads
    VLLM_USE_V2_MODEL_RUNNER and VLLM_USE_FLASHINFER_SAMPLER as bool(int(value)): any integer,
    nonzero meaning on. LMCache reads LMCACHE_MAX_LOCAL_CPU_SIZE as a float of GiB."""
    if key == "LMCACHE_MAX_LOCAL_CPU_SIZE":
        try:
            size = float(value)
        except ValueError:
            size = math.nan
        # At most 2^32 GiB (4 EiB): larger is no host, and overflows the core's int64 bytes.
        if not math.isfinite(size) or not 0 <= size <= 2**32:
            msg = (
                f"{key}: expected a size in GiB, a number from 0 to 2^32, as LMCache reads it "
                f"(got {value!r})"
            )
            raise _core.ConfigError(msg) from None
        return round(size * GIB)
    if key not in _INTEGER_FLAG_ENV:
        return value
    if re.fullmatch(r"\s*[+-]?\d+\s*", value):
        return "1" if int(value) else "0"
    msg = f"{key}: expected an integer, 0 or 1, as vLLM reads it (got {value!r})"
    raise _core.ConfigError(msg)


def _check_release(
    knobs: Mapping[str, Any],
    table: Mapping[str, dict[str, Any]],
    names: frozenset[str],
    version: str | None,
    given_as: Mapping[str, str],
) -> None:
    """Every knob set must be an argument of the release planned for, so that the flags
    vramplan writes are ones that vLLM accepts (the all-to-all backend is an environment
    variable before its flag existed, and is written as one)."""
    for knob_name, value in knobs.items():
        kwarg = str(table[knob_name]["kwarg"]) if knob_name in table else ""
        if not kwarg or kwarg == "all2all_backend" or value is None or value is False:
            continue
        if kwarg == "num_redundant_experts" and "eplb_config" in names:
            continue  # written as --eplb-config's num_redundant_experts
        if kwarg not in names:
            err = unknown_argument(kwarg, version)
            err.field = given_as.get(knob_name, kwarg)  # the name the caller wrote
            raise err


def _typed(name: str, knob_name: str, value: Any, knob: dict[str, Any]) -> Any:
    kind = knob["type"]
    if name in _SCALED:
        return round(_number(name, value, float) * _SCALED[name][1])
    if kind == "bool":
        return _boolean(name, value)
    if kind in ("int", "bytes"):
        return _number(name, value, int)
    if kind == "float":
        return _number(name, value, float)
    if knob_name == "limit_mm_per_prompt":
        return _limit_mm(value)
    if knob_name == "kv_transfer_config" and isinstance(value, Mapping):
        return json.dumps(value)  # LLM(kv_transfer_config={...}) as the flag's JSON
    return str(value)


def _speculative(name: str, value: Any, out: Knobs) -> None:
    if name == "speculative_model":
        out.knobs["speculative_model"] = value  # an id, a path or a loaded ModelSpec
        return
    if name == "num_speculative_tokens":
        out.knobs["num_speculative_tokens"] = _number(name, value, int)
        return
    config = _json_object(name, value)
    for key, item in config.items():
        if key in _SPECULATIVE_KEYS:
            knob = _SPECULATIVE_KEYS[key]
            out.knobs[knob] = _number(key, item, int) if knob == "num_speculative_tokens" else item
        elif f"speculative_config.{key}" not in out.unmodelled:
            out.unmodelled.append(f"speculative_config.{key}")


def environment_for(launch_env: Mapping[str, str], *, devices: bool = True) -> dict[str, str]:
    """The memory-relevant environment: the process's own VLLM_*, PYTORCH_CUDA_ALLOC_CONF and
    (with `devices`: a launch checked as it would run here) CUDA_VISIBLE_DEVICES, overridden
    by what the command line sets."""
    keys = [k for k in os.environ if k.startswith("VLLM_")]
    keys += ["PYTORCH_CUDA_ALLOC_CONF", *(["CUDA_VISIBLE_DEVICES"] if devices else [])]
    env = {k: os.environ[k] for k in keys if k in os.environ}
    env.update(launch_env)
    return env


def remedy_available(remedy: Mapping[str, Any] | Sequence[str], version: str | None) -> bool:
    """Whether every argument a remedy changes (a remedy's JSON, or the vLLM keywords of its
    `changes`) exists in the release planned for (the solver offers, say, CPU offload without
    knowing that 0.5.0 has no --cpu-offload-gb)."""
    names = engine_arg_names(version)
    if isinstance(remedy, Mapping):
        remedy = [str(change["knob"]) for change in remedy.get("changes") or []]
    return all(knob in names for knob in remedy)


def passthrough_words(args: Mapping[str, Any], names: Sequence[str]) -> list[str]:
    """The user's own flags for `names` (arguments vramplan does not model) as argv words, so
    the command vramplan prints still carries them (a tool-call parser, prefix caching)."""
    words: list[str] = []
    for name in names:
        value = args.get(name)
        if value is True:
            words.append(flag_of(name))
        elif value is False:
            words.append(flag_of("no_" + name))
        elif isinstance(value, (list, tuple)) and name not in _JSON_LIST_ARGS:
            # vLLM's list arguments take their items as separate words (argparse nargs="+"),
            # --middleware one flag per item (action="append").
            items = [_word(item) for item in value]
            if name == "middleware":
                words += [w for item in items for w in (flag_of(name), item)]
            elif items:
                words += [flag_of(name), *items]
        elif value is not None:
            words += [flag_of(name), _word(value)]
    return words


# The list arguments vLLM's server parses as one JSON word (cli_args.py: type=json.loads).
_JSON_LIST_ARGS = frozenset({"allowed_origins", "allowed_methods", "allowed_headers"})


def _word(value: Any) -> str:
    if isinstance(value, (dict, list, tuple)):
        return json.dumps(value, separators=(",", ":"))
    return str(value)


# --- SGLang's options ---------------------------------------------------------------------
# SGLang parses its launch line with a plain argparse parser: an option is taken exactly or by
# an unambiguous prefix (allow_abbrev), and anything else stops the server at startup. The
# options per release are data (model_specs/sglang_args.yaml, read from the wheels).


@functools.lru_cache(maxsize=1)
def _sglang_arg_rows() -> dict[str, dict[str, Any]]:
    path = model_specs_dir() / "sglang_args.yaml"
    data = _core.load_yaml_names_file(str(path), "SGLang's option list", MAX_LAUNCH_BYTES)
    rows = data.get("releases") if isinstance(data, dict) else None
    if not isinstance(rows, list) or not all(
        isinstance(row, dict) and {"release", "wheel", "flags"} <= row.keys() for row in rows
    ):
        msg = f"{path}: not SGLang's option list (needs releases, each with release, wheel, flags)"
        raise _core.SpecError(msg)
    return {str(row["release"]): row for row in rows}


@functools.lru_cache(maxsize=16)
def sglang_options(
    version: str | None = None, *, serve: bool = False
) -> tuple[str, frozenset[str]]:
    """The release whose rules judge SGLang `version` (None: the newest; the row sglang.yaml
    picks) and the option strings its launch line takes (`serve`: `sglang serve`'s own too)."""
    release = _core.engine_release("sglang", version or "")["rules_release"]
    row = _sglang_arg_rows().get(release)
    if row is None:
        msg = f"sglang_args.yaml: no option list for SGLang {release} (sglang.yaml has its row)"
        raise _core.SpecError(msg)
    names = list(row["flags"]) + (list(row.get("serve_flags") or []) if serve else [])
    return release, frozenset("--" + str(name) for name in names)


def sglang_option(flag: str, version: str | None = None, *, serve: bool = False) -> str:
    """The option SGLang's parser takes `flag` (a `--name` word, without `=value`) for: the
    option itself, or the one option it is a prefix of. A flag that is neither stops SGLang
    at startup: ConfigError in its parser's words, naming the release and the nearest
    options."""
    release, options = sglang_options(version, serve=serve)
    if flag in options:
        return flag
    matches = sorted(option for option in options if option.startswith(flag))
    if len(matches) == 1 and flag.startswith("--") and len(flag) > 2:
        return matches[0]
    if len(matches) > 1 and len(flag) > 2:
        reason = f"ambiguous option: {flag} could match {', '.join(matches)}"
    else:
        import difflib

        near = difflib.get_close_matches(flag, sorted(options), n=3, cutoff=0.6)
        hint = f"; did you mean {', '.join(near)}?" if near else ""
        reason = f"unrecognized arguments: {flag}{hint}"
    err = _core.ConfigError(f"{flag}: not an argument of SGLang {release} ({reason})")
    err.field, err.value = flag, repr(flag)
    err.allowed = f"SGLang {release}'s options"
    raise err


def sglang_image_version(words: Sequence[str]) -> str | None:
    """The SGLang release a `docker run ... lmsysorg/sglang:v0.4.6.post5-cu124 ...` line names
    by its image tag (None: no such word, or a tag like `latest`)."""
    for word in words:
        image, colon, tag = word.rpartition(":")
        if colon and image.rpartition("/")[2] == "sglang" and "/" not in tag:
            match = re.fullmatch(r"v?(\d+\.\d+\.\d+(?:\.post\d+)?)(?:-.*)?", tag)
            return match.group(1) if match else None
    return None
