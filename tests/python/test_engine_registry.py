"""The engine registry: every entry point (vramplan.plan, fit, the CLI) dispatches through
`engines.get` once, so a third engine registered at run time plans through all of them without
an edit to the package; an unknown name is an error listing the engines, never another
engine's answer."""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
import vramplan
from vramplan import _core, api, cli, engines

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
