"""A pasted SGLang launch is read as SGLang's own parser reads it (issue 37): its options per
release (model_specs/sglang_args.yaml, read from the wheels), an unambiguous prefix taken as
the option (argparse's allow_abbrev), anything else refused as SGLang refuses it: never
"judged as if unset". Every flag below was looked up in the named wheel's
sglang/srt/server_args.py (0.4.x) or sglang/srt/arg_groups/fields/*.py (0.5.23)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import vramplan
from vramplan import _core, sglang
from vramplan.launch import sglang_image_version, sglang_option, sglang_options

MODEL = "Qwen/Qwen3-8B"
LAUNCH = ["python", "-m", "sglang.launch_server", "--model-path", MODEL]


def _image(tag: str) -> list[str]:
    return ["docker", "run", "--gpus", "all", f"lmsysorg/sglang:{tag}", "python3", "-m",
            "sglang.launch_server", "--model-path", MODEL]  # fmt: skip


def test_every_sglang_rules_row_has_its_releases_option_list() -> None:
    # The three rows of sglang.yaml (0.4.6.post5 from 0.4.0, 0.4.10.post2 from 0.4.8, 0.5.23
    # from 0.5.4): the version picks the row, the row's release picks the list.
    for version, release in [("0.4.0", "0.4.6.post5"), ("0.4.7", "0.4.6.post5"),
                             ("0.4.9", "0.4.10.post2"), ("0.5.23", "0.5.23"), (None, "0.5.23")]:  # fmt: skip
        assert _core.engine_release("sglang", version or "")["rules_release"] == release
        assert sglang_options(version)[0] == release
    # server_args.py of 0.4.6.post5 registers 145 add_argument calls with 150 option strings.
    assert len(sglang_options("0.4.6.post5")[1]) == 150


def test_the_option_list_reads_as_pyyaml_reads_it() -> None:
    import yaml

    path = Path(__file__).resolve().parents[2] / "model_specs" / "sglang_args.yaml"
    read = _core.load_yaml_names_file(str(path), "SGLang's option list", 1 << 20)
    assert read == yaml.safe_load(path.read_text(encoding="utf-8"))


def test_real_options_of_each_wheel_are_accepted_and_keep_no_memory_effect() -> None:
    # 0.5.23: --hicache-write-policy (fields/memory.py), --cuda-graph-max-bs-decode
    # (fields/exec_.py), --no-enable-tf32-matmul (BooleanOptionalAction), --log-level,
    # --enable-metrics: none is a vramplan knob. --enable-hicache (alias of
    # enable_hierarchical_cache) is: it plans the HiCache host pools.
    launch = sglang.parse_command(
        [*LAUNCH, "--enable-hicache", "--hicache-write-policy", "write_back",
         "--cuda-graph-max-bs-decode", "64", "--no-enable-tf32-matmul", "--log-level", "info",
         "--enable-metrics"]
    )  # fmt: skip
    assert launch.knobs == {"enable_hierarchical_cache": True}
    assert launch.unmodelled == [
        "--hicache-write-policy write_back",
        "--cuda-graph-max-bs-decode 64",
        "--no-enable-tf32-matmul",
        "--log-level info",
        "--enable-metrics",
    ]
    # 0.4.6.post5 spells hierarchical caching only in full.
    old = sglang.parse_command([*_image("v0.4.6.post5-cu124"), "--enable-hierarchical-cache"])
    assert old.unmodelled == []
    assert old.knobs == {"sglang_version": "0.4.6.post5", "enable_hierarchical_cache": True}


def test_a_misspelled_option_is_refused_naming_the_release_and_the_real_option() -> None:
    with pytest.raises(vramplan.ConfigError) as err:
        sglang.parse_command([*LAUNCH, "--mem-fraction-statc", "0.8"])
    text = str(err.value)
    assert "--mem-fraction-statc: not an argument of SGLang 0.5.23" in text
    assert "unrecognized arguments: --mem-fraction-statc" in text
    assert "did you mean --mem-fraction-static" in text
    # SGLang's parser is plain argparse: no '_' for '-' as vLLM's has.
    with pytest.raises(vramplan.ConfigError, match="did you mean --mem-fraction-static"):
        sglang.parse_command([*LAUNCH, "--mem_fraction_static", "0.8"])


def test_an_option_of_a_later_release_is_refused_for_the_image_release() -> None:
    # --enable-hicache first appears in 0.5.x; in 0.4.6.post5 it stops the server.
    with pytest.raises(vramplan.ConfigError) as err:
        sglang.parse_command([*_image("v0.4.6.post5-cu124"), "--enable-hicache"])
    assert "not an argument of SGLang 0.4.6.post5" in str(err.value)
    assert "--enable-hierarchical-cache" in str(err.value)


def test_a_prefix_is_the_option_it_abbreviates_and_an_ambiguous_one_is_refused() -> None:
    # argparse takes a unique prefix: --mem-frac is --mem-fraction-static, a modelled knob.
    assert sglang_option("--mem-frac") == "--mem-fraction-static"
    launch = sglang.parse_command([*LAUNCH, "--mem-frac", "0.8", "--tp", "2"])
    assert launch.knobs == {"mem_fraction_static": 0.8, "tp_size": 2}
    # 0.5.23 splits --cuda-graph-max-bs into -decode and -prefill: the old spelling is a
    # prefix of both, and SGLang stops on it; 0.4.10.post2 has the option itself.
    with pytest.raises(vramplan.ConfigError) as err:
        sglang.parse_command([*LAUNCH, "--cuda-graph-max-bs", "8"])
    assert (
        "ambiguous option: --cuda-graph-max-bs could match --cuda-graph-max-bs-decode, "
        "--cuda-graph-max-bs-prefill" in str(err.value)
    )
    old = sglang.parse_command([*_image("v0.4.10.post2"), "--cuda-graph-max-bs", "8"])
    assert old.knobs == {"sglang_version": "0.4.10.post2", "cuda_graph_max_bs": 8}


def test_sglang_serve_takes_its_own_model_type_option() -> None:
    # 0.5.23 cli/serve.py takes --model-type before SGLang's parser; launch_server has none.
    served = sglang.parse_command(["sglang", "serve", "--model-path", MODEL, "--model-type", "llm"])
    assert served.unmodelled == ["--model-type llm"]
    with pytest.raises(vramplan.ConfigError, match="unrecognized arguments: --model-type"):
        sglang.parse_command([*LAUNCH, "--model-type", "llm"])


def test_the_image_tag_names_the_release() -> None:
    assert sglang_image_version(["docker", "run", "lmsysorg/sglang:v0.4.6.post5-cu124"]) == (
        "0.4.6.post5"
    )
    assert sglang_image_version(["lmsysorg/sglang:latest"]) is None
    assert sglang_image_version(["python", "-m"]) is None


def test_check_refuses_a_misspelled_sglang_option(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "vramplan", "check", "--gpu", "H100-80GB", "--",
         "env", "SGLANG_X=1", *LAUNCH, "--mem-fraction-statc", "0.8"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "--mem-fraction-statc" in done.stderr
    assert "SGLang 0.5.23" in done.stderr
    assert "Traceback" not in done.stderr
