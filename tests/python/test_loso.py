"""benchmarks/validate.py --loso: what a source is, the percentile it reports, and that a held-out
source is never part of the fit that predicts it."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
import vramplan
import vramplan.validate
from vramplan import _core

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
# The six records from dennislee22/vLLM-benchmarking (vLLM 0.10.1.1 on A100), one source.
DENNISLEE = {f"pub-{n}" for n in range(300, 306)}


def _bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location(
        "bench_validate", ROOT / "benchmarks" / "validate.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _records(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines() if line]


def test_source_key_is_repository_and_thread() -> None:
    key = _bench().source_key
    # Source texts as the records write them (tests/data/public_records.jsonl, measured/dev.jsonl).
    assert key({"source": "vllm-project/vllm#10517 (comment by kaspersiminski 2024-12-02)"}) == (
        "vllm-project/vllm#10517"
    )
    assert key({"source": "vllm-project/vllm PR#2031 (comment by WoosukKwon, 2023-12-12)"}) == (
        "vllm-project/vllm PR#2031"
    )
    assert key({"source": "llm-d-incubation/llm-d-planner@d3121e05 accuracy/results/x.log"}) == (
        "llm-d-incubation/llm-d-planner"
    )
    assert key({"source": "dennislee22/vLLM-benchmarking@b474d1e log/a.log (write-up)"}) == (
        "dennislee22/vLLM-benchmarking"
    )


def test_percentile_is_nearest_rank() -> None:
    percentile = _bench().percentile
    values = [float(v) for v in range(1, 11)]  # 1..10: the 9th of 10 is the 90th percentile
    assert percentile(values, 0.9) == 9.0
    assert percentile(values, 0.5) == 5.0
    assert percentile([3.0, 1.0, 2.0], 0.9) == 3.0  # ceil(2.7) = 3rd of 3


def test_a_lone_source_is_predicted_by_the_shipped_row() -> None:
    """With one source only, nothing else can be fitted on: every row is the shipped replay."""
    bench = _bench()
    records = [r for r in _records(DATA / "public_records.jsonl") if r["id"] in DENNISLEE]
    rows, fits = bench.loso_rows(records)
    assert {r["id"] for r in rows} == DENNISLEE
    assert not any(r["held_out"] for r in rows)
    assert all(r["predicted"] == r["shipped"] for r in rows)
    # No source the shipped row never saw: the log's rounding, for every figure and the graphs'.
    assert fits[0] == "sigma 0.005 GiB, CUDA graphs 0.005 GiB"
    assert fits[1:] == [
        ("| `dennislee22/vLLM-benchmarking` | 0.10.1 | 6 | 0 | 0 | shipped row (no other source) |")
    ]


def test_held_out_source_is_not_in_its_own_fit() -> None:
    """Two sources at vLLM 0.10.1 (0.10.1.1 and 0.10.1.x). The A100 source is cited by
    engines.yaml (pub-300 checks the FlashInfer sampler), so it is fitted on the other source's
    record only, from the priors of model_specs/calibration_priors.yaml (no record behind them):
    one launch is then enough, and its six records are held out. engines.yaml cites no record of the H100 source (vllm#23278),
    so the shipped row, fitted without it, predicts it held out."""
    bench = _bench()
    public = _records(DATA / "public_records.jsonl")
    dev = _records(DATA / "measured" / "dev.jsonl")
    records = [r for r in public if r["id"] in DENNISLEE]
    records += [r for r in dev if r["id"] == "dev-008"]  # vllm#23278, vLLM 0.10 on H100
    rows, fits = bench.loso_rows(records)
    # The weight: 1.4826 (the normal-consistent MAD factor) x the median shipped-row KV miss
    # over the sources engines.yaml never cites, here dev-008 alone (logged -2.14 GiB).
    dev008 = next(r for r in records if r["id"] == "dev-008")
    replay = vramplan.validate.replay_record(dev008)
    assert replay.predicted is not None
    miss = abs(replay.predicted["kv_cache_gib"] - dev008["kv_cache_gib"])
    assert dev008["kv_cache_gib"] == -2.14
    # dev-008 failed before capturing graphs: no graph figure, so those weigh by the rounding.
    assert dev008["cudagraph_gib"] is None
    assert fits[0] == f"sigma {1.4826 * miss:.3f} GiB, CUDA graphs 0.005 GiB"
    assert fits[1] == (
        "| `dennislee22/vLLM-benchmarking` | 0.10.1 | 6 | 1 | 1 | fitted on other sources |"
    )
    assert fits[2] == (
        "| `vllm-project/vllm#23278` | 0.10.1 | 1 | 6 | 1 | "
        "shipped row (engines.yaml cites no record of this source) |"
    )
    assert {r["id"] for r in rows if r["held_out"]} == DENNISLEE | {"dev-008"}
    # The fitted prediction is not the shipped row's.
    assert any(r["predicted"] != r["shipped"] for r in rows if r["id"] in DENNISLEE)


def test_a_record_names_its_config_copy() -> None:
    """pub-406 (microsoft/phi-1_5, no database spec) names its config.json copy: the replay reads
    the model from that file and keeps the record's id and model for its groups. Its weights
    against vLLM's own line: 1,418,270,720 parameters by hand (tests/python/test_public_records.py)
    in fp16 are 2.6418 GiB; the log says 'Loading model weights took 2.6419 GB'."""
    bench = _bench()
    record = next(r for r in _records(DATA / "public_records.jsonl") if r["id"] == "pub-406")
    replayed = bench.replay_form(record)
    assert Path(replayed["model"]) == DATA / "configs" / "microsoft__phi-1_5.json"
    assert record["model"] == "microsoft/phi-1_5"  # the record itself is not changed
    replay = vramplan.validate.replay_record(replayed)
    assert replay.predicted is not None, replay.unsupported
    assert abs(replay.predicted["weights_gib"] - 2.6419) <= 0.001
    rows, _ = bench.loso_rows([record])
    assert {r["id"] for r in rows} == {"pub-406"}


def test_a_record_without_config_copy_is_replayed_as_written() -> None:
    bench = _bench()
    record = {"id": "x", "model": "Qwen/Qwen3-8B"}
    assert bench.replay_form(record) is record


@pytest.mark.parametrize("name", ["missing.json", "../configs/microsoft__phi-1_5.json", 7])
def test_a_bad_config_name_is_an_error_naming_the_record(name: object) -> None:
    bench = _bench()
    with pytest.raises(vramplan.Error, match=r"record pub-x: model_config: "):
        bench.replay_form({"id": "pub-x", "model": "m", "model_config": name})


def test_graph_band_is_the_p90_relative_held_out_error_rounded_up() -> None:
    """Held-out pool errors of +10%, -50%, +119.2% and +30%: the nearest-rank p90 of four is the
    largest, 119.2%, stated as 1.20 of the logged pool; shipped-row rows do not count, and two
    held-out figures are too few."""
    bench = _bench()

    def row(pct: float, held_out: bool = True) -> dict[str, object]:
        return {"pct_error": pct, "held_out": held_out}

    rows = [row(10.0), row(-50.0), row(119.2), row(30.0), row(400.0, held_out=False)]
    assert bench.graph_band_of(rows) == 1.2
    assert bench.graph_band_of(rows[:2]) is None


def test_cited_record_ids_expand_engines_yaml_shorthands() -> None:
    """engines.yaml names the records behind its constants in three shorthands; each id listed
    here is written out by hand from the text."""
    bench = _bench()
    text = "dev-049/050 (0.15), dev-049..051, dev-025/026/031, pub-307 and pub-308/309; dev-1234"
    assert bench.cited_record_ids(text) == {
        "dev-049", "dev-050", "dev-051", "dev-025", "dev-026", "dev-031",
        "pub-307", "pub-308", "pub-309",
    }  # fmt: skip


def test_nvlink_tp_charge_is_the_largest_logged_figure() -> None:
    """engines.yaml's TP > 1 NVLink charge is set by a rule, and the leave-one-source-out
    predictions use the same rule over the other sources: the largest non-torch figure logged at
    TP > 1 on a named GPU that is not pcie_only, from vLLM 0.7 on, rounded up to the MiB. Over
    the shipped records that is dev-029's 2.17 GiB (2223 MiB); without llm-d-planner's records it
    is pub-021's 2.10 GiB (8 x A100 SXM, 0.7.1: 2151 MiB). dev-004's 3.58 GiB (a 0.6.4 dev
    build that counted cached activations), pub-414 (L40S, PCIe) and the unnamed GPUs of
    pub-427/438/439 do not count."""
    bench = _bench()
    records = _records(DATA / "public_records.jsonl") + _records(DATA / "measured" / "dev.jsonl")
    mib = 1 << 20
    assert bench.nvlink_tensor_parallel_charge_bytes(records) == 2223 * mib
    assert _core.engine_profile("0.19.0").non_torch_tensor_parallel_bytes == 2223 * mib
    others = [r for r in records if bench.source_key(r) != "llm-d-incubation/llm-d-planner"]
    assert bench.nvlink_tensor_parallel_charge_bytes(others) == 2151 * mib
    assert (
        bench.nvlink_tensor_parallel_charge_bytes(
            [r for r in records if r["id"] in {"dev-004", "pub-414", "pub-427", "pub-438"}]
        )
        is None
    )
