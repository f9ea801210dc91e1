"""Device measurements behind the planner's physical constants (issue 25), run on a lent GPU
with PyTorch: `python3 benchmarks/device/measure_mechanisms.py > OUT.json`. Not a test; the
figures it printed are quoted, with the device, in docs/validation/device-measurements.md.

1. Sampler temporaries per logit of vLLM's V1 PyTorch-native top-k/top-p path as its profile
   run exercises it (temperature 0.5, top_p 0.9, top_k vocab - 1: a full sort), and of the
   FlashInfer-shaped path (top-k masked copy, softmax), as peak allocated bytes above the bf16
   logits, per (request x vocab entry).
2. CUDA-graph memory outside the caching allocator: device memory that instantiated graphs hold
   (cudaMemGetInfo drop minus torch's reserved growth), per graph and per kernel node.
3. The CUDA context and the first cuBLAS/cuBLASLt call's memory outside torch's allocator.
"""

from __future__ import annotations

import json
import sys

import torch

MIB = 1 << 20


def device_used() -> int:
    free, total = torch.cuda.mem_get_info()
    return total - free


def sampler_native(logits_bf16: torch.Tensor) -> torch.Tensor:
    # The op sequence of the V1 sampler's profile pass (written from the algorithm, not copied):
    # fp32 copy, temperature in place, ascending sort with int64 indices, top-k threshold mask,
    # softmax + cumulative sum in place, top-p mask, scatter back, softmax, exponential race.
    logits = logits_bf16.to(torch.float32)
    logits.div_(0.5)
    k = torch.full((logits.shape[0],), logits.shape[1] - 1, device=logits.device)
    p = torch.full((logits.shape[0],), 0.9, device=logits.device)
    values, index = logits.sort(dim=-1, descending=False)
    threshold = values.gather(1, (values.size(1) - k.long()).unsqueeze(1))
    below_k = values < threshold
    values.masked_fill_(below_k, -float("inf"))
    probs_sorted = values.softmax(dim=-1)
    torch.cumsum(probs_sorted, dim=-1, out=probs_sorted)
    below_p = probs_sorted <= 1 - p.unsqueeze(1)
    below_p[:, -1] = False
    values.masked_fill_(below_p, -float("inf"))
    scattered = values.scatter(dim=-1, index=index, src=values)
    del values, index, below_k, probs_sorted, below_p
    probs = scattered.softmax(dim=-1, dtype=torch.float32)
    race = torch.empty_like(probs)
    race.exponential_()
    return probs.div_(race).argmax(dim=-1)


def sampler_masked(logits_bf16: torch.Tensor) -> torch.Tensor:
    # FlashInfer's top_k_top_p_sampling_from_logits shape: fp32 logits, a top-k masked copy,
    # softmax probabilities; the sampling kernel itself works in place on the probabilities.
    logits = logits_bf16.to(torch.float32)
    kth = logits.topk(8, dim=-1).values[:, -1:]
    masked = logits.masked_fill(logits < kth, -float("inf"))
    probs = masked.softmax(dim=-1)
    return probs.argmax(dim=-1)


def sampler_bytes_per_logit(fn, requests: int, vocab: int) -> float:
    torch.cuda.empty_cache()
    logits = torch.randn(requests, vocab, device="cuda", dtype=torch.bfloat16)
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    base = torch.cuda.memory_allocated()
    fn(logits)
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated() - base
    return peak / (requests * vocab)


def graph_memory(graphs: int, nodes: int, width: int) -> dict:
    # `graphs` graphs of `nodes` elementwise kernels each, all in one private pool (as vLLM
    # shares one pool across its pieces); static inputs so that only the pool and the driver's
    # per-graph state grow.
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    static = torch.randn(width, device="cuda")
    pool = torch.cuda.graph_pool_handle()
    stream = torch.cuda.Stream()
    used0 = device_used()
    reserved0 = torch.cuda.memory_reserved()
    kept = []
    with torch.cuda.stream(stream):
        for _ in range(graphs):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=pool, stream=stream):
                x = static
                for _ in range(nodes):
                    x = x * 1.0001 + 0.5
            kept.append((g, x))
    torch.cuda.synchronize()
    used1 = device_used()
    reserved1 = torch.cuda.memory_reserved()
    outside = (used1 - used0) - (reserved1 - reserved0)
    result = {
        "graphs": graphs,
        "kernel_nodes_per_graph": 2 * nodes,
        "width": width,
        "device_used_delta_mib": (used1 - used0) / MIB,
        "torch_reserved_delta_mib": (reserved1 - reserved0) / MIB,
        "outside_torch_mib": outside / MIB,
        "outside_torch_kib_per_graph": outside / 1024 / graphs,
        "outside_torch_bytes_per_node": outside / (graphs * 2 * nodes),
    }
    del kept
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return result


def main() -> None:
    out: dict = {
        "torch": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "device": torch.cuda.get_device_name(0),
        "total_memory_bytes": torch.cuda.get_device_properties(0).total_memory,
    }
    free0, total = torch.cuda.mem_get_info()
    out["context_bytes_after_init"] = total - free0
    a = torch.randn(4096, 4096, device="cuda", dtype=torch.bfloat16)
    used_before = device_used()
    reserved_before = torch.cuda.memory_reserved()
    (a @ a).sum().item()
    torch.nn.functional.linear(a[:7], a).sum().item()
    out["first_matmul_outside_torch_bytes"] = (device_used() - used_before) - (
        torch.cuda.memory_reserved() - reserved_before
    )
    del a
    out["sampler"] = []
    for requests, vocab in ((256, 152064), (1024, 151936), (1024, 128256)):
        out["sampler"].append(
            {
                "requests": requests,
                "vocab": vocab,
                "native_bytes_per_logit_above_bf16": sampler_bytes_per_logit(
                    sampler_native, requests, vocab
                ),
                "masked_bytes_per_logit_above_bf16": sampler_bytes_per_logit(
                    sampler_masked, requests, vocab
                ),
            }
        )
    out["graphs"] = [
        graph_memory(graphs, nodes, 4096)
        for graphs, nodes in ((200, 4), (200, 16), (800, 4), (800, 16), (1600, 8))
    ]
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
