"""Launches as users write them: the seeds' own command lines and flags judged as
written, then fixed keeping the user's settings; argv-safe flag output in every format; every
flag name vramplan emits or accepts is one of vLLM's for the release planned."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import vramplan
from vramplan.cli import FORMATS, main
from vramplan.launch import boolean_options, engine_arg_names, parse_command, parse_flags

DATA = Path(__file__).resolve().parents[1] / "data"
SEEDS = DATA / "seeds"
ROOT = Path(__file__).resolve().parents[2]
SEED_002_MODEL = "cyankiwi/Qwen3.6-27B-AWQ-INT4"


def _seed_002_flags() -> list[str]:
    """The flag lines of 002_params.txt, split as a shell would."""
    text = (SEEDS / "002_params.txt").read_text(encoding="utf-8")
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("--")]
    return shlex.split(" ".join(lines))


@pytest.fixture
def seed_002_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Hugging Face cache holding only seed 002's config (see tests/data/seeds/README.md)."""
    config = json.loads((DATA / "configs" / "Qwen__Qwen3.5-27B.json").read_text())
    config["quantization_config"] = {
        "quant_method": "compressed-tensors",
        "format": "pack-quantized",
        "config_groups": {
            "group_0": {
                "targets": ["Linear"],
                "weights": {
                    "num_bits": 4,
                    "type": "int",
                    "symmetric": True,
                    "group_size": 32,
                    "strategy": "group",
                },
                "input_activations": None,
            }
        },
        "ignore": ["lm_head"],
    }
    entry = tmp_path / "hub" / ("models--" + SEED_002_MODEL.replace("/", "--"))
    snapshot = entry / "snapshots" / "0123456789abcdef0123456789abcdef01234567"
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_text(json.dumps(config))
    (entry / "refs").mkdir()
    (entry / "refs" / "main").write_text(snapshot.name)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("VRAMPLAN_CACHE", str(tmp_path / "vramplan"))
    return tmp_path / "hub"


