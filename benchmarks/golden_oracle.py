"""The whole-API regression oracle: every database model x every GPU x seeded random knobs,
through the public Python API (breakdown, plan, sweep), written as one JSON line per launch.

A refactor that must not move a number is checked by writing the oracle before it and
comparing after it:

    python3 benchmarks/golden_oracle.py --out /tmp/before.jsonl
    ... change ...
    python3 benchmarks/golden_oracle.py --compare /tmp/before.jsonl

It is a regression oracle, not a correctness test: it says *that* something moved and where
(launch, JSON path, before, after), never whether the new number is right. Refused launches are
recorded by error class and field (the message text may be reworded without moving a number).
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import zlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import vramplan

VERSIONS = ["0.6.4", "0.8.5", "0.10.1", "0.11.0", "0.19.0", "0.21.0", "0.27.0", "0.29.0", ""]
LAUNCHES_PER_PAIR = 2


def launches() -> Iterator[tuple[str, str, dict[str, Any]]]:
    """Deterministic launches: each (model, GPU) pair seeds its own generator."""
    for model in vramplan.models():
        for gpu in vramplan.gpus():
            rng = random.Random(zlib.crc32(f"{model}|{gpu}".encode()))
            for _ in range(LAUNCHES_PER_PAIR):
                knobs: dict[str, Any] = {"engine_version": rng.choice(VERSIONS)}
                knobs["tensor_parallel_size"] = rng.choice([1, 1, 2, 4, 8])
                if rng.random() < 0.5:
                    knobs["gpu_memory_utilization"] = round(rng.uniform(0.5, 0.97), 3)
                if rng.random() < 0.5:
                    knobs["max_model_len"] = rng.choice([2048, 4096, 8192, 32768, 131072])
                if rng.random() < 0.4:
                    knobs["max_num_seqs"] = rng.choice([1, 8, 64, 256, 1000])
                if rng.random() < 0.3:
                    knobs["max_num_batched_tokens"] = rng.choice([2048, 4096, 8192, 16384])
                if rng.random() < 0.2:
                    knobs["kv_cache_dtype"] = "fp8"
                if rng.random() < 0.15:
                    knobs["enforce_eager"] = True
                if rng.random() < 0.1:
                    knobs["llm_class"] = True
                yield model, gpu, knobs


def _refusal(err: vramplan.Error) -> dict[str, Any]:
    return {"error": type(err).__name__, "field": getattr(err, "field", "")}


def record(model: str, gpu: str, knobs: dict[str, Any], index: int) -> dict[str, Any]:
    out: dict[str, Any] = {"model": model, "gpu": gpu, "knobs": knobs}
    num_gpus = knobs["tensor_parallel_size"]
    try:
        out["breakdown"] = vramplan.breakdown(model, gpu, num_gpus=num_gpus, **knobs).to_dict()
    except vramplan.Error as err:
        out["breakdown"] = _refusal(err)
    pinned = {k: v for k, v in knobs.items() if k not in ("max_num_seqs", "gpu_memory_utilization")}
    try:
        out["plan"] = vramplan.plan(model, gpu, num_gpus=num_gpus, **pinned).to_dict()
    except vramplan.Error as err:
        out["plan"] = _refusal(err)
    if index % 7 == 0:  # sweeps are slower to record: every seventh launch
        sweep_knobs = {
            k: v
            for k, v in knobs.items()
            if k not in ("gpu_memory_utilization", "max_model_len", "max_num_seqs")
        }
        try:
            frame = vramplan.sweep(
                model,
                gpu,
                num_gpus=num_gpus,
                gpu_memory_utilization=[0.6, 0.8, 0.9, 0.95],
                max_model_len=[4096, 32768],
                max_num_seqs=[16, 256],
                **sweep_knobs,
            )
            out["sweep"] = {c: [str(v) for v in frame[c].tolist()] for c in frame.columns}
        except vramplan.Error as err:
            out["sweep"] = _refusal(err)
    return out


def differences(before: Any, after: Any, path: str = "") -> Iterator[tuple[str, Any, Any]]:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after)):
            yield from differences(before.get(key), after.get(key), f"{path}.{key}")
    elif isinstance(before, list) and isinstance(after, list) and len(before) == len(after):
        for i, (b, a) in enumerate(zip(before, after, strict=True)):
            yield from differences(b, a, f"{path}[{i}]")
    elif before != after:
        yield path, before, after


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--out", help="write the oracle to this JSON-lines file")
    group.add_argument("--compare", help="compare the API now with this earlier oracle file")
    parser.add_argument("--show", type=int, default=20, help="differences to print (default 20)")
    args = parser.parse_args()
    records = (record(m, g, k, i) for i, (m, g, k) in enumerate(launches()))
    if args.out:
        count = 0
        with Path(args.out).open("w", encoding="utf-8") as out:
            for rec in records:
                out.write(json.dumps(rec, sort_keys=True) + "\n")
                count += 1
        print(f"golden oracle: {count} launches written to {args.out}")
        return 0
    changed_launches = 0
    changed_paths: dict[str, int] = {}
    shown = 0
    count = 0
    earlier: dict[tuple[str, str, str], Any] = {}
    with Path(args.compare).open(encoding="utf-8") as lines:
        for line in lines:
            rec = json.loads(line)
            earlier[(rec["model"], rec["gpu"], json.dumps(rec["knobs"], sort_keys=True))] = rec
    added = 0
    for rec in records:
        key = (rec["model"], rec["gpu"], json.dumps(rec["knobs"], sort_keys=True))
        before = earlier.pop(key, None)
        if before is None:
            added += 1  # a model or GPU the earlier database lacked
            continue
        count += 1
        diffs = list(differences(before, json.loads(json.dumps(rec, sort_keys=True))))
        if not diffs:
            continue
        changed_launches += 1
        for path, b, a in diffs:
            top = path.split("[")[0]
            changed_paths[top] = changed_paths.get(top, 0) + 1
            if shown < args.show:
                shown += 1
                print(f"{rec['model']} on {rec['gpu']} {rec['knobs']}: {path}: {b!r} -> {a!r}")
    if added or earlier:
        print(
            f"golden oracle: {added} launches new, {len(earlier)} launches gone (database changed)"
        )
    for path, n in sorted(changed_paths.items(), key=lambda kv: -kv[1]):
        print(f"  {n:7d} {path}")
    print(f"golden oracle: {count} launches compared, {changed_launches} changed")
    return 1 if changed_launches else 0


if __name__ == "__main__":
    sys.exit(main())
