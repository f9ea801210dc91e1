"""Pasted launch lines read as vLLM 0.33's FlexibleArgumentParser reads them: `--config` YAML
files, `-O3`, dotted `--name.key` values, nargs="+" lists, `--max-model-len auto` and vLLM's
human-readable integers (and its refusals), CUDA_VISIBLE_DEVICES against the parallel sizes,
docker options with values and `--env-file`, the whole line as one quoted word."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import vramplan
from vramplan.launch import parse_command, to_knobs

MODEL = "meta-llama/Llama-3.1-8B-Instruct"


def _check(*words: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vramplan", "check", "--gpu", "H100-80GB", "--json", "--", *words],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"},
    )


def test_a_config_file_is_read_and_the_command_line_wins(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.yaml").write_text(
        "max-model-len: 65536\nmax_num_seqs: 512\nenforce-eager: true\n"
        "compilation-config:\n  cudagraph_mode: FULL\nserved-model-name: [a, b]\n"
    )
    launch = parse_command(f"vllm serve {MODEL} --config cfg.yaml --max-num-seqs 64")
    assert launch.args["max_model_len"] == "65536"
    assert launch.args["max_num_seqs"] == "64"  # the command line wins over the file
    assert launch.args["enforce_eager"] is True
    assert json.loads(launch.args["compilation_config"]) == {"cudagraph_mode": "FULL"}
    assert launch.args["served_model_name"] == ["a", "b"]


def test_a_config_file_changes_the_verdict_as_inline_flags_do(tmp_path: Path) -> None:
    (tmp_path / "big.yaml").write_text("max-model-len: 131072\nmax-num-seqs: 256\n")
    inline = _check(
        "vllm", "serve", MODEL, "--max-model-len", "131072", "--max-num-seqs", "256", cwd=tmp_path
    )
    from_file = _check("vllm", "serve", MODEL, "--config", "big.yaml", cwd=tmp_path)
    assert from_file.returncode == inline.returncode, from_file.stderr
    verdict = [json.loads(done.stdout)["as_written"]["verdict"] for done in (inline, from_file)]
    assert verdict[0] == verdict[1]


@pytest.mark.parametrize(
    ("config", "named"),
    [("cfg.json", "YAML config file"), ("missing.yaml", "missing.yaml"), ("list.yaml", "mapping")],
)
def test_a_bad_config_file_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, config: str, named: str
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.json").write_text("{}")
    (tmp_path / "list.yaml").write_text("- a\n- b\n")
    with pytest.raises(vramplan.Error, match=named):
        parse_command(f"vllm serve {MODEL} --config {config}")


@pytest.mark.parametrize("form", ["-O3", "-O=3", "-O 3"])
def test_dash_o_is_the_optimization_level(form: str) -> None:
    launch = parse_command(f"vllm serve {MODEL} {form} --max-model-len 8192")
    assert launch.args == {"optimization_level": "3", "max_model_len": "8192"}


def test_dotted_keys_merge_into_one_json_value() -> None:
    launch = parse_command(
        f"vllm serve {MODEL} --compilation-config.cudagraph_mode FULL "
        "--compilation-config.pass_config.fuse_norm_quant=true "
        "--compilation-config.cudagraph_capture_sizes+ 1,2,4 --max-model-len 8192"
    )
    assert json.loads(launch.args["compilation_config"]) == {
        "cudagraph_mode": "FULL",
        "pass_config": {"fuse_norm_quant": True},
        "cudagraph_capture_sizes": ["1", "2", "4"],
    }
    with pytest.raises(vramplan.Error, match="no-such-config"):
        parse_command(f"vllm serve {MODEL} --no-such-config.x 1")


def test_list_arguments_take_several_words() -> None:
    launch = parse_command(f"vllm serve {MODEL} --served-model-name a b c --max-model-len 8192")
    assert launch.args["served_model_name"] == ["a", "b", "c"]
    assert launch.args["max_model_len"] == "8192"
    with pytest.raises(vramplan.Error, match="expected at least one value"):
        parse_command(f"vllm serve {MODEL} --max-model-len 8192 --served-model-name")


@pytest.mark.parametrize("value", ["auto", "-1"])
def test_max_model_len_auto_plans_the_longest_context_that_fits(value: str, tmp_path: Path) -> None:
    read = to_knobs(parse_command(f"vllm serve {MODEL} --max-model-len {value}").args)
    assert read.context_auto
    assert "max_model_len" not in read.knobs
    done = _check("vllm", "serve", MODEL, "--max-model-len", value, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["max_model_len"] > 0


@pytest.mark.parametrize(
    ("flag", "value", "expected"),
    [
        ("--max-model-len", "32k", 32000),
        ("--max-model-len", "32K", 32768),
        ("--max-model-len", "25.6k", 25600),
        ("--max-num-batched-tokens", "2K", 2048),
        ("--max-num-seqs", "64", 64),
    ],
)
def test_human_readable_integers_as_vllm_reads_them(flag: str, value: str, expected: int) -> None:
    read = to_knobs(parse_command(f"vllm serve {MODEL} {flag} {value}").args)
    assert expected in read.knobs.values()


@pytest.mark.parametrize(
    ("flag", "value", "reason"),
    [
        ("--max-model-len", "1.5K", "decimals are not allowed with binary suffixes"),
        ("--max-model-len", "8192.0", "expected an integer"),
        ("--max-num-seqs", "1k", "only for"),
    ],
)
def test_values_vllm_refuses_are_refused_with_its_reason(
    flag: str, value: str, reason: str
) -> None:
    with pytest.raises(vramplan.Error, match=reason):
        to_knobs(parse_command(f"vllm serve {MODEL} {flag} {value}").args)


@pytest.mark.parametrize("flag", ["-tp", "-pp", "--data-parallel-size"])
def test_a_parallel_size_below_one_is_named_by_its_flag(flag: str) -> None:
    with pytest.raises(vramplan.Error, match="expected a positive integer"):
        to_knobs(parse_command(f"vllm serve {MODEL} {flag} 0").args)


def test_a_model_given_twice_is_refused() -> None:
    with pytest.raises(vramplan.Error, match="names two models"):
        parse_command(f"vllm serve org/other --model {MODEL}")


def test_visible_devices_fewer_than_the_parallel_sizes_are_refused() -> None:
    launch = parse_command(f"CUDA_VISIBLE_DEVICES=0,1 vllm serve {MODEL} -tp 4")
    with pytest.raises(vramplan.Error, match="shows 2 GPU"):
        to_knobs(launch.args, env=launch.env)
    launch = parse_command(f"CUDA_VISIBLE_DEVICES=0,1,2,3 vllm serve {MODEL} -tp 2 -pp 2")
    assert to_knobs(launch.args, env=launch.env).num_gpus == 4


def test_docker_options_with_values_and_env_files(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "vllm.env").write_text(
        '# the runner\nVLLM_USE_V2_MODEL_RUNNER=0\n\nQUOTED="kept as written"\n'
    )
    launch = parse_command(
        "docker run --pid host --cgroupns host -it --rm --env-file vllm.env --gpus all "
        f"--stop-signal SIGINT vllm/vllm-openai:v0.20.0 --model {MODEL} --max-model-len 8192"
    )
    assert launch.image_version == "0.20.0"  # --pid's value did not shift the image
    assert launch.model == MODEL
    assert launch.env == {"VLLM_USE_V2_MODEL_RUNNER": "0", "QUOTED": '"kept as written"'}
    assert launch.args == {"max_model_len": "8192"}


def test_the_whole_line_as_one_quoted_word(tmp_path: Path) -> None:
    launch = parse_command([f"vllm serve {MODEL} -tp 2 --max-model-len 8192"])
    assert launch.model == MODEL
    assert launch.args == {"tensor_parallel_size": "2", "max_model_len": "8192"}
    done = _check(f"vllm serve {MODEL} --max-model-len 8192", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


@pytest.mark.parametrize(
    "line",
    [
        ["CUDA_VISIBLE_DEVICES=0", "python", "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B"],
        ["env", "SGLANG_X=1", "sglang", "serve", "--model-path", "Qwen/Qwen3-8B"],
        ["docker", "run", "--gpus", "all", "--shm-size", "32g", "lmsysorg/sglang:latest", "python3",
         "-m", "sglang.launch_server", "--model-path", "Qwen/Qwen3-8B"],
        ["python -m sglang.launch_server --model-path Qwen/Qwen3-8B"],
    ],
)  # fmt: skip
def test_sglang_in_every_form_is_judged_as_sglang(line: list[str], tmp_path: Path) -> None:
    done = _check(*line, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert "sglang_version" in json.loads(done.stdout)
