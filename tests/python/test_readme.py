"""Every command block of README.md runs, placeholders substituted, and its shown output is what
the command prints. Nothing is skipped and nothing reaches the network or needs a GPU: the
setup and test scripts run against fakes of apt, pip, cmake and ctest (their own logic is what
runs), `vllm` and SGLang's server are fakes that print their arguments, `--gpu auto` and
`probe` read a saved nvidia-smi CSV through a fake `nvidia-smi`, and every file a command
names is a local one (tests/data)."""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
README = ROOT / "README.md"
LLAMA = "meta-llama/Llama-3.1-8B-Instruct"

# Placeholders by the flag before them ("--gpu G"), then alone ("MODEL"): the first match wins.
FLAG_VALUES = {
    "--gpu": "L4",
    "--gpus": "L4,H100",
    "--num-gpus": "1",
    "--tp": "1",
    "--pp": "1",
    "--tp-size": "1",
    "--context": "8192",
    "--context-length": "8192",
    "--concurrency": "4",
    "--engine-version": "0.19.0",
    "--sglang-version": "0.4.3.post4",
    "--prefix-tokens": "500",
    "--request-seconds": "20",
    "--runtime-headroom-gib": "1",
    "--mem-fraction-static": "0.85",
    "--revision": "main",
    "--model": "Qwen/Qwen3-8B",
    "--model-path": "Qwen/Qwen3-8B",
    "--dmesg": "kernel.dmesg",
    "--out": "options.csv",
}
WORDS = {
    "ORG/MODEL": "Qwen/Qwen3-8B",
    "MODEL_A": "Qwen/Qwen3-8B",
    "MODEL_B": "Qwen/Qwen3-0.6B",
    "MODEL": "Qwen/Qwen3-8B",
    "M": "Qwen/Qwen3-8B",
    "TERM": "non_torch",
    "FILE": "kernel.dmesg",
    "LOG1": "tp1.log",
    "LOG2": "tp2.log",
    "LOG": "tp1.log",
    "G1,G2": "L4,H100",
    "L,L": "8192,8192",
}
# Lines that replay a log: the model and GPU the log ran (Llama-3.1-8B on an H100 at 0.19.0;
# SGLang's r01, Qwen2.5-7B on four L4s).
LINE_VALUES = {
    "validate vllm-startup.log": {"--model": LLAMA, "--gpu": "H100-80GB"},
    "diagnose vllm.log": {"--model": LLAMA, "--gpu": "H100-80GB"},
    "calibrate LOG": {"--gpu": "H100-80GB"},
    "--profile profile.yaml": {"MODEL": LLAMA, "--gpu": "H100-80GB"},
    "validate --engine sglang": {"--gpu": "L4", "--model": "Qwen/Qwen2.5-7B-Instruct"},
}
# README commands that fail today, each with the failure (xfail strict: once fixed, the test
# fails until its entry goes). None does.
KNOWN_FAILURES: dict[str, str] = {}
# Named refusals a command may give here: a format whose optional dependency is absent.
OPTIONAL = {"grid.parquet": "needs pyarrow"}


def blocks() -> list[tuple[str, int, list[str]]]:
    """README's fenced blocks: (language, first line number, lines)."""
    out: list[tuple[str, int, list[str]]] = []
    lines = README.read_text().splitlines()
    opened: tuple[str, int] | None = None
    body: list[str] = []
    for number, line in enumerate(lines, start=1):
        if line.startswith("```"):
            if opened is None:
                opened, body = (line[3:].strip(), number + 1), []
            else:
                out.append((opened[0], opened[1], body))
                opened = None
        elif opened is not None:
            body.append(line)
    return out


def _alternatives(line: str) -> list[str]:
    """A line's commands: `a | b | c` after a subcommand names three commands; `x|y` in a word
    is either; every combination runs."""
    if " | " in line:
        head, _, rest = line.partition(" | ")
        stem, _, first = head.rpartition(" ")
        return [f"{stem} {word}" for word in [first, *rest.split(" | ")]]
    parts = re.split(r"(\S+\|\S+)", line)
    choices = [p.split("|") if i % 2 else [p] for i, p in enumerate(parts)]
    # Each alternative once (the i-th command takes each word's i-th), not every combination.
    return [
        "".join(words[min(i, len(words) - 1)] for words in choices)
        for i in range(max(len(words) for words in choices))
    ]


def _optional(line: str) -> list[str]:
    """Optional parts ([...]) are run too; `[--json|--out FILE]` is either flag."""
    group = re.search(r"\[([^\[\]]*)\]", line)
    if group is None:
        return [line]
    first, *others = group.group(1).split("|")
    if others and all(o.startswith("--") for o in others):
        choices = [first, *others]
    else:
        choices = [group.group(1)]
    return [
        expanded
        for choice in choices
        for expanded in _optional(line[: group.start()] + choice + line[group.end() :])
    ]


