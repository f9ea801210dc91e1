"""`vramplan colocate`: several vLLM instances on the same GPUs, the start order that passes
every instance's startup free-memory check, launch lines and a docker compose file."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest
import vramplan
import yaml
from vramplan import cli
from vramplan.colocate import check_order

GIB = 1 << 30
H100_TOTAL = 85_030_076_416  # 79.19 GiB as CUDA reports it (model_specs/gpus.yaml)
MARGIN = 512 << 20  # the default safety margin, kept free once per GPU

CHAT = "Qwen/Qwen3-8B"
SMALL = "Qwen/Qwen3-0.6B"
# The small instance as people often write it: a fixed KV cache, and the default-like
# utilization left at 0.9, which vLLM's startup check still demands as free memory.
SMALL_FLAGS = {
    "kv_cache_memory_bytes": 4 * GIB,
    "gpu_memory_utilization": 0.9,
    "max_model_len": 8192,
}


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(scope="module")
def order_matters() -> vramplan.Colocation:
    return vramplan.colocate(
        [CHAT, (SMALL, SMALL_FLAGS)], "H100", context=[32768, 8192], concurrency=[8, 4]
    )


def test_start_order_matters_by_hand(order_matters: vramplan.Colocation) -> None:
    # The chat instance serves 8 x 32768 tokens of Qwen3-8B: KV per token = 2 (K, V) x 36
    # layers x 8 KV heads x 128 dims x 2 bytes = 147,456 B, so 262,144 tokens need
    # 38,654,705,664 B; with its 16.4 GB of bf16 weights that is 55.0 GB, so its utilization is
    # at least 55.0e9 / 85.03e9 = 0.647 -> 0.65 or more, and it holds at least ceil(0.65 x T).
    chat_kv = 2 * 36 * 8 * 128 * 2 * 8 * 32768
    assert chat_kv == 38_654_705_664
    chat, small = order_matters.instances
    assert chat.plan.gpu_memory_utilization >= 0.65
    assert chat.resident_bytes >= 0.65 * H100_TOTAL
    # The small instance asks for ceil(0.9 x 85,030,076,416) = 76,527,068,775 B free at its
    # startup check, whatever its KV cache.
    demand = -(-H100_TOTAL * 9 // 10)
    assert demand == 76_527_068_775
    # Chat first: at most T - 0.65 T = 29.76 GB is free for the small one < 76.5 GB: it fails.
    assert demand > H100_TOTAL - 0.65 * H100_TOTAL
    reverse = order_matters.checked_orders[(0, 1)]
    assert reverse.startswith(f"{SMALL} (started after")
    assert "startup_free_memory" in reverse
    assert check_order(order_matters, [0, 1]) == reverse
    # Small first: it holds its context, 1.5 GB of weights, the 4 GiB KV cache it was given,
    # its activations and graphs, at vLLM's default of 1024 sequences on an H100 (a scheduler
    # cap the plan keeps): the sampler's 1024 x 151,936 logits at 13.2 B each (2.05 GB) and
    # Model Runner V2's 1024 x 151,936 x 4.125 B of penalty state (0.64 GB) besides: between
    # 4 GiB + 1.5 GB + 2.7 GB and 9.5 GiB. The chat instance then finds at least
    # 79.19 - 9.5 - 0.5 (margin) - 0.5 (its context) = 68.7 GiB free, more than it asks for at
    # up to 0.88.
    assert 4 * GIB + 1.5e9 + 2.7e9 < small.resident_bytes < 9.5 * GIB
    assert chat.plan.gpu_memory_utilization <= 0.88
    assert order_matters.fits
    assert order_matters.order == [1, 0]
    assert order_matters.checked_orders[(1, 0)] == "passes"
    assert order_matters.total_resident_bytes == chat.resident_bytes + small.resident_bytes


def test_each_launch_replays_through_plan_in_its_order(
    order_matters: vramplan.Colocation, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each printed line, planned with what the instances before it hold as other processes'
    memory, starts; the small one after the chat one does not."""
    held = MARGIN
    rows = order_matters.rows()
    targets = {CHAT: (32768, 8), SMALL: (8192, 4)}
    for row in rows:
        words = shlex.split(row["launch"])
        assert words[0] == "CUDA_VISIBLE_DEVICES=0"
        assert words[1:3] == ["vllm", "serve"]
        flags = words[4 : words.index("--port")]
        context, concurrency = targets[words[3]]
        argv = ["plan", words[3], "--gpu", "H100", *flags, "--used-by-others-bytes", str(held)]
        code, out, err = run(
            capsys, *argv, "--context", str(context), "--concurrency", str(concurrency), "--json"
        )
        assert code == 0, err
        assert json.loads(out)["fits"]
        held += row["resident_bytes"]
    chat = next(r for r in rows if r["model"] == CHAT)
    small = next(r for r in rows if r["model"] == SMALL)
    flags = shlex.split(small["launch"])[4:-2]
    others = str(MARGIN + chat["resident_bytes"])
    code, out, _ = run(
        capsys, "plan", SMALL, "--gpu", "H100", *flags, "--used-by-others-bytes", others, "--json"
    )
    assert code == 1
    assert json.loads(out)["breakdown"]["outcome"] == "startup_free_memory"


