"""The engine registry: every entry point (vramplan.plan, fit, the CLI) dispatches through
`engines.get` once, so a third engine registered at run time plans through all of them without
an edit to the package; an unknown name is an error listing the engines, never another
engine's answer."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import vramplan
from vramplan import _core, api, cli, engines
from vramplan.diagnose import format_text

MODEL = "Qwen/Qwen3-8B"

# The stub engine's rules, knobs and launch vocabulary, as data. Its rule: the engine takes
# `memory_fraction` of the GPU, the weights (the checkpoint's bytes) come first, and the rest
# is KV cache at `kv_bytes_per_token`. Qwen3-8B: 36 layers x 8 KV heads x 128 x 2 (K and V)
# x 2 B = 147,456 B per token.
STUB_RULES = {"default_memory_fraction": 0.9, "kv_bytes_per_token": 36 * 8 * 128 * 2 * 2}
STUB_KNOBS = {"memory_fraction": "--mem-frac", "max_context": "--max-ctx"}


class StubPlan:
    def __init__(self, kv_bytes: int, context: int, concurrency: int, fraction: float) -> None:
        self.kv_tokens = max(0, kv_bytes // STUB_RULES["kv_bytes_per_token"])
        self.held = self.kv_tokens // context
        self.fits = self.kv_tokens > 0 and self.held >= max(1, concurrency)
        self.fraction = fraction
        self.context = context
        self.verdict = f"{'fits' if self.fits else 'does not fit'}: {self.kv_tokens} KV tokens"
        self.launch_line = f"stubserve {MODEL} " + " ".join(self.to_argv())

    def to_argv(self) -> list[str]:
        return [
            STUB_KNOBS["memory_fraction"],
            f"{self.fraction:.2f}",
            STUB_KNOBS["max_context"],
            str(self.context),
        ]


def stub_plan(
    model: str | _core.ModelSpec,
    gpu: str | _core.GpuSpec,
    *,
    context: int = 0,
    concurrency: int = 0,
    memory_fraction: float | None = None,
    **unused: Any,
) -> StubPlan:
    spec = model if isinstance(model, _core.ModelSpec) else api.load_model(model)
    card = gpu if isinstance(gpu, _core.GpuSpec) else api.load_gpu(gpu)
    fraction = STUB_RULES["default_memory_fraction"] if memory_fraction is None else memory_fraction
    budget = math.floor(card.total_memory_bytes * fraction)
    context = context or int(spec.max_position_embeddings)
    return StubPlan(budget - spec.checkpoint_bytes(), context, concurrency, fraction)


def stub_fit_option(
    model_id: str,
    spec: _core.ModelSpec,
    gpu: _core.GpuSpec,
    num_gpus: int,
    split: tuple[int, int, int],
    target: Any,
    node: dict[str, Any],
    knobs: dict[str, Any],
) -> dict[str, Any]:
    planned = stub_plan(spec, gpu, context=target.context, concurrency=target.concurrency)
    return {
        "gpu": gpu.id,
        "num_gpus": num_gpus,
        "tensor_parallel_size": split[0],
        "pipeline_parallel_size": split[1],
        "data_parallel_size": split[2],
        "fits": planned.fits and split == (1, 1, 1),
        "max_concurrency": planned.held,
        "kv_tokens": planned.kv_tokens,
        "kv_headroom": planned.held / target.concurrency,
        "gpu_memory_utilization": planned.fraction,
        "launch": planned.launch_line,
        "verdict": planned.verdict,
    }


def stub_cli(words: list[str]) -> int:
    model = next(w for w in engines.without_engine(words)[1:] if not w.startswith("-"))
    gpu = words[words.index("--gpu") + 1]
    planned = stub_plan(model, gpu)
    print(f"verdict: {planned.verdict}\n{planned.launch_line}")
    return 0 if planned.fits else 1


def not_modelled(*args: Any, **kwargs: Any) -> Any:
    raise vramplan.Error("stubserve: not modelled")


STUB = engines.Engine(
    name="stubserve",
    display_name="StubServe",
    serve_command="stubserve",
    breakdown=not_modelled,
    plan=stub_plan,
    sweep=not_modelled,
    fit_option=stub_fit_option,
    fit_columns={"gpu_memory_utilization": "memory_fraction"},
    cli=stub_cli,
)


@pytest.fixture
def stub() -> Iterator[engines.Engine]:
    engines.register(STUB)
    yield STUB
    engines.unregister(STUB.name)


def test_a_registered_engine_plans_through_the_api(stub: engines.Engine) -> None:
    planned = vramplan.plan(MODEL, "L40S", engine="stubserve", context=32768, concurrency=4)
    # L40S: 48 GB of CUDA total x 0.9 less Qwen3-8B's 16.4 GB checkpoint, over 147,456 B/token.
    card, spec = api.load_gpu("L40S"), api.load_model(MODEL)
    kv_bytes = math.floor(card.total_memory_bytes * 0.9) - spec.checkpoint_bytes()
    assert planned.kv_tokens == kv_bytes // 147_456
    assert planned.fits
    assert planned.to_argv() == ["--mem-frac", "0.90", "--max-ctx", "32768"]


def test_a_registered_engine_plans_through_fit(stub: engines.Engine) -> None:
    frame = vramplan.fit(
        MODEL, context=8192, concurrency=2, gpus=["L4", "L40S"], engine="stubserve"
    )
    assert "memory_fraction" in frame.columns  # the engine's own column names
    assert "gpu_memory_utilization" not in frame.columns
    fitting = frame[frame["fits"].astype(bool)]
    assert set(fitting["gpu"]) == {"L4", "L40S"}
    assert all(line.startswith(f"stubserve {MODEL}") for line in fitting["launch"])


def test_a_registered_engine_plans_through_the_cli(
    stub: engines.Engine, capsys: pytest.CaptureFixture[str]
) -> None:
    assert cli.main(["plan", "--engine", "stubserve", MODEL, "--gpu", "L40S"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith("verdict: fits: ")
    assert out.splitlines()[1].startswith(f"stubserve {MODEL} --mem-frac 0.90")


def test_unknown_engines_are_named_everywhere(capsys: pytest.CaptureFixture[str]) -> None:
    listed = ", ".join(engines.names())
    for call in (
        lambda: vramplan.plan(MODEL, "L4", engine="stubserve"),
        lambda: vramplan.breakdown(MODEL, "L4", engine="stubserve"),
        lambda: vramplan.sweep(MODEL, "L4", engine="stubserve"),
        lambda: vramplan.fit(MODEL, context=8192, concurrency=1, engine="stubserve"),
    ):
        with pytest.raises(vramplan.ConfigError, match=f"allowed: {listed}"):
            call()
    assert cli.main(["plan", "--engine", "stubserve", MODEL]) != 0
    assert "--engine: unknown serving engine" in capsys.readouterr().err


def test_the_built_in_engines_are_the_cores_descriptors() -> None:
    for name in _core.ENGINE_NAMES:
        row = _core.engine_row(name)
        engine = engines.get(name)
        assert (row["name"], engine.display_name) == (name, row["display_name"])
        assert engine.serve_command == row["serve_command"]
    assert engines.names()[: len(_core.ENGINE_NAMES)] == _core.ENGINE_NAMES
    with pytest.raises(vramplan.ConfigError, match="unknown serving engine"):
        _core.engine_row("stubserve")


def test_a_taken_name_cannot_be_registered_twice(stub: engines.Engine) -> None:
    with pytest.raises(vramplan.ConfigError, match="already an engine"):
        engines.register(STUB)
    with pytest.raises(vramplan.ConfigError, match="already an engine"):
        engines.register(engines.get("vllm"))


def test_the_cores_per_engine_calls_refuse_an_unknown_engine_with_the_list() -> None:
    listed = ", ".join(_core.ENGINE_NAMES)
    for call in (
        lambda: _core.parse_log("stubserve", ""),
        lambda: _core.diagnose_log("stubserve", ""),
        lambda: _core.launch_from_figures("stubserve", {}),
        lambda: _core.engine_release("stubserve"),
        # A registered engine the core reads no logs of: refused, never read as vLLM's.
        lambda: vramplan.diagnose("", engine="llamacpp"),
        lambda: vramplan.parse_log("", engine="llamacpp"),
    ):
        with pytest.raises(vramplan.ConfigError, match=f"allowed: {listed}"):
            call()


SGLANG_R08 = Path(__file__).resolve().parents[1] / "data" / "sglang" / "logs" / "sgl-r08.log"


def test_every_engine_diagnoses_through_one_call_in_one_shape() -> None:
    vllm_log = (
        "Traceback (most recent call last):\n"
        '  File "gpu_model_runner.py", line 5904, in profile_cudagraph_memory\n'
        "torch.AcceleratorError: CUDA error: out of memory\n"
    )
    results = {
        "vllm": vramplan.diagnose(vllm_log),
        "sglang": vramplan.diagnose(SGLANG_R08.read_text(), engine="sglang"),
    }
    keys = {"engine", "cause", "explanation", "evidence", "advice", "oom_kills", "figures", "fix"}
    for name, result in results.items():
        assert result["engine"] == name
        assert keys <= set(result.data)
        # Advice in the engine's own flags: the core's knob tables' spellings.
        flags = {k["name"]: k["flag"] for k in _core.engine_row(name)["knobs"]}
        for item in result["advice"]:
            assert item["flag"] == flags.get(item["knob"], item["flag"])
            assert item["flag"].startswith("--")
    # sgl-r08 (0.5.23, weights leave no memory): SGLang's advice carries its own reason and is
    # printed by the one formatter; SGLang plans no fix, and says so.
    sglang = results["sglang"]
    assert sglang.cause == "weights_leave_no_memory"
    assert sglang["fix"] is None
    assert "SGLang" in sglang["fix_unavailable"]
    text = format_text(sglang)
    assert "\nadvice:\n  raise --mem-fraction-static 0.94: " in text
    with pytest.raises(vramplan.ConfigError, match="gpu"):
        vramplan.diagnose(SGLANG_R08.read_text(), engine="sglang", gpu="H200")


def test_a_logs_launch_is_rebuilt_by_its_engine() -> None:
    # sgl-r01 prints its server_args (TP 4, 0.4.3.post4): the launch under SGLang's names; the
    # scheduler's max_running_requests (2049) is a result, not a setting, and is left out.
    figures = vramplan.parse_log(SGLANG_R08.with_name("sgl-r01.log"), engine="sglang")
    launch = _core.launch_from_figures("sglang", figures)
    assert launch["tp_size"] == 4
    assert figures["max_running_requests"] == 2049
    assert "max_running_requests" not in launch
    # vLLM: the release at its patch (0.10.2 has its own row), "auto" KV dtype left unset.
    vllm = _core.launch_from_figures(
        "vllm", {"vllm_version": "0.10.2", "kv_cache_dtype": "auto", "max_model_len": 4096}
    )
    assert vllm == {"engine_version": "0.10.2", "max_model_len": 4096}
    assert _core.engine_release("vllm", "0.10.2")["rules_release"] == "0.10.2"
