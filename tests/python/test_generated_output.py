"""What vramplan generates for another program: every `--format` read back by its consumer
(bash's unquoted `$(...)` and `eval`, `KEY=value` readers, PyYAML with docker compose's and
Kubernetes' `$` interpolation) gives each value back exactly, or the value is refused naming
the format that carries it. Random strings come from hypothesis; the shells run in tmp_path."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from vramplan import Error, colocate, load_gpu
from vramplan._quoting import _SHELL_MANAGED, env_line, visible, yaml_comment
from vramplan.launchers import render_launch

# Any text an argument can hold: every Unicode category but surrogates, no NUL.
VALUES = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\0"))
# Shell names the launch may carry: the ones bash sets itself ("_", PWD, ...) are refused apart.
ENV_NAMES = st.from_regex(r"[A-Za-z_][A-Za-z0-9_]{0,8}", fullmatch=True).filter(
    lambda name: name not in _SHELL_MANAGED
)
BASH_RUNS = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
YAML_RUNS = settings(max_examples=300, deadline=None)
VERSION = "0.33.0"
# Llama-3.1-8B's config.json fields (as in test_hostile_input.py).
LLAMA_CONFIG = (
    '"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, '
    '"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, '
    '"intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072, '
    '"torch_dtype": "bfloat16"'
)


def _launch(fmt: str, model: str, argv: list[str], env: Mapping[str, str]) -> str:
    return render_launch(fmt, model=model, argv=argv, env=env, engine_version=VERSION, gpus=2)


def _bash(script: str, cwd: Path, env: Mapping[str, str] | None = None) -> list[str]:
    """What a bash script prints as NUL-terminated words."""
    out = subprocess.run(
        ["bash", "-c", script],
        cwd=cwd,
        capture_output=True,
        check=True,
        timeout=30,
        env={"PATH": os.environ["PATH"], "LC_ALL": "C.UTF-8", "HOME": "/home/u", **(env or {})},
    ).stdout
    return [word.decode("utf-8") for word in out.split(b"\0")[:-1]]


def _argv_of(fmt: str, text: str, tmp_path: Path, program: str, env_names: list[str]) -> list[str]:
    """The words `program` is called with when bash evals `text`, then each env value."""
    (tmp_path / "generated").write_text(text, encoding="utf-8")
    show_env = "".join(f'printf "%s\\0" "${name}"; ' for name in env_names)
    script = f'{program}() {{ printf "%s\\0" "$@"; {show_env}}}; eval "$(cat generated)"'
    return _bash(script, tmp_path)


def _carried(fmt: str, argv: list[str], env: Mapping[str, str]) -> str | None:
    """The launch in `fmt`, or None where `fmt` refuses a value naming --format shell."""
    try:
        return _launch(fmt, "m", argv, env)
    except Error as err:
        refusal = str(err)
    assert "--format shell" in refusal
    return None


@BASH_RUNS
@given(argv=st.lists(VALUES, min_size=1, max_size=4))
def test_args_words_survive_unquoted_substitution_or_are_refused(
    argv: list[str], tmp_path: Path
) -> None:
    text = _carried("args", argv, {})
    if text is None:
        return
    # Files a glob could match, and every expansion bash may apply to `$(...)` on.
    for name in ("model", "a", "x1"):
        (tmp_path / name).touch()
    (tmp_path / "generated").write_text(text, encoding="utf-8")
    script = 'shopt -s nullglob extglob; printf "%s\\0" $(cat generated)'
    assert _bash(script, tmp_path) == argv


@BASH_RUNS
@given(
    model=VALUES,
    argv=st.lists(VALUES, max_size=3),
    env=st.dictionaries(ENV_NAMES, VALUES, max_size=2),
)
def test_shell_and_docker_lines_give_every_word_back_to_eval(
    model: str, argv: list[str], env: dict[str, str], tmp_path: Path
) -> None:
    names = list(env)
    shell = _argv_of("shell", _launch("shell", model, argv, env), tmp_path, "vllm", names)
    assert shell == ["serve", model, *argv, *env.values()]
    docker = _argv_of("docker", _launch("docker", model, argv, env), tmp_path, "docker", [])
    image = docker.index(f"vllm/vllm-openai:v{VERSION}")
    assert docker[image + 1 :] == ["--model", model, *argv]
    given_env = [docker[i + 1] for i, word in enumerate(docker[:image]) if word == "-e"]
    assert given_env == [f"{k}={v}" for k, v in env.items()]
    assert "/home/u/.cache/huggingface:/root/.cache/huggingface" in docker


@BASH_RUNS
@given(env=st.dictionaries(ENV_NAMES, VALUES, min_size=1, max_size=3))
def test_env_lines_read_alike_by_every_reader_or_are_refused(
    env: dict[str, str], tmp_path: Path
) -> None:
    text = _carried("env", [], env)
    if text is None:
        return
    (tmp_path / "generated").write_text(text + "\n", encoding="utf-8")
    show = "".join(f'printf "%s\\0" "${name}"; ' for name in env)
    sourced = _bash(f"set -a; . ./generated; {show}", tmp_path)
    split = _bash(f"env $(cat generated) bash -c '{show}'", tmp_path)
    # docker's --env-file: each line split at its first `=`, nothing unquoted.
    env_file = dict(line.split("=", 1) for line in text.splitlines())
    assert sourced == split == list(env.values())
    assert env_file == env


def _compose_interpolate(text: str, environ: Mapping[str, str]) -> str:
    """docker compose's interpolation of a string: `$$` is `$`, `$NAME` / `${NAME...}` are
    substituted, and any other `$` is an error."""

    def one(match: re.Match[str]) -> str:
        if match.group(1):
            return "$"
        name = match.group(2) or match.group(3)
        if name is None:
            raise ValueError(f"invalid interpolation format in {text!r}")
        return environ[re.split(r"[:?+-]", name, maxsplit=1)[0]]

    return re.sub(r"\$(?:(\$)|\{([^}]*)\}|([A-Za-z_][A-Za-z0-9_]*)|)", one, text)


def _k8s_expand(text: str, environ: Mapping[str, str]) -> str:
    """Kubernetes' expansion of a container's args and env values: `$$` is `$`, `$(NAME)` a
    defined variable's value, anything else as written."""

    def one(match: re.Match[str]) -> str:
        if match.group(1):
            return "$"
        return environ.get(match.group(2), match.group(0))

    return re.sub(r"\$(?:(\$)|\(([^)]*)\))", one, text)