def test_each_utilization_is_the_smallest_that_serves_the_target() -> None:
    result = vramplan.colocate([CHAT, "Qwen/Qwen3-4B"], "H100", context=32768, concurrency=4)
    assert result.fits
    assert result.order == [0, 1]
    assert result.checked_orders[(1, 0)] == "passes"  # both hold what they ask for
    for placed in result.instances:
        knobs = dict(placed.knobs)
        assert knobs["max_num_batched_tokens"] >= 2048  # not bought by a tiny prefill chunk
        plan = vramplan.plan(placed.spec, "H100", context=32768, concurrency=4, **knobs)
        assert plan.fits
        knobs["gpu_memory_utilization"] = round(knobs["gpu_memory_utilization"] - 0.01, 2)
        smaller = vramplan.plan(placed.spec, "H100", context=32768, concurrency=4, **knobs)
        assert not smaller.fits


def test_no_split_works_says_why() -> None:
    # Three chat instances each need at least 0.65 of the GPU (see above): 1.95 > 1.
    result = vramplan.colocate([CHAT] * 3, "H100", context=32768, concurrency=8)
    assert not result.fits
    assert result.order is None
    assert "under load the instances hold" in result.reason
    assert result.total_resident_bytes > H100_TOTAL
    with pytest.raises(vramplan.Error, match="no start order"):
        result.compose()
    # Llama-3.1-70B: 141 GB of bf16 weights on one 79.19 GiB card.
    alone = vramplan.colocate([SMALL, "meta-llama/Llama-3.1-70B-Instruct"], "H100")
    assert not alone.fits
    assert "meta-llama/Llama-3.1-70B-Instruct does not fit even alone" in alone.reason


def test_compose_file_starts_them_in_order(order_matters: vramplan.Colocation) -> None:
    compose = yaml.safe_load(order_matters.compose())
    services = compose["services"]
    assert list(services) == ["vllm-1", "vllm-2"]
    first, second = services["vllm-1"], services["vllm-2"]
    assert first["command"][0] == SMALL
    assert second["command"][0] == CHAT
    assert "depends_on" not in first
    assert second["depends_on"] == {"vllm-1": {"condition": "service_healthy"}}
    for service, row in zip(services.values(), order_matters.rows()):
        launch = shlex.split(row["launch"])
        assert service["command"] == launch[3:]
        port = launch[-1]
        assert service["ports"] == [f"{port}:{port}"]
        assert f"localhost:{port}/health" in service["healthcheck"]["test"][-1]
        devices = service["deploy"]["resources"]["reservations"]["devices"][0]
        assert devices["device_ids"] == ["0"]
        assert service["image"].startswith("vllm/vllm-openai:v")


