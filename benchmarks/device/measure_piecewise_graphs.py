"""Device measurement of a piecewise CUDA-graph capture shaped like vLLM's V1 runner (issue 25):
one graph per (capture size x layer piece), every graph in one shared pool, sizes captured
largest first, each piece a gated MLP block (two cuBLAS GEMMs, an activation, a residual add)
whose output feeds the next piece. Reports the memory the capture holds, split into torch's pool
(reserved growth) and memory outside torch's allocator (graph executables), per piece.
Run: `python3 benchmarks/device/measure_piecewise_graphs.py > OUT.json` on a lent GPU.
"""

from __future__ import annotations

import json
import sys

import torch

MIB = 1 << 20
SIZES = [1, 2, 4, *range(8, 257, 8), *range(272, 513, 16)]  # 51 sizes (0.11+)


def device_used() -> int:
    free, total = torch.cuda.mem_get_info()
    return total - free


def capture(layers: int, hidden: int, intermediate: int, sizes: list[int]) -> dict:
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    dt = torch.bfloat16
    up = [
        torch.randn(2 * intermediate, hidden, device="cuda", dtype=dt) * 0.01 for _ in range(layers)
    ]
    down = [
        torch.randn(hidden, intermediate, device="cuda", dtype=dt) * 0.01 for _ in range(layers)
    ]
    inputs = torch.randn(max(sizes), hidden, device="cuda", dtype=dt)
    # Warm every GEMM shape eagerly first (as vLLM's warm-up runs do), so that cuBLAS handles,
    # workspaces and kernel modules are loaded before the measurement.
    for b in sizes:
        x = inputs[:b]
        for i in range(layers):
            g, u = torch.nn.functional.linear(x, up[i]).chunk(2, dim=-1)
            x = x + torch.nn.functional.linear(torch.nn.functional.silu(g) * u, down[i])
    torch.cuda.synchronize()
    used0 = device_used()
    reserved0 = torch.cuda.memory_reserved()
    pool = torch.cuda.graph_pool_handle()
    stream = torch.cuda.Stream()
    graphs = []
    with torch.cuda.stream(stream):
        for b in sorted(sizes, reverse=True):
            x = inputs[:b]
            for i in range(layers):
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph, pool=pool, stream=stream):
                    g, u = torch.nn.functional.linear(x, up[i]).chunk(2, dim=-1)
                    y = x + torch.nn.functional.linear(torch.nn.functional.silu(g) * u, down[i])
                graphs.append(graph)
                x = y
            del x, y
    torch.cuda.synchronize()
    used1 = device_used()
    reserved1 = torch.cuda.memory_reserved()
    pieces = len(sizes) * layers
    result = {
        "layers": layers,
        "hidden": hidden,
        "intermediate": intermediate,
        "capture_sizes": len(sizes),
        "pieces": pieces,
        "device_used_delta_mib": (used1 - used0) / MIB,
        "torch_pool_mib": (reserved1 - reserved0) / MIB,
        "outside_torch_mib": ((used1 - used0) - (reserved1 - reserved0)) / MIB,
        "mib_per_piece": (used1 - used0) / MIB / pieces,
        "outside_torch_mib_per_piece": ((used1 - used0) - (reserved1 - reserved0)) / MIB / pieces,
    }
    del graphs, up, down, inputs
    torch.cuda.synchronize()
    torch.cuda.empty_cache()
    return result


def main() -> None:
    out = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "runs": []}
    for layers, hidden, intermediate in (
        (8, 4096, 14336),
        (16, 4096, 14336),
        (8, 2048, 7168),
        (8, 1024, 3584),
        (8, 4096, 3584),
    ):
        out["runs"].append(capture(layers, hidden, intermediate, SIZES))
        print(json.dumps(out["runs"][-1]), file=sys.stderr)
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