class _Everything(dict[str, str]):
    """An environment in which every variable is set: a `$NAME` that reaches it shows."""

    def __missing__(self, key: str) -> str:
        return f"<{key} injected>"

    def get(self, key: str, default: object = None) -> str:  # type: ignore[override]
        return self[key]


def _reads_back(
    doc_strings: list[str], expected: list[str], expand: Callable[[str, Mapping[str, str]], str]
) -> None:
    assert [expand(s, _Everything()) for s in doc_strings] == expected


@YAML_RUNS
@given(
    model=VALUES,
    argv=st.lists(VALUES, max_size=3),
    env=st.dictionaries(ENV_NAMES, VALUES, max_size=2),
)
def test_compose_and_k8s_give_every_value_back_after_interpolation(
    model: str, argv: list[str], env: dict[str, str]
) -> None:
    compose = _launch("compose", model, argv, env)
    assert "\\ud8" not in compose.lower()  # real UTF-8, never JSON's surrogate pairs
    service = yaml.safe_load(compose)["services"]["vllm"]
    _reads_back(service["command"], ["--model", model, *argv], _compose_interpolate)
    _reads_back(
        list(service.get("environment", {}).values()), list(env.values()), _compose_interpolate
    )
    assert list(service.get("environment", {})) == list(env)
    k8s = yaml.safe_load(_launch("k8s", model, argv, env))
    container = k8s["spec"]["template"]["spec"]["containers"][0]
    _reads_back(container["args"], ["--model", model, *argv], _k8s_expand)
    _reads_back([e["value"] for e in container["env"]], list(env.values()), _k8s_expand)
    assert [e["name"] for e in container["env"]] == list(env)