def test_two_shared_gpus_use_tensor_parallelism() -> None:
    result = vramplan.colocate([CHAT, "Qwen/Qwen3-4B"], "L40S", num_gpus=2, context=8192)
    assert result.fits
    for row in result.rows():
        assert row["launch"].startswith("CUDA_VISIBLE_DEVICES=0,1 ")
        assert "--tensor-parallel-size 2" in row["launch"]
    services = yaml.safe_load(result.compose())["services"]
    devices = services["vllm-1"]["deploy"]["resources"]["reservations"]["devices"][0]
    assert devices["device_ids"] == ["0", "1"]


def test_cli_colocate(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    compose = tmp_path / "compose.yaml"
    small = f"{SMALL} --kv-cache-memory-bytes {4 * GIB} --gpu-memory-utilization 0.9 --max-model-len 8192"
    argv = ["colocate", CHAT, small, "--gpu", "H100", "--context", "32768,8192"]
    code, out, err = run(capsys, *argv, "--concurrency", "8,4", "--compose", str(compose))
    assert code == 0, err
    assert f"order {SMALL} -> {CHAT}: passes" in out
    assert f"order {CHAT} -> {SMALL}: {SMALL} (started after" in out
    lines = [line for line in out.splitlines() if ": CUDA_VISIBLE_DEVICES=" in line]
    assert [line.split()[4] for line in lines] == [SMALL, CHAT]
    assert yaml.safe_load(compose.read_text())["services"]["vllm-1"]["command"][0] == SMALL
    code, out, _ = run(capsys, *argv, "--concurrency", "8,4", "--json")
    data = json.loads(out)
    assert code == 0
    assert data["fits"]
    assert [r["model"] for r in data["instances"]] == [SMALL, CHAT]
    assert "services:" in data["compose"]
    code, out, _ = run(
        capsys, "colocate", CHAT, CHAT, CHAT, "--context", "32768", "--concurrency", "8"
    )
    assert code == 1
    assert "why: under load" in out


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["colocate", f"{SMALL} --no-such-flag 1"], "unknown flags --no-such-flag 1"),
        (["colocate", f"{SMALL} --max-model-len x"], "bad flags"),
        (["colocate", f"{SMALL} 'unclosed"], "instance"),
        (["colocate", SMALL, CHAT, "--context", "1,2,3"], "context"),
        (["colocate", f"{SMALL} --tp 2", "--num-gpus", "1"], "tensor_parallel_size"),
        (["colocate", SMALL, "--used-by-others-bytes", "-1"], "memory_used_by_others_bytes"),
        (["colocate", SMALL, "--gpu", "NoSuchGPU"], "NoSuchGPU"),
    ],
)
def test_cli_colocate_bad_input_is_named(
    argv: list[str], named: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert out == ""
    assert named in err
    assert "Traceback" not in err


@pytest.mark.parametrize(
    ("version", "failure"),
    [("0.8.0", "oom"), ("0.9.1", "startup_free_memory"), ("0.21.0", "startup_free_memory")],
)
def test_how_the_others_memory_fails_an_instance_per_era(version: str, failure: str) -> None:
    # Utilizations 0.6 and 0.5 pinned by hand: 1.1 x total > total whatever else they hold.
    knobs = {"engine_version": version, "max_model_len": 4096}
    result = vramplan.colocate(
        [
            (SMALL, {**knobs, "gpu_memory_utilization": 0.6}),
            ("Qwen/Qwen3-1.7B", {**knobs, "gpu_memory_utilization": 0.5}),
        ],
        "H100",
    )
    assert not result.fits
    assert "under load the instances hold" in result.reason
    # Started anyway, the second fails: at vLLM's startup check from 0.9.1; before it there is
    # no check and the memory runs out after the KV cache is allocated.
    verdict = check_order(result, [0, 1])
    assert verdict.startswith("Qwen/Qwen3-1.7B (started after")
    assert failure in verdict


@pytest.mark.parametrize("flag", ["--gpu L4", "--num-gpus 2", "--used-by-others-bytes 1", "--json"])
def test_instance_flags_of_the_whole_colocation_are_refused(
    flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "colocate", f"{SMALL} {flag}", "--gpu", "H100")
    assert code == 2
    assert out == ""
    assert f"{flag.split()[0]} cannot be used here" in err
