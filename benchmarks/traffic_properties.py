"""The solver's traffic semantics over the golden oracle's launches (every database model x GPU x
seeded knobs, benchmarks/golden_oracle.py), as counts:

- max_num_seqs: for every fitting plan, either the cap it names (the release default, the
  user's value, a concurrency target or a workload) or the largest that starts — one more
  sequence, replayed through the engine, does not start;
- full-length concurrency: the sequences of max_model_len the plan reports equal
  min(max_num_seqs, floor(vLLM's "Maximum concurrency")) — no under-count.

    python3 benchmarks/traffic_properties.py [--limit N]

Prints the counts and the first violations; exits 1 when any property fails. Slow (thousands of
plans), so it is a benchmark-side check, not a test.
"""

from __future__ import annotations

import argparse
import math
import sys

import vramplan
from golden_oracle import launches


def check(model: str, gpu: str, knobs: dict[str, object]) -> tuple[str, str] | None:
    """(property, detail) that fails for this launch's plan, or None."""
    pinned = {k: v for k, v in knobs.items() if k not in ("max_num_seqs", "gpu_memory_utilization")}
    num_gpus = int(knobs["tensor_parallel_size"])  # type: ignore[call-overload]
    try:
        plan = vramplan.plan(model, gpu, num_gpus=num_gpus, **pinned)
    except vramplan.Error:
        return None
    if not plan.fits:
        return None
    held = min(plan.max_num_seqs, math.floor(plan.max_concurrency + 1e-9))
    if plan.concurrent_sequences < held:
        return "under-count", f"{plan.concurrent_sequences} < {held} ({plan.verdict})"
    binding = plan.binding["max_num_seqs"]
    if binding.startswith(("release default", "pinned")):
        return None
    more = {**pinned, **plan.to_llm_kwargs(), "max_num_seqs": plan.max_num_seqs + 1}
    more.pop("model", None)
    try:
        after = vramplan.breakdown(model, gpu, num_gpus=num_gpus, **more)
    except vramplan.Error:
        return None  # one more is refused outright: the cap holds
    if binding.startswith(("the largest that keeps", "the workload")):
        return None  # a target's cap: one more starts but misses the target
    if after.outcome == "started":
        return "not the largest", f"max_num_seqs {plan.max_num_seqs} ({binding}); one more starts"
    return None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=0, help="launches to check (0: all)")
    args = parser.parse_args()
    counts: dict[str, int] = {"checked": 0, "under-count": 0, "not the largest": 0}
    shown = 0
    for index, (model, gpu, knobs) in enumerate(launches()):
        if args.limit and index >= args.limit:
            break
        counts["checked"] += 1
        failure = check(model, gpu, knobs)
        if failure is None:
            continue
        counts[failure[0]] += 1
        if shown < 10:
            print(f"{failure[0]}: {model} on {gpu} {knobs}: {failure[1]}")
            shown += 1
    print(", ".join(f"{name} {count}" for name, count in counts.items()))
    return 1 if counts["under-count"] or counts["not the largest"] else 0


if __name__ == "__main__":
    sys.exit(main())