@pytest.mark.parametrize("fmt", ["shell", "docker", "compose", "k8s"])
def test_generated_text_holds_no_raw_control_character(fmt: str) -> None:
    text = _launch(fmt, "m\x1b]0;title\x07", ["--x", "a\x9bb\u2028"], {"K": "v"})
    assert not re.search(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u2028]", text), text


@pytest.mark.parametrize("fmt", ["args", "shell", "env", "docker", "compose", "k8s"])
@pytest.mark.parametrize(("value", "problem"), [("a\0b", "NUL"), ("a\udcffb", "UTF-8")])
def test_text_no_argument_can_hold_is_refused_in_every_format(
    fmt: str, value: str, problem: str
) -> None:
    with pytest.raises(Error, match=problem):
        _launch(fmt, "m", ["--x", value], {"K": "v"})


@pytest.mark.parametrize("fmt", ["shell", "env", "docker", "compose", "k8s"])
def test_an_environment_name_that_is_not_a_shell_name_is_refused(fmt: str) -> None:
    with pytest.raises(Error, match="not a shell name"):
        _launch(fmt, "m", [], {"A;touch x": "1"})


def test_yaml_comments_stay_one_line() -> None:
    comment = yaml_comment("H100\ninclude: evil.yaml\r\x1b[2J")
    assert "\n" not in comment
    assert "\r" not in comment
    assert "\x1b" not in comment
    assert yaml.safe_load(f"{comment}\nkey: 1") == {"key": 1}
    assert visible("a\tb\nc", keep_newlines=True) == "a\\x09b\nc"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vramplan", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


def test_flags_with_a_hostile_passthrough_value_in_each_format(tmp_path: Path) -> None:
    value = "a b*$HOME 😀 ${X:?} $(id)"
    launch = ["flags", "meta-llama/Llama-3.1-8B-Instruct", "--gpu", "H100-80GB"]
    launch += ["--chat-template", value]
    refused = _cli(*launch, "--format", "args", cwd=tmp_path)
    assert refused.returncode == 2
    assert "--chat-template" in refused.stderr
    assert "--format shell" in refused.stderr
    shell = _cli(*launch, "--format", "shell", cwd=tmp_path)
    assert shell.returncode == 0, shell.stderr
    words = _argv_of("shell", shell.stdout, tmp_path, "vllm", [])
    assert words[words.index("--chat-template") + 1] == value
    compose = _cli(*launch, "--format", "compose", cwd=tmp_path)
    assert "😀" in compose.stdout
    command = yaml.safe_load(compose.stdout)["services"]["vllm"]["command"]
    assert _compose_interpolate(command[command.index("--chat-template") + 1], {}) == value


def test_colocate_compose_carries_hostile_text_exactly(tmp_path: Path) -> None:
    # A local checkpoint whose path holds `$`, on a GPU whose name holds YAML on new lines.
    model = tmp_path / "m $HOME ${X:?}"
    model.mkdir()
    (model / "config.json").write_text("{" + LLAMA_CONFIG + "}", encoding="utf-8")
    gpu = load_gpu("X\ninclude: [evil.yaml]\nservices: {}", total_memory_bytes=80 << 30)
    result = colocate([str(model), str(model)], gpu, num_gpus=1)
    assert result.fits
    doc = yaml.safe_load(result.compose())
    assert set(doc) == {"services"}
    assert len(doc["services"]) == 2
    for service in doc["services"].values():
        assert _compose_interpolate(service["command"][0], _Everything()) == str(model)


@pytest.mark.parametrize("name", ["_", "SHLVL", "PWD"])
def test_env_names_the_shell_sets_itself_are_refused(name: str) -> None:
    """bash sets `_` to the previous command's last argument and SHLVL per nested shell: a
    value written for them is not what the launch sees (hypothesis found `{'_': ''}`)."""
    with pytest.raises(Error, match="the shell sets it itself"):
        env_line(name, "x")
