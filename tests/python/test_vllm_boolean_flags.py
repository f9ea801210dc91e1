"""vLLM 0.33's boolean options read as its parser reads them (issue 37). In the 0.33.0 wheel,
vllm/engine/arg_utils.py registers a bool-typed field with argparse.BooleanOptionalAction,
which vllm/utils/argparse_utils.py replaces by EnableDisableAction: `--x` true, `--no-x`
false, `--disable-x` false for an `enable_x` field (and `--enable-x` for `disable_x`); a few
options are action="store_true" (--disable-log-stats); hf_token (bool | str | None) takes an
optional value. Neither kind takes a value word: argparse leaves `false` in
`--enforce-eager false` over and stops with "unrecognized arguments: false", and refuses
`--enforce-eager=false` with "ignored explicit argument 'false'". 0.26.0-0.32.0 (their wheels)
have the same BooleanOptionalAction options but no EnableDisableAction: `--no-x` only."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import vramplan
from vramplan.launch import boolean_options, parse_command, to_knobs

MODEL = "Qwen/Qwen3-8B"


def _args(line: str, version: str | None = None) -> dict[str, object]:
    return parse_command(f"vllm serve {MODEL} {line}", version=version).args


def test_the_switch_forms_vllm_033_accepts() -> None:
    assert _args("--enforce-eager") == {"enforce_eager": True}
    assert _args("--no-enforce-eager") == {"enforce_eager": False}
    assert _args("--enforce_eager") == {"enforce_eager": True}  # '_' is '-' in vLLM's parser
    # EnableDisableAction: the other spelling of an enable_/disable_ option.
    assert _args("--disable-prefix-caching") == {"enable_prefix_caching": False}
    assert _args("--enable-sliding-window") == {"disable_sliding_window": False}
    assert _args("--disable-log-stats") == {"disable_log_stats": True}  # store_true
    assert _args("--hf-token") == {"hf_token": True}  # nargs="?", const=True
    assert _args("--hf-token abc") == {"hf_token": "abc"}
    # --no-enforce-eager is what the knob reads as off.
    assert to_knobs(_args("--no-enforce-eager")).knobs["enforce_eager"] is False


@pytest.mark.parametrize("word", ["false", "true", "False", "0"])
def test_a_value_word_after_a_switch_is_refused_with_vllms_reason(word: str) -> None:
    with pytest.raises(vramplan.ConfigError) as err:
        _args(f"--enforce-eager {word} --max-model-len 4096")
    text = str(err.value)
    assert f"unrecognized arguments: {word}" in text
    assert "vLLM 0.33.0" in text
    assert "--no-enforce-eager" in text  # the spelling that means false


def test_an_inline_value_on_a_switch_is_refused_with_vllms_reason() -> None:
    with pytest.raises(vramplan.ConfigError) as err:
        _args("--enforce-eager=false")
    assert "argument --enforce-eager/--no-enforce-eager: ignored explicit argument 'false'" in str(
        err.value
    )
    with pytest.raises(vramplan.ConfigError, match="--enable-prefix-caching/--disable-prefix"):
        _args("--enable-prefix-caching=true")


def test_a_store_true_option_has_no_negative_form() -> None:
    assert boolean_options("0.33.0")["disable_log_stats"] == "store_true"
    with pytest.raises(vramplan.ConfigError, match=r"not an argument of vLLM 0\.33\.0"):
        _args("--no-disable-log-stats")


def test_a_config_file_false_is_written_as_vllm_pulls_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # _pull_args_from_config: false becomes --no-key where the parser has it, else nothing.
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cfg.yaml").write_text("enforce-eager: false\ndisable-log-stats: false\n")
    assert parse_command(f"vllm serve {MODEL} --config cfg.yaml").args == {"enforce_eager": False}


def test_check_refuses_enforce_eager_false(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "vramplan", "check", "--gpu", "H100-80GB", "--",
         "vllm", "serve", MODEL, "--enforce-eager", "false"],
        capture_output=True, text=True, timeout=120, check=False, cwd=tmp_path,
        env={k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"},
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert "unrecognized arguments: false" in done.stderr
    assert "Traceback" not in done.stderr


def test_releases_before_033_have_no_enable_disable_pairs() -> None:
    # vllm/utils/argparse_utils.py of 0.32.0 has no EnableDisableAction: --disable-prefix-caching
    # is no option there, --no-enable-prefix-caching is.
    assert _args("--no-enable-prefix-caching", "0.32.0") == {"enable_prefix_caching": False}
    with pytest.raises(vramplan.ConfigError, match=r"not an argument of vLLM 0\.32\.0"):
        _args("--disable-prefix-caching", "0.32.0")
    with pytest.raises(vramplan.ConfigError, match="unrecognized arguments: false"):
        _args("--enforce-eager false", "0.26.0")
    with pytest.raises(vramplan.ConfigError, match="--enforce-eager/--no-enforce-eager: ignored"):
        _args("--enforce-eager=false", "0.29.0")
    # 0.33.0 still takes the --no- spelling of an enable_ option (hidden from its help).
    assert _args("--no-enable-prefix-caching") == {"enable_prefix_caching": False}
