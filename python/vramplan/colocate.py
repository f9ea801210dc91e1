"""Several vLLM instances on the same GPUs: each instance's utilization, a start order that
passes every instance's startup free-memory check, KV per instance, launch lines and a docker
compose file.

vLLM's `gpu_memory_utilization` is a fraction of the GPU's *total* memory per instance, and each
instance's startup check (`free >= ceil(total x U)`) counts what the instances started before it
hold as memory used by other processes. What a started instance holds comes from the C++ core
(`_core.resident_bytes`); each instance in each order is evaluated by the core with the memory
of those before it as `memory_used_by_others_bytes`. This module chooses and orders (searches,
no arithmetic of its own beyond adding up what the core reports).

Per vLLM era, as the core models it: from 0.9.1 the check refuses to start
(`startup_free_memory`); before it there is no check, and the memory the others hold runs out
after the KV cache is allocated (graph capture or the sampler warm-up: a CUDA OOM). In every era
the others' memory is outside the instance's own budget (`ceil(total x U)` minus what it uses).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from . import _core, api
from ._quoting import check_text, shell_word, yaml_comment, yaml_list, yaml_string
from ._units import gib_text
from .fit import check_engine

# Instances one colocation takes: the order search visits every subset (2^n evaluations x n).
MAX_INSTANCES = 8
FIRST_PORT = 8000
DEFAULT_SAFETY_MARGIN_BYTES: int = _core.DEFAULT_SAFETY_MARGIN_BYTES  # kept free once per GPU
_SPLIT = ("tensor_parallel_size", "pipeline_parallel_size")


@dataclass
class Instance:
    """One instance to colocate: the model as given, its pinned knobs (vLLM's names), and its
    target: `concurrency` sequences of `context` tokens (0: the model's maximum)."""

    model: str
    knobs: dict[str, Any] = field(default_factory=dict)
    context: int = 0
    concurrency: int = 1


@dataclass
class Placed:
    """An instance as planned: its knobs, the plan's breakdown and what it holds once started."""

    instance: Instance
    spec: _core.ModelSpec
    plan: api.Plan
    knobs: dict[str, Any]  # the user's knobs + the chosen evaluated ones
    resident_bytes: int


@dataclass
class Colocation:
    """The answer. `fits`: a start order passes every instance's startup check and everything
    the instances hold under load fits the GPU. `order`: indices into `instances` in start
    order (None when no order works). `reason`: why not, when it does not fit."""

    gpu: _core.GpuSpec
    num_gpus: int
    instances: list[Placed]
    order: list[int] | None
    reason: str
    total_resident_bytes: int
    safety_margin_bytes: int
    memory_used_by_others_bytes: int
    checked_orders: dict[tuple[int, ...], str]  # an order -> "passes" or the first failure

    @property
    def fits(self) -> bool:
        return self.order is not None

    def port(self, index: int) -> int:
        """The port instance `index` serves on: 8000 + its place in the start order."""
        position = self.order.index(index) if self.order is not None else index
        return FIRST_PORT + position

    def launch_line(self, index: int) -> str:
        """The shell line that starts instance `index` (on GPUs 0..num_gpus-1)."""
        placed = self.instances[index]
        devices = ",".join(str(i) for i in range(self.num_gpus))
        env = {"CUDA_VISIBLE_DEVICES": devices, **placed.plan.to_vllm_env()}
        prefix = " ".join(f"{k}={shell_word(v)}" for k, v in env.items())
        args = placed.plan.to_vllm_args()
        model = shell_word(placed.instance.model)
        return f"{prefix} vllm serve {model} {args} --port {self.port(index)}"

    def rows(self) -> list[dict[str, Any]]:
        """One dict per instance, in start order when there is one."""
        indices = self.order if self.order is not None else list(range(len(self.instances)))
        out = []
        for position, index in enumerate(indices):
            placed = self.instances[index]
            b = placed.plan.breakdown
            out.append(
                {
                    "start": position + 1 if self.order is not None else None,
                    "model": placed.instance.model,
                    "gpu_memory_utilization": float(placed.plan.gpu_memory_utilization),
                    "max_model_len": int(placed.plan.max_model_len),
                    "max_num_seqs": int(placed.plan.max_num_seqs),
                    "kv_cache_bytes": int(b.kv_cache_bytes),
                    "kv_tokens": int(b.kv_tokens),
                    "concurrent_sequences": int(placed.plan.concurrent_sequences),
                    "resident_bytes": placed.resident_bytes,
                    "launch": self.launch_line(index),
                }
            )
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "fits": self.fits,
            "gpu": self.gpu.id,
            "num_gpus": self.num_gpus,
            "total_memory_bytes": int(self.gpu.total_memory_bytes),
            "memory_used_by_others_bytes": self.memory_used_by_others_bytes,
            "safety_margin_bytes": self.safety_margin_bytes,
            "total_resident_bytes": self.total_resident_bytes,
            "reason": self.reason,
            "instances": self.rows(),
            "checked_orders": [
                {"order": [self.instances[i].instance.model for i in order], "result": result}
                for order, result in self.checked_orders.items()
            ],
        }

    def compose(self) -> str:
        """A docker compose file starting every instance in the order found: each waits for
        the one before it to answer /health (its KV cache allocated), so every startup check
        sees what the check here assumed."""
        if self.order is None:
            raise api.config_error("order", None, "a colocation that fits", "no start order")
        devices = yaml_list([str(i) for i in range(self.num_gpus)])
        version = self.instances[self.order[0]].plan.breakdown.engine_version
        lines = [
            yaml_comment(
                f"vramplan colocate: {len(self.order)} vLLM instances on {self.num_gpus} x "
                f"{self.gpu.id}, planned with vLLM {version}'s memory rules: run that version."
            ),
            "services:",
        ]
        previous = None
        for position, index in enumerate(self.order):
            placed = self.instances[index]
            port = self.port(index)
            name = f"vllm-{position + 1}"
            command = [placed.instance.model, *placed.plan.to_vllm_argv(), "--port", str(port)]
            for word in command:
                check_text(word, f"{name}'s command word")
            probe = (
                f"import urllib.request; urllib.request.urlopen('http://localhost:{port}/health')"
            )
            lines += [
                f"  {name}:",
                f"    image: {yaml_string('vllm/vllm-openai:v' + version)}",
                '    entrypoint: ["vllm", "serve"]',
                f"    command: {yaml_list(command)}",
                "    ipc: host",
                f'    ports: ["{port}:{port}"]',
                '    volumes: ["${HOME}/.cache/huggingface:/root/.cache/huggingface"]',
            ]
            env = placed.plan.to_vllm_env()
            if env:
                lines.append("    environment:")
                lines += [
                    f"      {yaml_string(k, interpolated=False)}: {yaml_string(v)}"
                    for k, v in env.items()
                ]
            lines += [
                "    healthcheck:",
                f"      test: {yaml_list(['CMD', 'python3', '-c', probe])}",
                "      interval: 10s",
                "      start_period: 900s",
                "      retries: 6",
                "    deploy:",
                "      resources:",
                "        reservations:",
                "          devices:",
                f"            - {{driver: nvidia, device_ids: {devices}, capabilities: [gpu]}}",
            ]
            if previous is not None:
                lines += [
                    "    depends_on:",
                    f"      {previous}: {{condition: service_healthy}}",
                ]
            previous = name
        return "\n".join(lines) + "\n"


def _instance(item: str | Instance | tuple[str, Mapping[str, Any]]) -> Instance:
    if isinstance(item, Instance):
        return item
    if isinstance(item, str):
        return Instance(item)
    if isinstance(item, tuple) and len(item) == 2 and isinstance(item[1], Mapping):
        return Instance(str(item[0]), dict(item[1]))
    raise api.config_error(
        "instances", item, "a model id, (model, {knob: value}) or vramplan.Instance", "wrong type"
    )


def _per_instance(
    name: str, value: int | Sequence[int] | None, count: int, default: int
) -> list[int]:
    """One value for every instance, or one per instance."""
    if value is None:
        return [default] * count
    values = [value] if isinstance(value, int) else list(value)
    if len(values) == 1:
        values *= count
    if len(values) != count:
        raise api.config_error(
            name, value, f"one value, or one per instance ({count})", "wrong number of values"
        )
    # Up to what a C++ int64 holds: the solver bounds the context by each model's maximum.
    return [api._integer(name, v, 0 if name == "context" else 1, api.INT64_MAX) for v in values]


def _plan(
    spec: _core.ModelSpec,
    gpu: _core.GpuSpec,
    num_gpus: int,
    instance: Instance,
    knobs: dict[str, Any],
    margin: int,
) -> api.Plan:
    return api.plan(
        spec,
        gpu,
        num_gpus=num_gpus,
        context=instance.context,
        concurrency=instance.concurrency,
        safety_margin_bytes=margin,
        **knobs,
    )


def _smallest_utilization(
    spec: _core.ModelSpec,
    gpu: _core.GpuSpec,
    num_gpus: int,
    instance: Instance,
    knobs: dict[str, Any],
    margin: int,
) -> api.Plan:
    """The plan at the smallest utilization (in hundredths, as the flag is written) that still
    serves the instance's target: the rest of the GPU is left to the others. The solver's own
    plan (largest safe utilization) bounds the search; when it does not fit, it is returned."""
    largest = _plan(spec, gpu, num_gpus, instance, knobs, margin)
    if not largest.fits or "gpu_memory_utilization" in knobs:
        return largest
    # Hold the prefill chunk at the solver's choice for the whole GPU: otherwise a smaller
    # utilization would be bought by shrinking max_num_batched_tokens to a handful of tokens.
    # Sequences: the target's, which is all the instance is sized for.
    knobs = {
        "max_num_batched_tokens": int(largest.max_num_batched_tokens),
        "max_num_seqs": max(1, instance.concurrency),
        **knobs,
    }

    def at(hundredths: int) -> api.Plan:
        pinned = {**knobs, "gpu_memory_utilization": hundredths / 100}
        return _plan(spec, gpu, num_gpus, instance, pinned, margin)

    low, high = 1, round(float(largest.gpu_memory_utilization) * 100)
    if not at(high).fits:
        return largest
    while low < high:  # at(high) fits
        middle = (low + high) // 2
        if at(middle).fits:
            high = middle
        else:
            low = middle + 1
    return at(high)


def _chosen_knobs(instance_knobs: dict[str, Any], result: api.Plan) -> dict[str, Any]:
    """The user's knobs with the plan's choices pinned: what the launch line carries."""
    return {
        **instance_knobs,
        "gpu_memory_utilization": float(result.gpu_memory_utilization),
        "max_model_len": int(result.max_model_len),
        "max_num_seqs": int(result.max_num_seqs),
        "max_num_batched_tokens": int(result.max_num_batched_tokens),
    }


def _starts(placed: Placed, gpu: _core.GpuSpec, num_gpus: int, others: int) -> tuple[bool, str]:
    """Whether the instance starts with `others` bytes already used on each of its GPUs, and
    the core's message when not."""
    if others >= gpu.total_memory_bytes:
        return False, "the instances before it hold the whole GPU"
    b = api.breakdown(
        placed.spec, gpu, num_gpus=num_gpus, memory_used_by_others_bytes=others, **placed.knobs
    )
    if b.outcome == "started":
        return True, "starts"
    message = b.messages[0] if b.messages else ""
    return False, f"{b.outcome}" + (f" - {message}" if message else "")


def check_order(colocation: Colocation, order: Sequence[int]) -> str:
    """Start the instances in `order` (indices): "passes", or which instance fails and how."""
    held = colocation.memory_used_by_others_bytes + colocation.safety_margin_bytes
    for index in order:
        placed = colocation.instances[index]
        ok, why = _starts(placed, colocation.gpu, colocation.num_gpus, held)
        if not ok:
            return f"{placed.instance.model} (started after {gib_text(held)} held) fails: {why}"
        held += placed.resident_bytes
    return "passes"


def colocate(
    instances: Sequence[str | Instance | tuple[str, Mapping[str, Any]]],
    gpu: str | _core.GpuSpec = api.DEFAULT_GPU,
    *,
    num_gpus: int = 1,
    context: int | Sequence[int] | None = None,
    concurrency: int | Sequence[int] | None = None,
    memory_used_by_others_bytes: int = 0,
    safety_margin_bytes: int = DEFAULT_SAFETY_MARGIN_BYTES,
    engine: str = "vllm",
) -> Colocation:
    """Several instances on the same `num_gpus` x `gpu`, each spanning all of them (TP x PP =
    num_gpus; TP = num_gpus unless an instance pins its split). Each instance without a pinned
    `gpu_memory_utilization` gets the smallest one that serves its target (`context`,
    `concurrency`: one value or one per instance; context 0 = the model's maximum, concurrency
    default 1). An instance started later sees the earlier ones at what they hold under load
    (`_core.resident_bytes`: the activation peak they freed after profiling comes back with the
    first full batch), so an order found here does not rely on memory that is only free while
    the earlier instances are idle. `safety_margin_bytes` is kept free once per GPU."""
    check_engine(engine)
    items = [_instance(i) for i in instances]
    if not 1 <= len(items) <= MAX_INSTANCES:
        raise api.config_error(
            "instances", len(items), f"1 .. {MAX_INSTANCES} instances", "wrong number"
        )
    gpu_spec = gpu if isinstance(gpu, _core.GpuSpec) else api.load_gpu(gpu)
    api._integer("num_gpus", num_gpus, 1, 1 << 10)
    api._integer("memory_used_by_others_bytes", memory_used_by_others_bytes, 0, 1 << 50)
    api._integer("safety_margin_bytes", safety_margin_bytes, 0, 1 << 50)
    contexts = _per_instance("context", context, len(items), 0)
    concurrencies = _per_instance("concurrency", concurrency, len(items), 1)
    placed: list[Placed] = []
    unfit: list[str] = []
    for item, item_context, item_concurrency in zip(items, contexts, concurrencies):
        instance = Instance(
            item.model,
            dict(item.knobs),
            item_context if context is not None else item.context,
            item_concurrency if concurrency is not None else item.concurrency,
        )
        knobs = dict(instance.knobs)
        if not any(knobs.get(f) for f in _SPLIT):
            knobs["tensor_parallel_size"] = num_gpus
        tp = knobs.get("tensor_parallel_size") or 1
        pp = knobs.get("pipeline_parallel_size") or 1
        if tp * pp != num_gpus:
            raise api.config_error(
                f"{instance.model}: tensor_parallel_size x pipeline_parallel_size",
                tp * pp,
                f"{num_gpus} (every instance spans the {num_gpus} shared GPUs)",
                "the instance does not span the shared GPUs",
            )
        spec = api.load_model(instance.model)
        # Planned alone (others = the memory held outside vramplan's instances): each
        # instance's own budget does not depend on what the others hold; only its check does.
        result = _smallest_utilization(spec, gpu_spec, num_gpus, instance, knobs, 0)
        if not result.fits:
            unfit.append(f"{instance.model} does not fit even alone: {result.verdict}")
            chosen = knobs
            resident = 0
        else:
            chosen = _chosen_knobs(knobs, result)
            resident = int(_core.resident_bytes(result.breakdown._core))
        placed.append(Placed(instance, spec, result, chosen, resident))
    total = sum(p.resident_bytes for p in placed)
    colocation = Colocation(
        gpu_spec,
        num_gpus,
        placed,
        None,
        "",
        total,
        safety_margin_bytes,
        memory_used_by_others_bytes,
        {},
    )
    if unfit:
        colocation.reason = "; ".join(unfit)
        return colocation
    budget = int(gpu_spec.total_memory_bytes) - memory_used_by_others_bytes - safety_margin_bytes
    if total > budget:
        colocation.reason = (
            f"under load the instances hold {gib_text(total)} per GPU together, more than the "
            f"{gib_text(budget)} the GPU has for them (total {gib_text(gpu_spec.total_memory_bytes)}"
            f" less {gib_text(memory_used_by_others_bytes)} used by others and a "
            f"{gib_text(safety_margin_bytes)} margin): no start order helps"
        )
        return colocation
    given = tuple(range(len(placed)))
    colocation.checked_orders[given] = check_order(colocation, given)
    order = list(given) if colocation.checked_orders[given] == "passes" else _find_order(colocation)
    if order is None:
        colocation.reason = (
            "no start order passes every instance's startup check; in the order given: "
            + colocation.checked_orders[given]
        )
        return colocation
    colocation.order = order
    colocation.checked_orders[tuple(order)] = "passes"
    reverse = tuple(reversed(order))
    colocation.checked_orders.setdefault(reverse, check_order(colocation, reverse))
    return colocation


def _find_order(colocation: Colocation) -> list[int] | None:
    """A start order in which every instance starts, or None. What an instance's check sees
    depends only on which instances started before it, not on their order, so the search
    visits sets of started instances (at most 2^n x n checks), keeping the first order that
    reaches each set."""
    count = len(colocation.instances)
    base = colocation.memory_used_by_others_bytes + colocation.safety_margin_bytes
    reached: dict[int, list[int]] = {0: []}
    for size in range(count):
        for mask, order in sorted((m, o) for m, o in reached.items() if len(o) == size):
            held = base + sum(colocation.instances[i].resident_bytes for i in order)
            for index in range(count):
                bit = 1 << index
                if mask & bit or mask | bit in reached:
                    continue
                placed = colocation.instances[index]
                starts, _ = _starts(placed, colocation.gpu, colocation.num_gpus, held)
                if starts:
                    reached[mask | bit] = [*order, index]
    return reached.get((1 << count) - 1)