def test_seed_002_as_written_fails_in_graph_profiling_and_the_fix_keeps_the_users_settings(
    seed_002_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The user's docker launch with their own flags, judged exactly as written.
    command = [
        "docker",
        "run",
        "--gpus",
        "all",
        "vllm/vllm-openai:latest",
        SEED_002_MODEL,
        *_seed_002_flags(),
    ]
    code = main(["check", "--gpu", "RTX-5090", "--json", "--", *command])
    data = json.loads(capsys.readouterr().out)
    assert code == 1  # the launch as written does not start
    assert data["as_written"]["fits"] is False
    assert data["as_written"]["outcome"] == "cudagraph_profiling_oom"
    assert "profile_cudagraph_memory" in data["as_written"]["verdict"]
    # It cannot be fixed by utilization: the verdict says so rather than suggesting it.
    assert "lowering gpu_memory_utilization cannot help" in data["as_written"]["verdict"]
    assert data["fits"] is True
    args = data["vllm_argv"]
    # The fix keeps 16k, fp8 KV, MTP with 2 tokens, language-model-only and util 0.8 ...
    assert args[args.index("--max-model-len") + 1] == "16384"
    assert args[args.index("--kv-cache-dtype") + 1] == "fp8"
    speculative = json.loads(args[args.index("--speculative-config") + 1])
    assert speculative == {"method": "mtp", "num_speculative_tokens": 2}
    assert "--language-model-only" in args
    assert args[args.index("--gpu-memory-utilization") + 1] == "0.80"
    # The flags with no memory effect stay in the command: it is still the user's launch.
    assert args[args.index("--tool-call-parser") + 1] == "qwen3_coder"
    assert args[args.index("--reasoning-parser") + 1] == "qwen3"
    assert {"--enable-prefix-caching", "--enable-chunked-prefill"} <= set(args)
    assert "--enable-auto-tool-choice" in shlex.split(data["vllm_args"])
    # ... and says what it changed (the sequence count the user left at vLLM's default).
    changed = {c["knob"]: c for c in data["changed"]}
    assert set(changed) == {"max_num_seqs"}
    assert int(changed["max_num_seqs"]["value"]) < int(changed["max_num_seqs"]["before"])
    # The user's other flags are vLLM's and are listed once as having no memory effect.
    # --enable-chunked-prefill is a knob (V1 chunks anyway; the fix writes it back as given).
    assert set(data["no_memory_effect"]) == {
        "enable_prefix_caching",
        "enable_auto_tool_choice",
        "tool_call_parser",
        "reasoning_parser",
    }
    assert data["served_model"] == SEED_002_MODEL


def test_seed_000_diagnose_plans_the_pasted_launch_and_fp8_weights_fit() -> None:
    # The log starts with the pasted command line: TP=2, 32k, util 0.92. The model it names,
    # Qwen/Qwen3-32B-Instruct, is not a Hub id; the post's model is Qwen/Qwen3-32B (--model).
    result = vramplan.diagnose(
        SEEDS / "000_vllm.log",
        dmesg=SEEDS / "000_dmesg.txt",
        model="Qwen/Qwen3-32B",
        gpu="RTX-4090",
    )
    assert result["pasted_command"]["model"] == "Qwen/Qwen3-32B-Instruct"
    launch = result["launch"]
    assert launch["tensor_parallel_size"] == 2
    assert launch["max_model_len"] == 32768
    assert launch["gpu_memory_utilization"] == 0.92
    fix = result.fix
    assert fix is not None
    assert fix["as_written"]["fits"] is False
    assert fix["as_written"]["outcome"] == "oom_at_load"
    # fp8 weights (16 GiB/rank) leave 0.92 x 23.64 - 16 - 0.38 non-torch (two PCIe cards: no
    # NVLink buffers) - activation = 4.7 GiB of KV per rank, above the 4 GiB one 32k request
    # needs (32768 x 64 layers x 4 KV heads/rank x 128 x 2 x 2 B): that change alone fits.
    alone = [r for r in fix["remedies"] if r["kind"] == "quantized_weights"]
    assert alone, fix["remedies"]
    best = alone[0]
    assert best["fits"]
    assert not best["drops"]
    # Replayed independently: the remedy's own flags start at TP=2, 32k, util 0.92.
    knobs = parse_flags(shlex.split(best["flags"]))
    assert knobs["tensor_parallel_size"] == "2"
    assert knobs["max_model_len"] == "32768"
    assert knobs["gpu_memory_utilization"] == "0.92"
    replayed = vramplan.breakdown(
        "Qwen/Qwen3-32B",
        "RTX-4090",
        tensor_parallel_size=2,
        max_model_len=32768,
        gpu_memory_utilization=0.92,
        quantization="fp8",
        max_num_seqs=int(knobs["max_num_seqs"]),
        max_num_batched_tokens=int(knobs["max_num_batched_tokens"]),
    )
    assert replayed.outcome == "started"


def test_seed_000_diagnose_sets_the_killed_rss_against_the_plans_host_need() -> None:
    """dmesg's anon-rss:128923312kB (122.95 GiB) against the plan's host need for TP 2: API
    server 1.5 + engine core 1.5 + 2 x 3 GiB workers, 2 x the largest tensor staged (the
    embedding, 151936 x 5120 x 2 B) and 2 x 5 B x 256 x 32768 of token ids. The gap is two
    copies of the 32.8 B-parameter bf16 checkpoint, one per worker, and the utilization has
    nothing to do with it."""
    result = vramplan.diagnose(
        SEEDS / "000_vllm.log",
        dmesg=SEEDS / "000_dmesg.txt",
        model="Qwen/Qwen3-32B",
        gpu="RTX-4090",
    )
    host = result.fix["host_oom"]
    planned = 9 * 2**30 + 2 * 151_936 * 5_120 * 2 + 2 * 5 * 256 * 32_768
    assert host["planned_required_bytes"] == planned
    assert host["killed_anon_bytes"] == 128_923_312 * 1024
    assert host["gap_bytes"] == 128_923_312 * 1024 - planned
    checkpoint = vramplan.breakdown("Qwen/Qwen3-32B", "RTX-4090").host.page_cache_bytes
    assert host["checkpoint_copies"] == pytest.approx(128_923_312 * 1024 / checkpoint)
    assert 1.95 < host["checkpoint_copies"] < 2.05
    explanation = host["explanation"]
    assert "matches the 2-worker launch" in explanation
    assert "Lowering --gpu-memory-utilization cannot help" in explanation
    assert "122.95 GiB anonymous" in explanation
    text = sys.modules["vramplan.diagnose"].format_text(result)
    assert f"host RAM against the plan: {explanation}" in text


def _emitted_launches() -> list[list[str]]:
    """Flag lines for launches with every kind of value: JSON objects, GiB floats, bools."""
    return [
        ["google/gemma-3-12b-it", "--gpu", "H100-80GB", "--limit-mm-per-prompt", '{"image": 2}'],
        [
            "Qwen/Qwen3-8B",
            "--gpu",
            "L4",
            "--speculative-config",
            '{"method": "eagle3", "num_speculative_tokens": 3, "model": "Qwen/Qwen3-0.6B"}',
        ],
        ["meta-llama/Llama-3.1-8B-Instruct", "--gpu", "RTX-4090", "--cpu-offload-gb", "4"],
        ["Qwen/Qwen3-30B-A3B", "--gpu", "H100-80GB", "--tp", "2", "--enforce-eager"],
    ]


@pytest.mark.parametrize("launch", _emitted_launches())
def test_every_flag_line_splits_as_bash_does_and_json_values_parse(
    launch: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["flags", *launch]) == 0
    line = capsys.readouterr().out.strip()
    # `vllm serve M $(vramplan flags ...)`: unquoted word splitting, no quote removal.
    words = line.split()
    assert any(word.startswith("{") for word in words) == any("{" in a for a in launch)
    for flag, value in zip(words, [*words[1:], ""]):
        if value.startswith("{"):
            assert isinstance(json.loads(value), dict), (flag, value)
    # The shell form, pasted: shlex gives the same argv back.
    assert main(["flags", *launch, "--format", "shell"]) == 0
    shell = shlex.split(capsys.readouterr().out.strip())
    assert shell[:3] == ["vllm", "serve", launch[0]]
    assert shell[3:] == line.split()


def test_flags_in_a_real_shell_reach_vllm_as_json() -> None:
    script = (
        f"{sys.executable} -m vramplan flags google/gemma-3-12b-it --gpu H100-80GB "
        "--limit-mm-per-prompt '{\"image\": 2}' > /tmp/.unused 2>&1; "
        f"set -- $({sys.executable} -m vramplan flags google/gemma-3-12b-it --gpu H100-80GB "
        "--limit-mm-per-prompt '{\"image\": 2}'); "
        'while [ $# -gt 0 ]; do if [ "$1" = --limit-mm-per-prompt ]; then echo "$2"; fi; '
        "shift; done"
    )
    out = subprocess.run(
        ["bash", "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert json.loads(out.stdout.strip()) == {"image": 2}


@pytest.mark.parametrize("fmt", FORMATS)
def test_each_output_format(fmt: str, capsys: pytest.CaptureFixture[str]) -> None:
    model = "meta-llama/Llama-3.1-70B-Instruct"
    argv = [
        "flags",
        model,
        "--gpu",
        "H100-80GB",
        "--tp",
        "4",
        "--max-model-len",
        "8192",
        "--engine-version",
        "0.10.0",
        "--enforce-eager",
        "--format",
        fmt,
    ]
    assert main(argv) == 0
    out = capsys.readouterr().out
    flags = ["--tensor-parallel-size", "4", "--max-model-len", "8192", "--enforce-eager"]
    if fmt == "args":
        words = out.split()
        assert all(f in words for f in flags)
        assert model not in out  # flags only: the model is the user's own word
    elif fmt == "shell":
        words = shlex.split(out)
        assert words[:3] == ["vllm", "serve", model]
        assert all(f in words for f in flags)
    elif fmt == "json":
        data = json.loads(out)
        assert data["model"] == model
        assert data["vllm_argv"][: len(data["vllm_argv"])] == data["vllm_argv"]
        assert all(f in data["vllm_argv"] for f in flags)
    elif fmt == "env":
        assert out.strip() == ""  # this launch needs no environment
    elif fmt == "docker":
        words = shlex.split(out.replace("${HOME}", "/home/u"))
        assert words[:2] == ["docker", "run"]
        assert "vllm/vllm-openai:v0.10.0" in words
        assert words[words.index("--model") + 1] == model
        assert words[words.index("--gpus") + 1] == "count=4"
    else:
        import yaml

        doc = yaml.safe_load(out)
        if fmt == "compose":
            service = doc["services"]["vllm"]
            assert service["image"] == "vllm/vllm-openai:v0.10.0"
            args = service["command"]
        else:
            container = doc["spec"]["template"]["spec"]["containers"][0]
            assert container["resources"]["limits"]["nvidia.com/gpu"] == 4
            args = container["args"]
        assert args[:2] == ["--model", model]
        assert all(f in args for f in flags)


def test_env_format_carries_the_environment_only_knob(capsys: pytest.CaptureFixture[str]) -> None:
    # Before 0.12 the all-to-all backend is an environment variable, not a flag.
    argv = ["Qwen/Qwen3-30B-A3B", "--gpu", "H100-80GB", "--engine-version", "0.11.0"]
    argv += ["--data-parallel-size", "2", "--enable-expert-parallel"]
    argv += ["--all2all-backend", "pplx"]
    assert main(["flags", *argv, "--format", "env"]) == 0
    assert capsys.readouterr().out.strip() == "VLLM_ALL2ALL_BACKEND=pplx"
    assert main(["flags", *argv, "--format", "shell"]) == 0
    assert capsys.readouterr().out.startswith("VLLM_ALL2ALL_BACKEND=pplx vllm serve ")


def test_the_model_printed_is_the_one_named(capsys: pytest.CaptureFixture[str]) -> None:
    for model in ("meta-llama/Llama-3.1-70B-Instruct", "meta-llama/Llama-3.1-8B"):
        assert main(["flags", model, "--gpu", "H100-80GB", "--tp", "4", "--format", "shell"]) == 0
        assert shlex.split(capsys.readouterr().out)[2] == model


ENGINE_VERSIONS = ["0.5.0", "0.6.5", "0.8.5", "0.9.1", "0.10.0", "0.11.0", "0.19.0", "0.21.0"]
ENGINE_VERSIONS += [f"0.{minor}.0" for minor in range(22, 34)]


@pytest.mark.parametrize("version", ENGINE_VERSIONS)
def test_every_flag_emitted_or_accepted_is_vllms_for_that_release(version: str) -> None:
    names = engine_arg_names(version)
    plan = vramplan.plan(
        "meta-llama/Llama-3.1-8B-Instruct",
        "H100-80GB",
        engine_version=version,
        kv_cache_dtype="fp8",
        enforce_eager=True,
        tensor_parallel_size=2,
    )
    emitted = [w[2:].replace("-", "_") for w in plan.to_vllm_argv() if w.startswith("--")]
    assert emitted
    assert set(emitted) <= names, set(emitted) - names
    # Every vLLM-named knob vramplan accepts for this release is one of vLLM's names then.
    accepted = {str(k["kwarg"]) for k in vramplan.KNOBS if k["kwarg"]}
    switches = boolean_options(version)  # a boolean option takes no value word (0.33)
    for name in accepted & names:
        value = [] if switches.get(name) in ("negatable", "store_true") else ["1"]
        assert parse_flags([f"--{name.replace('_', '-')}", *value], version=version)
    # A flag of a later release is refused, with the nearest names, by name or by knob.
    if "kv_offloading_size" not in names:
        with pytest.raises(vramplan.ConfigError, match="not an argument of vLLM"):
            parse_flags(["--kv-offloading-size", "4"], version=version)
        with pytest.raises(vramplan.ConfigError, match="not an argument of vLLM"):
            vramplan.plan("Qwen/Qwen3-8B", "L4", engine_version=version, kv_offloading_size=4)
    # Every knob vramplan models, set where the release has its argument: the flags written
    # are that release's (the all-to-all backend before its flag is an environment variable).
    knobs: dict[str, Any] = {
        "cpu_offload_gb": 1,
        "kv_cache_dtype": "fp8",
        "enforce_eager": True,
        "max_loras": 2,
        "swap_space": 2,
        "kv_offloading_size": 2,
        "safetensors_load_strategy": "eager",
    }
    chosen = {k: v for k, v in knobs.items() if k in names}
    if "enable_lora" not in names:
        chosen.pop("max_loras", None)
    plan = vramplan.plan("Qwen/Qwen3-8B", "H100-80GB", engine_version=version, **chosen)
    emitted = {w[2:].replace("-", "_") for w in plan.to_vllm_argv() if w.startswith("--")}
    assert emitted <= names, emitted - names
    # The hybrid-model state dtypes and a fixed KV-cache size, where the release has them.
    hybrid = {
        "mamba_ssm_cache_dtype": "float32",
        "mamba_cache_dtype": "bfloat16",
        "kv_cache_memory_bytes": 8 << 30,
    }
    chosen = {k: v for k, v in hybrid.items() if k in names}
    if chosen:
        plan = vramplan.plan(
            "nvidia/NVIDIA-Nemotron-Nano-9B-v2", "H100-80GB", engine_version=version, **chosen
        )
        emitted = {w[2:].replace("-", "_") for w in plan.to_vllm_argv() if w.startswith("--")}
        assert set(chosen) <= emitted <= names, (set(chosen), emitted - names)
    # The remedies `plan` prints for a launch that cannot fit: the same.
    argv = ["plan", "Qwen/Qwen3-32B", "--gpu", "RTX-4090", "--engine-version", version]
    out = subprocess.run(
        [sys.executable, "-m", "vramplan", *argv, "--max-model-len", "32768", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    remedies = json.loads(out.stdout)["remedies"]
    assert remedies
    for remedy in remedies:
        words = {w[2:].replace("-", "_") for w in shlex.split(remedy["flags"]) if w[:2] == "--"}
        assert words <= names, (remedy["kind"], words - names)


def test_unknown_flag_exits_2_with_did_you_mean(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["plan", "Qwen/Qwen3-8B", "--gpu", "L4", "--max-model-length", "4096"]) == 2
    err = capsys.readouterr().err
    assert "did you mean --max-model-len" in err
    assert err.count("\n") == 1


def test_command_line_forms() -> None:
    served = parse_command("VLLM_ALL2ALL_BACKEND=pplx vllm serve org/m -tp 2 --max-model-len=32k")
    assert served.model == "org/m"
    assert served.env == {"VLLM_ALL2ALL_BACKEND": "pplx"}
    assert served.args == {"tensor_parallel_size": "2", "max_model_len": "32k"}
    server = parse_command(
        "$ python -m vllm.entrypoints.openai.api_server \\\n--model org/m \\\n--enforce-eager"
    )
    assert (server.form, server.model, server.args) == (
        "api_server",
        "org/m",
        {"enforce_eager": True},
    )
    docker = parse_command(
        "docker run --gpus '\"device=0,1\"' -e HF_TOKEN=x --ipc=host vllm/vllm-openai:v0.11.0 "
        "--model org/m --no-enable-prefix-caching"
    )
    assert (docker.form, docker.image_version, docker.gpus) == ("docker", "0.11.0", 2)
    assert docker.args == {"enable_prefix_caching": False}


def test_llm_kwargs_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    kwargs = {"model": "Qwen/Qwen3-8B", "max_model_len": 8192, "enable_prefix_caching": True}
    path = tmp_path / "llm.json"
    path.write_text(json.dumps(kwargs))
    assert main(["check", "--gpu", "L4", "--json", "--file", str(path)]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["as_written"]["fits"] is True
    assert data["no_memory_effect"] == ["enable_prefix_caching"]


@pytest.mark.parametrize(
    ("name", "text", "says"),
    [
        (
            "dup.yaml",
            "model: Qwen/Qwen3-8B\nmax_model_len: 8192\nmax_model_len: 65536\n",
            "duplicate key 'max_model_len'",
        ),
        (
            "dup.json",
            '{"model": "Qwen/Qwen3-8B", "max_num_seqs": 8, "max_num_seqs": 512}',
            "duplicate key 'max_num_seqs'",
        ),
        ("alias.yaml", "a: &x [1, 2]\nb: *x\n", "anchors and aliases are not accepted"),
        ("broken.yaml", "model: [unclosed\n", "not valid YAML"),
        (
            "inf.json",
            '{"model": "Qwen/Qwen3-8B", "gpu_memory_utilization": 1e400}',
            "does not fit a double",
        ),
    ],
)
def test_llm_kwargs_file_hostile(tmp_path: Path, name: str, text: str, says: str) -> None:
    """The kwargs file is a user's file: a duplicate key (which value would vLLM see?), YAML
    anchors, broken syntax and numbers past a double are named errors with the file, never a
    silent last-value-wins or a traceback."""
    from vramplan.launch import read_kwargs_file

    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(vramplan.Error, match=says) as err:
        read_kwargs_file(path)
    assert str(path) in str(err.value)


def test_llm_kwargs_file_fifo_is_refused_without_blocking(tmp_path: Path) -> None:
    from vramplan.launch import read_kwargs_file

    fifo = tmp_path / "kwargs.yaml"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came
    with pytest.raises(vramplan.Error, match="FIFO"):
        read_kwargs_file(fifo)


def test_python_api_takes_vllms_names() -> None:
    gib = 1 << 30
    by_vllm = vramplan.plan("Qwen/Qwen3-8B", "L4", cpu_offload_gb=4, enable_prefix_caching=True)
    by_alias = vramplan.plan("Qwen/Qwen3-8B", "L4", cpu_offload_bytes=4 * gib)
    assert by_vllm.to_vllm_args() == by_alias.to_vllm_args()
    assert "--cpu-offload-gb 4" in by_vllm.to_vllm_args()
    with pytest.raises(vramplan.ConfigError, match="did you mean --cpu-offload-gb"):
        vramplan.plan("Qwen/Qwen3-8B", "L4", cpu_offload_gib=4)


def _run(*argv: str, env: dict[str, Any] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "-c", " ".join(argv)],
        check=False,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )


@pytest.mark.parametrize("command", ["plan", "flags", "breakdown", "models"])
def test_closed_pipe_exits_141(command: str) -> None:
    out = _run(f"{sys.executable} -m vramplan {command} | true;", "echo ${PIPESTATUS[0]}")
    assert out.stdout.strip() == "141", out.stderr
    assert "Traceback" not in out.stderr


def test_validate_records_resolve_models_from_the_hf_cache(
    seed_002_cache: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A record of a model only in the (fake) Hugging Face cache replays as plan resolves it;
    # one in neither the database nor the cache is named as unresolved. Offline (fixture).
    base = {
        "gpu": "NVIDIA GeForce RTX 5090",
        "gpu_total_gib": 31.36,
        "vllm_version": "0.21.0",
        "tensor_parallel_size": 1,
        "max_model_len": 16384,
        "kv_cache_dtype": "fp8",
        "speculative": "mtp, num_speculative_tokens=2",
        "outcome": "started",
    }
    records = tmp_path / "records.jsonl"
    records.write_text(
        json.dumps({**base, "id": "cached", "model": SEED_002_MODEL})
        + "\n"
        + json.dumps({**base, "id": "nowhere", "model": "acme/not-cached"})
        + "\n"
    )
    main(["validate", "--records", str(records), "--json"])
    rows = {r["id"]: r for r in map(json.loads, capsys.readouterr().out.splitlines())}
    assert rows["cached"]["predicted"] is not None, rows["cached"]
    assert rows["cached"]["launch"]["num_speculative_tokens"] == 2
    assert rows["nowhere"]["predicted"] is None
    assert "acme/not-cached" in json.dumps(rows["nowhere"])


def test_validate_record_takes_other_processes_from_the_startup_free_figure() -> None:
    from vramplan.validate import replay_record

    record = {
        "id": "free",
        "model": "meta-llama/Llama-3.1-8B-Instruct",
        "gpu": "NVIDIA H100 80GB HBM3",
        "gpu_total_gib": 79.18,
        "vllm_version": "0.19.0",
        "outcome": "started",
        "error_text": "Free memory on device cuda:0 (54.34/79.18 GiB) on startup.",
    }
    replay = replay_record(record)
    assert replay.predicted is not None
    others = replay.launch["memory_used_by_others_bytes"]
    # 79.18 - 54.34 = 24.84 GiB held before vLLM started, less this process's own CUDA
    # context (0.5-1 GiB), which the planner adds itself.
    assert 23.8 * (1 << 30) < others < 24.4 * (1 << 30)


def test_seed_002_diagnose_reads_mtp_and_plans_the_users_flags(
    seed_002_cache: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The log starts after the args line: the user's flags come as overrides (as `vramplan
    # diagnose LOG --flags...` passes them); the log itself shows the MTP drafter.
    result = vramplan.diagnose(
        SEEDS / "002_vllm.log",
        model=SEED_002_MODEL,
        gpu="RTX-5090",
        overrides=parse_flags(_seed_002_flags()),
    )
    assert result.cause == "cudagraph_profiling_oom"
    assert result["detected_speculative_method"] == "mtp"
    fix = result.fix
    assert fix is not None
    assert fix["as_written"]["outcome"] == "cudagraph_profiling_oom"
    assert fix["fits"]
    args = shlex.split(fix["vllm_args"])
    assert args[args.index("--max-model-len") + 1] == "16384"
    assert args[args.index("--kv-cache-dtype") + 1] == "fp8"
    assert json.loads(args[args.index("--speculative-config") + 1]) == {
        "method": "mtp",
        "num_speculative_tokens": 2,
    }
    assert "--language-model-only" in args
    assert fix["drops"] == []
    # The user's flags with no memory effect stay in the fix, as written in 002_params.txt;
    # --enable-chunked-prefill is a planned knob, written among the planned flags.
    assert "--enable-chunked-prefill" in args
    carried = ["--enable-prefix-caching", "--enable-auto-tool-choice"]
    carried += ["--tool-call-parser", "qwen3_coder", "--reasoning-parser", "qwen3"]
    assert fix["passthrough"] == carried
    assert args[-len(carried) :] == carried
    assert fix["vllm_argv"] == args
    for remedy in fix["remedies"]:
        assert shlex.split(remedy["flags"])[-len(carried) :] == carried
    # The printed fix command too.
    argv = ["diagnose", str(SEEDS / "002_vllm.log"), "--model", SEED_002_MODEL, "--gpu", "RTX-5090"]
    assert main([*argv, *_seed_002_flags()]) in (0, 1)
    fix_line = capsys.readouterr().out.split("\nfix (", 1)[1].splitlines()[1]
    assert shlex.split(fix_line)[:3] == ["vllm", "serve", SEED_002_MODEL]
    assert shlex.split(fix_line)[-len(carried) :] == carried


@pytest.mark.parametrize(
    "offline", ["--offline", "HF_HUB_OFFLINE=1", "HF_ENDPOINT=http://127.0.0.1:9"]
)
def test_unknown_model_fails_fast_with_one_line(offline: str, tmp_path: Path) -> None:
    # Offline by flag or environment, or a Hub that refuses connections: one line (how
    # quickly: benchmarks/bench_bounds.py; a wait on the network would hit the timeout).
    import os

    env = {**os.environ, "HF_HUB_CACHE": str(tmp_path), "VRAMPLAN_CACHE": str(tmp_path / "v")}
    argv = [sys.executable, "-m", "vramplan", "plan", "acme/no-such-model"]
    if offline.startswith("--"):
        argv.append(offline)
    else:
        key, _, value = offline.partition("=")
        env[key] = value
    out = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=60, check=False)
    assert out.returncode == 2
    assert out.stderr.count("\n") == 1, out.stderr
    assert "acme/no-such-model" in out.stderr


def test_python_offline_and_revision() -> None:
    with pytest.raises(vramplan.Error, match="offline"):
        vramplan.plan("acme/no-such-model", "L4", offline=True)
    with pytest.raises(vramplan.Error):
        vramplan.breakdown("acme/no-such-model", "L4", offline=True, revision="v1")
    assert vramplan.plan("Qwen/Qwen3-8B", "L4", offline=True).fits


def test_releases_after_0_21_have_their_own_argument_lists() -> None:
    # Read from the wheels (arg_utils.py, cli_args.py): --device-memory-utilization is new in
    # 0.31.0; --max-num-partial-prefills was dropped in 0.27.0; the server's --port survives the
    # move of cli_args.py to entrypoints/launchers (0.29.0) and entrypoints/common (0.33.0).
    assert "device_memory_utilization" not in engine_arg_names("0.30.0")
    assert "device_memory_utilization" in engine_arg_names("0.31.0")
    assert "max_num_partial_prefills" in engine_arg_names("0.26.0")
    assert "max_num_partial_prefills" not in engine_arg_names("0.27.0")
    for version in ("0.28.0", "0.29.0", "0.33.0"):
        assert {"port", "host", "api_key", "tool_call_parser"} <= engine_arg_names(version)
    with pytest.raises(vramplan.ConfigError, match="not an argument of vLLM"):
        parse_flags(["--max-num-partial-prefills", "2"], version="0.33.0")
    # --device-memory-utilization is a second spelling of --gpu-memory-utilization from 0.31
    # (arg_utils.py: both flags, dest="gpu_memory_utilization"): planned as the utilization.
    args = parse_flags(["--device-memory-utilization", "0.5"], version="0.33.0")
    assert args == {"gpu_memory_utilization": "0.5"}
    with pytest.raises(vramplan.ConfigError, match="not an argument of vLLM"):
        parse_flags(["--device-memory-utilization", "0.5"], version="0.30.0")
    plan = vramplan.plan(
        "Qwen/Qwen3-8B", "H100-80GB", engine_version="0.33.0", device_memory_utilization=0.5
    )
    words = plan.to_vllm_argv()
    assert words[words.index("--gpu-memory-utilization") + 1] == "0.50"
    # vLLM's short flags: -sc is --speculative-config (0.22+ lists it).
    speculative = '{"method":"mtp","num_speculative_tokens":1}'
    assert parse_flags(["-sc", speculative], version="0.33.0") == {
        "speculative_config": speculative
    }


@pytest.mark.parametrize(("value", "runner"), [("0", "v1"), ("1", "v2")])
def test_check_reads_the_model_runner_from_the_environment(
    value: str, runner: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # 0.33 routes every model to Model Runner V2; VLLM_USE_V2_MODEL_RUNNER=0 forces V1.
    command = [f"VLLM_USE_V2_MODEL_RUNNER={value}", "vllm", "serve", "Qwen/Qwen3-8B"]
    command += ["--max-model-len", "8192"]
    assert main(["check", "--gpu", "H100-80GB", "--json", "--", *command]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["breakdown"]["model_runner"] == runner
    assert data["vllm_env"]["VLLM_USE_V2_MODEL_RUNNER"] == value
    bad = ["VLLM_USE_V2_MODEL_RUNNER=yes", *command[1:]]
    assert main(["check", "--gpu", "H100-80GB", "--", *bad]) == 2
    assert "VLLM_USE_V2_MODEL_RUNNER: expected an integer" in capsys.readouterr().err


def test_list_arguments_are_written_as_vllm_parses_them() -> None:
    from vramplan.launch import passthrough_words

    # vllm/engine/arg_utils.py gives list fields nargs="+"; cli_args.py parses
    # --allowed-origins/-methods/-headers with json.loads and appends one --middleware a flag.
    args = {
        "served_model_name": ["a", "b"],
        "allowed_origins": ["*"],
        "middleware": ["m.one", "m.two"],
        "enable_prefix_caching": False,
    }
    assert passthrough_words(args, list(args)) == [
        "--served-model-name",
        "a",
        "b",
        "--allowed-origins",
        '["*"]',
        "--middleware",
        "m.one",
        "--middleware",
        "m.two",
        "--no-enable-prefix-caching",
    ]


def test_spec_shorthand_flags_plan_the_drafter(capsys: pytest.CaptureFixture[str]) -> None:
    # 0.22+ arg_utils.py: --spec-method/--spec-model/--spec-tokens fill speculative_config's
    # method/model/num_speculative_tokens; they change memory (a drafter), so they are planned.
    command = ["vllm", "serve", "Qwen/Qwen3-8B", "--spec-method", "ngram", "--spec-tokens", "3"]
    assert main(["check", "--gpu", "H100-80GB", "--json", "--", *command]) == 0
    data = json.loads(capsys.readouterr().out)
    args = data["vllm_argv"]
    speculative = json.loads(args[args.index("--speculative-config") + 1])
    assert speculative == {"method": "ngram", "num_speculative_tokens": 3}
    assert data["no_memory_effect"] == []
    with pytest.raises(vramplan.ConfigError, match="not an argument of vLLM"):
        parse_flags(["--spec-method", "ngram"], version="0.21.0")


def test_new_arguments_with_an_unmodelled_memory_effect_say_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # --use-fp64-gumbel (0.22) doubles the sampler's noise tensor, --mm-ipc-gpu-memory-gb
    # (0.25) reserves GPU memory: accepted, and named as not modelled, not as "no effect".
    command = ["vllm", "serve", "Qwen/Qwen3-8B", "--use-fp64-gumbel"]
    command += ["--mm-ipc-gpu-memory-gb", "1", "--host", "0.0.0.0"]
    assert main(["check", "--gpu", "H100-80GB", "--json", "--", *command]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["memory_effect_not_modelled"]) == {"use_fp64_gumbel", "mm_ipc_gpu_memory_gb"}
    assert data["no_memory_effect"] == ["host"]


def test_the_argument_list_reads_as_pyyaml_reads_it(tmp_path: Path) -> None:
    """engine_args.yaml is read by the core as a file of names (every scalar its text): the
    same data PyYAML gives, and a value that is not a name is refused naming its field."""
    import yaml
    from vramplan import _core

    path = Path(__file__).resolve().parents[2] / "model_specs" / "engine_args.yaml"
    read = _core.load_yaml_names_file(str(path), "vLLM's argument list", 1 << 20)
    assert read == yaml.safe_load(path.read_text(encoding="utf-8"))
    bad = tmp_path / "names.yaml"
    bad.write_text("base: [a, b]\nreleases:\n  - release: '0.6.0'\n    adds: [c, ~]\n")
    with pytest.raises(vramplan.SpecError, match=r"releases\[0\]\.adds\[1\]"):
        _core.load_yaml_names_file(str(bad), "vLLM's argument list", 1 << 20)


def test_check_reads_the_flashinfer_sampler_from_the_environment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # vLLM reads VLLM_USE_FLASHINFER_SAMPLER as bool(int(value)); at 0.10 the V1 runner then
    # samples on FlashInfer's kernels (12 B per logit, not the native sort's 36.9): Qwen3-8B's
    # 256 x 151936 A100 sampler pass shrinks by 24.9 x 38,895,616 B.
    command = ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "2048", "--max-num-seqs", "256"]
    command += ["--gpu-memory-utilization", "0.9", "--max-num-batched-tokens", "2048"]
    args = ["check", "--gpu", "A100-80GB", "--engine-version", "0.10.1", "--json", "--"]
    peaks = {}
    for value in ("0", "1"):
        assert main([*args, f"VLLM_USE_FLASHINFER_SAMPLER={value}", *command]) == 0
        data = json.loads(capsys.readouterr().out)
        assert data["vllm_env"]["VLLM_USE_FLASHINFER_SAMPLER"] == value
        peaks[value] = data["breakdown"]["ranks"][0]["activation_peak_bytes"]
    assert abs(peaks["0"] - peaks["1"] - 24.9 * 256 * 151936) < 2
    assert (
        main(["check", "--gpu", "A100-80GB", "--", "VLLM_USE_FLASHINFER_SAMPLER=on", *command]) == 2
    )
    assert "VLLM_USE_FLASHINFER_SAMPLER: expected an integer" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("version", "words"),
    [
        # vLLM's StoreBoolean until 0.8.4 takes a value; 0.8.5+ build --no-NAME
        # (argparse.BooleanOptionalAction).
        ("0.7.1", ["--enable-chunked-prefill", "False"]),
        ("0.19.0", ["--no-enable-chunked-prefill"]),
    ],
)
def test_chunked_prefill_off_is_read_and_written_as_the_release_spells_it(
    version: str, words: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    # Off, the profile run covers a whole 16384-token prompt: max(16384, 2048) batched tokens.
    command = [
        "vllm",
        "serve",
        "meta-llama/Llama-3.1-8B-Instruct",
        "--max-model-len",
        "16384",
        *words,
    ]
    args = ["check", "--gpu", "A100-80GB", "--engine-version", version, "--json", "--"]
    assert main([*args, *command]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["llm_kwargs"]["enable_chunked_prefill"] is False
    assert data["max_num_batched_tokens"] == 16384
    argv = data["vllm_argv"]
    start = argv.index(words[0])
    assert argv[start : start + len(words)] == words


def test_lmcache_pools_come_from_the_pasted_launch_and_its_environment(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """`env LMCACHE_MAX_LOCAL_CPU_SIZE=20 vllm serve ... --kv-transfer-config '{LMCache}'` at
    TP 4: four workers, each pinning a 20 GiB LMCache pool (LMCache#2901), 80 GiB on the node;
    the variable and the JSON go back out unchanged in meaning."""
    connector = '{"kv_connector": "LMCacheConnectorV1", "kv_role": "kv_both"}'
    argv = ["check", "--gpu", "H100-80GB", "--json", "--", "env", "LMCACHE_MAX_LOCAL_CPU_SIZE=20"]
    command = ["vllm", "serve", "Qwen/Qwen3-8B", "--tensor-parallel-size", "4"]
    main([*argv, *command, "--kv-transfer-config", connector])
    data = json.loads(capsys.readouterr().out)
    assert data["breakdown"]["host"]["pinned_bytes"] == 4 * 20 * 2**30
    assert data["vllm_env"] == {"LMCACHE_MAX_LOCAL_CPU_SIZE": "20.00"}
    written = shlex.split(data["vllm_args"])
    assert json.loads(written[written.index("--kv-transfer-config") + 1]) == json.loads(connector)
    # The same launch from Python, the connector as LLM(...) takes it: a dict.
    plan = vramplan.plan(
        "Qwen/Qwen3-8B",
        "H100-80GB",
        num_gpus=4,
        tensor_parallel_size=4,
        kv_transfer_config=json.loads(connector),
    )
    assert plan.breakdown.host.pinned_bytes == 4 * 5 * 2**30  # LMCache's default 5 GiB each
    for bad in ("lots", "-1", "1e300", "inf"):
        assert main([*argv[:-1], f"LMCACHE_MAX_LOCAL_CPU_SIZE={bad}", *command]) == 2
        error = capsys.readouterr().err
        assert "LMCACHE_MAX_LOCAL_CPU_SIZE: expected a size in GiB" in error
        assert repr(bad) in error


def test_eplb_redundant_experts_in_each_releases_spelling(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """--eplb-config's num_redundant_experts (0.11+) and --num-redundant-experts (0.10) plan
    the same 288 physical experts, and each release gets its own spelling back."""
    launch = ["deepseek-ai/DeepSeek-V3", "--data-parallel-size", "8", "--enable-expert-parallel"]
    launch += ["--enable-eplb", "--max-model-len", "8192"]
    argv = ["check", "--gpu", "H200", "--json"]
    main([*argv, "--", "vllm", "serve", *launch, "--eplb-config", '{"num_redundant_experts": 32}'])
    new = json.loads(capsys.readouterr().out)
    assert "--eplb-config '{\"num_redundant_experts\":32}'" in new["vllm_args"]
    main([*argv, "--engine-version", "0.10.1", "--", "vllm", "serve", *launch])
    old_default = json.loads(capsys.readouterr().out)
    old_release = [*argv, "--engine-version", "0.10.1", "--", "vllm", "serve", *launch]
    main([*old_release, "--num-redundant-experts", "32"])
    old = json.loads(capsys.readouterr().out)
    assert "--num-redundant-experts 32" in old["vllm_args"]
    # 36 experts per rank instead of 32: the weights grow in both releases' plans.
    grown = old["breakdown"]["ranks"][0]["weights_bytes"]
    assert grown > old_default["breakdown"]["ranks"][0]["weights_bytes"]
    # Keys whose effect is not modelled are refused by name, not dropped from the line.
    config = '{"num_redundant_experts": 32, "window_size": 500}'
    assert main([*argv, "--", "vllm", "serve", *launch, "--eplb-config", config]) == 2
    assert "only num_redundant_experts is modelled (got window_size)" in capsys.readouterr().err


def test_sleep_mode_counts_the_weights_host_copy() -> None:
    # Llama-3.1-8B on one H100 asleep at level 1: each caching-allocator segment of the weights
    # backed up in its own pinned power-of-two block, 18,289,262,592 B (derived in
    # tests/cpp/test_host_ram.cpp, SleepMode); level 2 keeps the 32 MiB rotary cache only.
    model = "meta-llama/Llama-3.1-8B-Instruct"
    awake = vramplan.breakdown(model, "H100", max_model_len=8192)
    asleep = vramplan.breakdown(model, "H100", max_model_len=8192, enable_sleep_mode=True)
    level2 = vramplan.breakdown(
        model, "H100", max_model_len=8192, enable_sleep_mode=True, sleep_level=2
    )
    assert awake.host.sleep_backup_bytes == 0
    assert asleep.host.sleep_backup_bytes == 18_289_262_592
    assert asleep.host.required_bytes - awake.host.required_bytes == 18_289_262_592
    assert level2.host.sleep_backup_bytes == 32 << 20
    # A level without sleep mode: the server never sleeps, so the level is refused by name.
    with pytest.raises(vramplan.ConfigError) as error:
        vramplan.breakdown(model, "H100", max_model_len=8192, sleep_level=2)
    assert error.value.field == "sleep_level"
    assert "--enable-sleep-mode" in str(error.value)
    # The flag as vLLM spells it, pasted: the plan's host need carries the backup.
    done = _run(
        sys.executable,
        "-m",
        "vramplan",
        "check",
        "--gpu",
        "H100",
        "--json",
        "--",
        "vllm",
        "serve",
        model,
        "--max-model-len",
        "8192",
        "--enable-sleep-mode",
    )
    assert done.returncode == 0, done.stderr
    assert '"sleep_backup_bytes": 18289262592' in done.stdout
