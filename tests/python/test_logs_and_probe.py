"""Logs and the probe: a log of a release newer than the newest known says so; a number with a
control byte inside is not a number; nvidia-smi's output is bounded in bytes and time and its
figures must fit the GPU's total; `--gpu auto` takes the GPUs vLLM would take
(CUDA_VISIBLE_DEVICES, device 0 first) and says which. nvidia-smi is a script on PATH here."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import vramplan
from vramplan import _core, probe, validate

ROOT = Path(__file__).resolve().parents[2]
LOG = ROOT / "tests" / "data" / "calibration" / "qwen25_7b_h100_v019_tp1.log"
VERSION_LINE = "INFO 04-22 01:00:18 [api_server.py:1] vLLM API server version {}\n"
H100 = "NVIDIA H100 80GB HBM3, 81559, 0, 81559"
L4 = "NVIDIA L4, 23034, 0, 23034"


def test_a_log_newer_than_the_newest_known_release_says_so() -> None:
    text = LOG.read_text()
    newer = validate.replay_log(VERSION_LINE.format("0.40.0") + text)
    assert newer.unsupported is None
    assert newer.note is not None
    assert "newer than the newest release" in newer.note
    known = validate.replay_log(VERSION_LINE.format("0.19.0") + text)
    assert known.note is None


@pytest.mark.parametrize("byte", ["\x00", "\x7f", "\x08", "\x0b"])
def test_a_number_with_a_control_byte_inside_is_not_a_number(byte: str) -> None:
    line = f"GPU KV cache size: 47{byte}6,016 tokens\n"
    assert vramplan.parse_vllm_log(line)["kv_tokens"] is None
    assert vramplan.parse_vllm_log("GPU KV cache size: 476,016 tokens\r\n")["kv_tokens"] == 476016


def _fake_nvidia_smi(tmp_path: Path, body: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An `nvidia-smi` on PATH running `body` (sh), and no NVML to answer first."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    script = bin_dir / "nvidia-smi"
    script.write_text(f"#!/bin/sh\n{body}\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setitem(sys.modules, "pynvml", None)  # import pynvml: ImportError


def test_nvidia_smi_printing_forever_is_stopped_at_the_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_nvidia_smi(tmp_path, f"exec yes '0, {H100}'", monkeypatch)
    with pytest.raises(vramplan.Error, match="printed over"):
        probe.probe_gpus()


def test_nvidia_smi_that_never_answers_is_stopped_in_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_nvidia_smi(tmp_path, "exec sleep 600", monkeypatch)
    monkeypatch.setattr(probe, "_NVIDIA_SMI_SECONDS", 1.0)
    with pytest.raises(vramplan.Error, match="no answer within"):
        probe.probe_gpus()


def test_memory_used_over_the_total_is_named() -> None:
    with pytest.raises(_core.ParseError, match=r"do not fit in memory\.total"):
        probe.parse_nvidia_smi_csv("0, NVIDIA H100 80GB HBM3, 81559, 90000, 0\n")


def _plan_auto(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vramplan", "plan", "Qwen/Qwen3-8B", "--gpu", "auto", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


def test_gpu_auto_takes_device_0_or_cuda_visible_devices_and_says_which(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # GPU 0 an H100, GPU 1 an L4 (the least free): vLLM runs on device 0.
    _fake_nvidia_smi(tmp_path, f"printf '0, {H100}\\n1, {L4}\\n'", monkeypatch)
    env = {k: v for k, v in os.environ.items() if k != "CUDA_VISIBLE_DEVICES"}
    env["PYTHONPATH"] = str(tmp_path / "no-pynvml")
    (tmp_path / "no-pynvml").mkdir()
    (tmp_path / "no-pynvml" / "pynvml.py").write_text("raise ImportError('no NVML here')\n")
    first = _plan_auto(env=env)
    assert first.returncode == 0, first.stderr
    assert "on H100-80GB" in first.stdout
    assert "--gpu auto: H100-80GB from GPU 0" in first.stderr
    second = _plan_auto(env={**env, "CUDA_VISIBLE_DEVICES": "1"})
    assert "on L4" in second.stdout, second.stderr
    assert "CUDA_VISIBLE_DEVICES=1" in second.stderr
    mixed = _plan_auto("--tp", "2", env=env)
    assert mixed.returncode == 2
    assert "differ" in mixed.stderr
    too_few = _plan_auto("--tp", "2", env={**env, "CUDA_VISIBLE_DEVICES": "0"})
    assert too_few.returncode == 2
    assert "shows 1 GPU" in too_few.stderr


def test_diagnose_of_a_newer_release_says_which_rules_planned_the_fix() -> None:
    from vramplan.diagnose import diagnose, format_text

    log = ROOT / "tests" / "data" / "diagnose" / "v019_gpt_oss_20b_sampler_warmup.log"
    lines = [line for line in log.read_text().splitlines() if "API server version" not in line]
    text = VERSION_LINE.format("0.40.0") + "\n".join(lines) + "\n"
    report = format_text(diagnose(text))
    assert "engine-version-newer-than-known: vLLM 0.40.0" in report
