"""How long vramplan takes to refuse hostile input, beside the bound the tests once asserted.

Run: python3 benchmarks/bench_bounds.py
The tests (tests/python/test_hostile_input.py, test_launch.py) check what each refusal says;
the wall clock is measured here, where a loaded machine makes a slow figure, not a red test.
Each case: median wall ms of 3 runs, and the bound it stays well under on an idle machine.
Asserts nothing.
"""

from __future__ import annotations

import json
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import vramplan
from vramplan import api, probe, validate

LLAMA_CONFIG = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 4096,
    "num_hidden_layers": 32,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "intermediate_size": 14336,
    "vocab_size": 128256,
    "max_position_embeddings": 131072,
    "torch_dtype": "bfloat16",
}
LLAMA_YAML = (
    "id: test/llama-3.1-8b\nmodel_type: llama\nhidden_size: 4096\nnum_hidden_layers: 32\n"
    "num_attention_heads: 32\nnum_key_value_heads: 8\nintermediate_size: 14336\n"
    "vocab_size: 128256\nmax_position_embeddings: 131072\ntorch_dtype: bfloat16\n"
)


def refused(call: Callable[[], object]) -> None:
    try:
        call()
    except vramplan.Error:
        return
    msg = "expected a vramplan.Error"
    raise AssertionError(msg)


def cases(tmp: Path) -> dict[str, tuple[float, Callable[[], object]]]:
    """name: (the bound once asserted, in ms; the work)."""
    entries = tmp / "entries"
    entries.mkdir()
    header = ("{" + ",".join(f'"{i}":{{}}' for i in range(80_000)) + "}").encode()
    (entries / "model.safetensors").write_bytes(struct.pack("<Q", len(header)) + header)
    (entries / "config.json").write_text(json.dumps(LLAMA_CONFIG))
    mtp = tmp / "mtp.yaml"
    mtp.write_text(LLAMA_YAML + f"num_nextn_predict_layers: {1 << 20}\n")
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]" for i in range(1, 10)]
    bomb = tmp / "bomb.yaml"
    bomb.write_bytes(("\n".join(lines) + "\n").encode() + b'id: "\xff"\n')
    sparse = {}
    for name in ("profile.yaml", "gpus.csv", "records.jsonl"):
        sparse[name] = tmp / name
        with sparse[name].open("wb") as handle:
            handle.truncate(1 << 40)
    out: dict[str, tuple[float, Callable[[], object]]] = {
        "safetensors header of 80,000 empty entries": (
            1000,
            lambda: refused(lambda: vramplan.inspect_checkpoint(entries)),
        ),
        "num_nextn_predict_layers 2^20": (1000, lambda: refused(lambda: api.load_model(mtp))),
        "YAML alias bomb": (2000, lambda: refused(lambda: api.load_model(bomb))),
        "1 TiB sparse profile": (
            1000,
            lambda: refused(lambda: vramplan.Profile.load(sparse["profile.yaml"])),
        ),
        "1 TiB sparse nvidia-smi CSV": (
            1000,
            lambda: refused(lambda: probe.read_nvidia_smi_csv(sparse["gpus.csv"])),
        ),
        "1 TiB sparse records": (
            1000,
            lambda: refused(lambda: validate.read_records(sparse["records.jsonl"])),
        ),
    }
    # The CLI on an unknown model, offline or with a Hub that refuses connections: one line,
    # quickly (the bound counts the interpreter's own start).
    cache = {"HF_HUB_CACHE": str(tmp), "VRAMPLAN_CACHE": str(tmp / "v")}
    argv = [sys.executable, "-m", "vramplan", "plan", "acme/no-such-model"]
    for label, extra_env, extra_argv in (
        ("--offline", {}, ["--offline"]),
        ("HF_HUB_OFFLINE=1", {"HF_HUB_OFFLINE": "1"}, []),
        ("HF_ENDPOINT refusing", {"HF_ENDPOINT": "http://127.0.0.1:9"}, []),
    ):
        env = {**os.environ, **cache, **extra_env}
        if "HF_HUB_OFFLINE" not in extra_env:
            env.pop("HF_HUB_OFFLINE", None)
        out[f"CLI plan of an unknown model ({label})"] = (
            3000,
            lambda env=env, extra=extra_argv: subprocess.run(
                [*argv, *extra], env=env, capture_output=True, timeout=60, check=False
            ),
        )
    return out


def main() -> None:
    print(f"{os.cpu_count()} cores; load average {', '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("| case | wall ms (median of 3) | bound once asserted, ms |\n|---|---:|---:|")
    with tempfile.TemporaryDirectory() as folder:
        for name, (bound_ms, work) in cases(Path(folder)).items():
            runs = []
            for _ in range(3):
                start = time.perf_counter()
                work()
                runs.append((time.perf_counter() - start) * 1e3)
            print(f"| {name} | {statistics.median(runs):,.1f} | {bound_ms:,} |")


if __name__ == "__main__":
    main()