# The README's placeholder words; anything else (L4, H100, 2) is a value as written.
PLACEHOLDER = r"(?:G|N|L|C|V|T|F|R|ID|FILE|M|MODEL)(?![\w/.,-])"


def substitute(line: str) -> list[str]:
    """The runnable commands a README line stands for."""
    line = re.sub(r"\s+#\s.*$", "", line).strip()  # the comment
    line = re.sub(r"\s\.\.\.(?=[\s)]|$)", "", line)  # "and more flags"
    values = dict(FLAG_VALUES)
    words = dict(WORDS)
    for key, override in LINE_VALUES.items():
        if key in line:
            values.update({k: v for k, v in override.items() if k.startswith("--")})
            words.update({k: v for k, v in override.items() if not k.startswith("--")})
    for word in ("G1,G2", "L,L"):  # lists of placeholders first
        line = line.replace(word, words[word])
    for flag, value in values.items():
        line = re.sub(rf"(?<![^\s\[|]){re.escape(flag)} {PLACEHOLDER}", f"{flag} {value}", line)
    for word, value in words.items():
        line = re.sub(rf"(?<![\w/.-]){re.escape(word)}(?![\w/.-])", value, line)
    return [command for part in _optional(line) for command in _alternatives(part)]


def _script(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


FAKE_PYTHON = """#!/bin/sh
# python3 / .venv/bin/python: the test's interpreter, but no pip, venv, pytest or mypy run.
case "$1 $2" in
  "-m venv")
    for dir; do :; done
    mkdir -p "$dir/bin" && cp "$0" "$dir/bin/python" && exit 0 ;;
  "-m pip")
    echo "  [1/2] Building CXX object (fake)"; echo "  [2/2] Linking CXX module (fake)"; exit 0 ;;
  "-m mypy") exit 0 ;;
  "-m pytest")
    for word; do case "$word" in --junitxml=*) xml=${word#--junitxml=} ;; esac; done
    echo '<testsuite tests="3" failures="0" errors="0" skipped="0"/>' > "$xml"; exit 0 ;;
  "-m sglang.launch_server") echo "sglang.launch_server $*"; exit 0 ;;
esac
exec REAL "$@"
"""


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A folder with the files the README's commands name and fakes on PATH; the environment
    that runs them offline."""
    work = tmp_path_factory.mktemp("readme")
    fakes = work / "fake-bin"
    fakes.mkdir()
    _script(fakes / "python3", FAKE_PYTHON.replace("REAL", sys.executable))
    shutil.copy(fakes / "python3", fakes / "python")
    _script(fakes / "vllm", '#!/bin/sh\necho "vllm $*"\n')
    _script(fakes / "dpkg-query", '#!/bin/sh\necho "install ok installed"\n')
    _script(fakes / "cmake", "#!/bin/sh\nexit 0\n")
    _script(fakes / "ctest", '#!/bin/sh\necho "100% tests passed, 0 tests failed out of 2"\n')
    smi = DATA / "diagnose" / "nvidia_smi_rtx5090_desktop.csv"
    _script(fakes / "nvidia-smi", f"#!/bin/sh\ncat '{smi}'\n")
    # The scripts run from a copy of the tree's scripts/, with a fuzz run that passes.
    (work / "scripts").mkdir()
    for name in ("setup.sh", "test.sh"):
        shutil.copy(ROOT / "scripts" / name, work / "scripts" / name)
    _script(work / "scripts" / "fuzz.sh", "#!/bin/sh\nexit 0\n")
    calibration = DATA / "calibration"
    for name, source in {
        "tp1.log": calibration / "llama31_8b_h100_v019_tp1.log",
        "tp2.log": calibration / "llama31_8b_h100_v019_tp2.log",
        "vllm-startup.log": calibration / "llama31_8b_h100_v019_tp1.log",
        "vllm.log": DATA / "diagnose" / "v019_llama8b_started.log",
        "kernel.dmesg": DATA / "diagnose" / "vllm54237_global_oom.dmesg",
        "sglang.log": DATA / "sglang" / "logs" / "sgl-r01.log",
    }.items():
        shutil.copy(source, work / name)
    (work / "tests" / "data" / "measured").mkdir(parents=True)
    shutil.copy(DATA / "measured" / "dev.jsonl", work / "tests" / "data" / "measured")
    (work / "prices.csv").write_text("gpu,usd_per_hour\nL4,0.70\nA100-40GB,1.60\nH100,2.50\n")
    (work / "llm_kwargs.yaml").write_text("model: Qwen/Qwen3-8B\nmax_model_len: 16384\n")
    (work / "requests.csv").write_text(
        "prompt_tokens,output_tokens\n"
        + "".join(f"{900 + 50 * i},{200 + 20 * i}\n" for i in range(40))
    )
    config = DATA / "configs" / "Qwen__Qwen3-8B.json"
    checkpoint = work / "path" / "to" / "checkpoint"
    checkpoint.mkdir(parents=True)
    shutil.copy(config, checkpoint / "config.json")
    # A Hugging Face cache entry of Qwen3-8B at `main`, for --revision main --offline.
    entry = work / "hf" / "hub" / "models--Qwen--Qwen3-8B"
    commit = "0" * 40
    (entry / "refs").mkdir(parents=True)
    (entry / "refs" / "main").write_text(commit)
    (entry / "snapshots" / commit).mkdir(parents=True)
    shutil.copy(config, entry / "snapshots" / commit / "config.json")
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("HF_", "CUDA_", "VLLM_")) and k != "COLUMNS"
    }
    env.update(
        PATH=f"{fakes}{os.pathsep}{env['PATH']}",
        HF_HOME=str(work / "hf"),
        HF_HUB_OFFLINE="1",
        PYTHONPATH="",
    )
    env.pop("PYTHON", None)
    return work, env


def run(command: str, workspace: tuple[Path, dict[str, str]]) -> subprocess.CompletedProcess[str]:
    work, env = workspace
    with (work / "kernel.dmesg").open() as stdin:  # `--dmesg -` reads it
        return subprocess.run(
            ["bash", "-c", command],
            cwd=work,
            env=env,
            stdin=stdin,
            capture_output=True,
            text=True,
            check=False,
            timeout=300,
        )


def _commands() -> list[tuple[str, str, list[str]]]:
    """(id, command, shown output) for every command of every bash block; a block's shown
    output (a plain block right after it) belongs to its first command."""
    found = []
    listing = blocks()
    for index, (language, start, lines) in enumerate(listing):
        if language != "bash":
            continue
        follows = listing[index + 1] if index + 1 < len(listing) else None
        shown = (
            follows[2]
            if follows and follows[0] == "" and follows[1] == start + len(lines) + 3
            else []
        )
        first = True
        for offset, line in enumerate(lines):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            for number, command in enumerate(substitute(line)):
                found.append((f"README:{start + offset}.{number}", command, shown if first else []))
            first = False
    return found


COMMANDS = _commands()


def _params() -> list[object]:
    params = []
    for name, command, shown in COMMANDS:
        known = next((why for key, why in KNOWN_FAILURES.items() if key in command), None)
        marks = [pytest.mark.xfail(reason=known, strict=True)] if known else []
        params.append(pytest.param(command, shown, id=name, marks=marks))
    return params


@pytest.mark.parametrize(("command", "shown"), _params())
def test_readme_command_runs_and_prints_what_the_readme_shows(
    command: str, shown: list[str], workspace: tuple[Path, dict[str, str]]
) -> None:
    done = run(command, workspace)
    refusal = next((why for word, why in OPTIONAL.items() if word in command), None)
    if refusal and done.returncode == 2 and refusal in done.stderr:
        return  # the optional dependency is absent here: its named refusal
    assert done.returncode in (0, 1), f"{command}\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}"
    assert "Traceback" not in done.stderr
    assert "error:" not in done.stderr, done.stderr  # an inner $(...) that failed
    for line in shown:
        assert line in done.stdout.splitlines(), (
            f"README shows {line!r}; {command} prints:\n{done.stdout}"
        )


def test_every_readme_block_is_run() -> None:
    """Both bash blocks and the Python block: the first screen's two commands with their shown
    output, the command reference, the Python example."""
    languages = [language for language, _, _ in blocks()]
    assert languages.count("bash") == 2
    assert languages.count("python") == 1
    assert COMMANDS[0][2], "the first command's shown output is compared"
    assert len(COMMANDS) > 40


def test_readme_python_block_runs(workspace: tuple[Path, dict[str, str]]) -> None:
    [code] = [lines for language, _, lines in blocks() if language == "python"]
    work, env = workspace
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(code)],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "services:" in done.stdout  # the compose file colocate prints


def test_readme_states_no_timing_figure_of_its_own() -> None:
    """Speed figures come from the benchmarks (benchmarks/bench_python.py, vramplan_bench) on
    the machine that runs them, never as prose that goes stale ("836 launches in 40 to 90 ms"
    once stood here while fit took 2.6-6.7 s)."""
    figure = re.compile(r"\b\d[\d.,]*\s*(?:ms|us|µs|ns|s|seconds|minutes|M/s|launches/s)\b")
    prose = re.sub(r"```.*?```", "", README.read_text(), flags=re.DOTALL)
    assert figure.findall(prose) == []
