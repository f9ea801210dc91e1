"""The public validation records (tests/data/public_records.jsonl) and the model specs added to
express them, against independent figures: the config.json copies in tests/data/configs,
published safetensors index sizes, and the records' own vLLM weight-loading lines."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
import vramplan
from vramplan import _core, validate

DATA = Path(__file__).resolve().parents[1] / "data"
GIB = float(1 << 30)

# Spec id -> the config.json copy it was written from (provenance in tests/data/configs/SOURCES.md).
SPEC_CONFIGS = {
    "meta-llama/Llama-2-7b-hf": "meta-llama__Llama-2-7b-hf.json",
    "meta-llama/Llama-2-70b-hf": "meta-llama__Llama-2-70b-hf.json",
    "01-ai/Yi-1.5-34B": "01-ai__Yi-1.5-34B.json",
    "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B": "deepseek-ai__DeepSeek-R1-Distill-Qwen-1.5B.json",
    "nvidia/NVIDIA-Nemotron-Nano-9B-v2": "nvidia__NVIDIA-Nemotron-Nano-9B-v2.json",
}
# Where the values came from, not what they are: a config lists the class defaults it relied on.
_PROVENANCE_KEYS = ("id", "aliases", "source", "config_defaults")


def _shape(spec: _core.ModelSpec) -> dict:
    return {k: v for k, v in spec.to_dict().items() if k not in _PROVENANCE_KEYS}


@pytest.mark.parametrize("model", sorted(SPEC_CONFIGS))
def test_spec_matches_its_config(model: str) -> None:
    imported = vramplan.from_hf_config(DATA / "configs" / SPEC_CONFIGS[model])
    spec = vramplan.spec_database().model(model)
    assert _shape(spec) == _shape(imported)
    assert spec.parameter_count() == imported.parameter_count()


# Published model.safetensors.index.json "total_size" (bytes), which counts every stored tensor:
# the float16 parameters plus, in these early Llama-2 checkpoints, each layer's rotary inv_freq
# buffer (head_dim / 2 = 64 float32 values = 256 bytes per layer).
@pytest.mark.parametrize(
    ("model", "total_size_bytes", "layers"),
    [
        # meta-llama/Llama-2-7b-hf index: "total_size": 13476839424 (quoted by two public
        # documents, code-index hits 5842727729 and 5792390170).
        ("meta-llama/Llama-2-7b-hf", 13_476_839_424, 32),
        # meta-llama/Llama-2-70b-hf index (15 shards): "total_size": 137953316864 (code-index hit
        # 15293734452).
        ("meta-llama/Llama-2-70b-hf", 137_953_316_864, 80),
    ],
)
def test_parameter_count_matches_published_index(
    model: str, total_size_bytes: int, layers: int
) -> None:
    inv_freq_bytes = layers * 64 * 4
    expected_parameters = (total_size_bytes - inv_freq_bytes) // 2  # float16
    assert vramplan.spec_database().model(model).parameter_count() == expected_parameters


def test_r1_distill_parameter_count_by_hand() -> None:
    """No published index size was found for DeepSeek-R1-Distill-Qwen-1.5B; its count written out
    from the config (Qwen2: q/k/v biases, untied lm_head, two norms per layer)."""
    hidden, inter, vocab, layers, kv_width = 1536, 8960, 151936, 28, 2 * 128
    attention = (hidden * hidden + hidden) + 2 * (hidden * kv_width + kv_width) + hidden * hidden
    per_layer = attention + 3 * hidden * inter + 2 * hidden
    expected = 2 * vocab * hidden + layers * per_layer + hidden  # embed, lm_head, final norm
    assert expected == 1_777_088_000
    db = vramplan.spec_database()
    assert db.model("deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B").parameter_count() == expected


def test_qwen2_7b_instruct_parameter_count_by_hand() -> None:
    """Qwen/Qwen2-7B-Instruct (spec from the Qwen2Config printed in Retruth/deontic
    nlp_models/qwen2/README.md): the published '7.62B' count, written out from the config (q/k/v
    biases, untied lm_head, two norms per layer)."""
    hidden, inter, vocab, layers, kv_width = 3584, 18944, 152064, 28, 4 * 128
    attention = (hidden * hidden + hidden) + 2 * (hidden * kv_width + kv_width) + hidden * hidden
    per_layer = attention + 3 * hidden * inter + 2 * hidden
    expected = 2 * vocab * hidden + layers * per_layer + hidden
    assert expected == 7_615_616_512
    assert vramplan.spec_database().model("Qwen/Qwen2-7B-Instruct").parameter_count() == expected


def test_phi_1_5_config_copy_parameter_count_by_hand() -> None:
    """tests/data/configs/microsoft__phi-1_5.json (pub-406 replays from it): the model card's
    1.3B-class count written out from the config (biased q/k/v/dense and fc1/fc2, two LayerNorm
    vectors per layer, untied lm_head with bias, final LayerNorm)."""
    hidden, inter, vocab, layers = 2048, 8192, 51200, 24
    per_layer = (
        4 * (hidden * hidden + hidden) + (hidden * inter + inter) + (inter * hidden + hidden)
    )
    per_layer += 2 * hidden
    expected = vocab * hidden + (vocab * hidden + vocab) + layers * per_layer + 2 * hidden
    assert expected == 1_418_270_720
    spec = vramplan.from_hf_config(DATA / "configs" / "microsoft__phi-1_5.json")
    # Known gap (0.004%): the planner's count leaves out lm_head.bias (vocab) and one
    # hidden-sized LayerNorm vector, both in the weight-shape listing the same public file
    # prints. Pinned, so that a fix, or a wider miss, shows here.
    assert expected - spec.parameter_count() == vocab + hidden


# vLLM's own "Loading model weights took X GB" / "Model loading took X GiB" lines (GiB in both
# spellings) in the public logs, per rank.
@pytest.mark.parametrize(
    ("model", "version", "knobs", "measured_gib", "tolerance"),
    [
        # pub-009 (vllm#12539, v0.7.0): TP=4 on L4, "Loading model weights took 0.8988 GB".
        # Hand count per rank: 449,846,272 parameters (vocab-parallel embedding and lm_head,
        # 1 of 2 KV heads replicated on each of 4 ranks) = 0.8379 GiB in bf16, plus the rotary
        # cos/sin cache 131072 x 128: 0.0625 GiB if float32, 0.0313 GiB in bf16. The planner
        # charges the bf16 cache (0.869 GiB, 3.3% short). A float32 cache would give 0.9004 GiB
        # (0.2% off), but vLLM's RotaryEmbedding casts the cache to the model dtype, so the
        # missing 0.030 GiB per rank is not explained yet: the tolerance (3.5%) states the known
        # 3.3% miss, so a change that widens it fails here.
        (
            "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
            "0.7.0",
            {"tensor_parallel_size": 4},
            0.8988,
            0.035,
        ),
        # pub-008 (vllm#23230, 0.10.1): one L40S, "Model loading took 16.5557 GiB" (the whole
        # 8.9B-parameter model in bf16, so one rank).
        ("nvidia/NVIDIA-Nemotron-Nano-9B-v2", "0.10.1", {}, 16.5557, 0.005),
        # pub-101/102 (vllm#10517, V0 0.6.4 log format): one RTX 3090, "Loading model weights
        # took 14.9888 GB" for Llama-3.1-8B-Instruct in bf16.
        ("meta-llama/Llama-3.1-8B-Instruct", "0.6.4", {}, 14.9888, 0.005),
        # pub-300/301 (dennislee22/vLLM-benchmarking, 0.10.1.1): one A100 80GB, "Model loading
        # took 14.2488 GiB" for Qwen2-7B-Instruct in bf16; pub-302..304 at TP=2: "7.1217 GiB".
        # The planner's 14.193 / 7.101 GiB are 0.4% / 0.3% short (the same unexplained
        # rotary-cache-sized gap as pub-009, here 0.056 GiB on one rank).
        ("Qwen/Qwen2-7B-Instruct", "0.10.1", {}, 14.2488, 0.005),
        ("Qwen/Qwen2-7B-Instruct", "0.10.1", {"tensor_parallel_size": 2}, 7.1217, 0.005),
    ],
)
def test_weights_match_public_loading_line(
    model: str, version: str, knobs: dict, measured_gib: float, tolerance: float
) -> None:
    b = vramplan.breakdown(model, "H100-80GB", engine_version=version, max_model_len=4096, **knobs)
    assert abs(b.weights_bytes / GIB - measured_gib) <= tolerance * measured_gib


def _public_replays() -> dict[str, validate.Replay]:
    return {r.id: r for r in validate.replay_file(DATA / "public_records.jsonl")}


def test_public_records_expressed_and_reasons() -> None:
    replays = _public_replays()
    expressed = {rid for rid, r in replays.items() if r.predicted is not None}
    assert expressed == {
        "pub-008",
        "pub-009",
        "pub-010",
        "pub-018",
        "pub-101",
        "pub-102",
        "pub-103",
        *(f"pub-{n}" for n in range(300, 314)),
        "pub-315",
        "pub-316",
        "pub-317",
        "pub-318",
        "pub-319",
        "pub-400",
        "pub-401",
        "pub-412",
        "pub-413",
        "pub-414",
        "pub-415",
        "pub-416",
        "pub-419",
        "pub-423",
        "pub-424",
        "pub-425",
        "pub-426",
        "pub-427",
        "pub-428",
        "pub-429",
        "pub-430",
        "pub-431",
        "pub-438",
        "pub-439",
        "pub-454",
        "pub-455",
        *(f"pub-{n}" for n in range(462, 469)),
    }
    for rid, replay in replays.items():
        if rid not in expressed:
            assert replay.unsupported, rid


def test_startup_check_without_device_name_replays_its_outcome() -> None:
    """pub-416 (vLLM 0.10.2) prints "Free memory on device (16.01/93.0 GiB) on startup", without
    the device: other processes held 93.0 - 16.01 = 76.99 GiB, so 16.01 GiB free is short of the
    0.8 x 93.0 = 74.4 GiB asked for and the replay stops at the startup check as vLLM did."""
    replay = _public_replays()["pub-416"]
    assert replay.predicted is not None
    assert replay.measured["outcome"] == "startup_free_memory"
    assert replay.predicted["outcome"] == "startup_free_memory"


def test_single_gpu_non_torch_before_0_11_is_the_logged_figure() -> None:
    """The V1 logs before 0.11 print 0.02 GiB (RTX 4090, pub-307) and 0.07 GiB (an 80 GB card,
    pub-315) of non-torch memory at TP=1, both at 0.10.2: the planner charges the larger,
    0.07 GiB (75497472 B), not the 0.25 GiB an H100 logs at 0.18+."""
    replays = _public_replays()
    for rid, logged_gib in (("pub-307", 0.02), ("pub-315", 0.07)):
        replay = replays[rid]
        assert replay.predicted is not None, rid
        assert replay.measured["non_torch_gib"] == logged_gib, rid
        assert replay.predicted["non_torch_gib"] == 75497472 / 2**30, rid


def test_public_record_models_resolve() -> None:
    """The records whose log names the model use an id the database resolves (Llama-2 logs say
    only 'Llama2-7B' / 'Llama2-70B': the aliases stand for every Llama-2 variant of that size)."""
    db = vramplan.spec_database()
    records = {r["id"]: r for r in validate.read_records(DATA / "public_records.jsonl")}
    expected = {
        "pub-001": "meta-llama/Llama-2-7b-hf",
        "pub-002": "meta-llama/Llama-2-7b-hf",
        "pub-003": "meta-llama/Llama-2-70b-hf",
        "pub-004": "meta-llama/Llama-2-70b-hf",
        "pub-008": "nvidia/NVIDIA-Nemotron-Nano-9B-v2",
        "pub-009": "deepseek-ai/DeepSeek-R1-Distill-Qwen-1.5B",
        "pub-018": "01-ai/Yi-1.5-34B",
        "pub-101": "meta-llama/Llama-3.1-8B-Instruct",
        "pub-102": "meta-llama/Llama-3.1-8B-Instruct",
    }
    for rid, spec_id in expected.items():
        assert db.model(records[rid]["model"]).id == spec_id, rid


def test_record_knobs_appear_in_their_logs() -> None:
    """Knobs transcribed from a log are in that log's text (the record cites the line)."""
    records = {r["id"]: r for r in validate.read_records(DATA / "public_records.jsonl")}
    cases = {
        "pub-003": ("gpu_memory_utilization", "`gpu_memory_utilization` is set as 0.9"),
        "pub-009": ("max_model_len", '"--max-model-len", "32768"'),
        "pub-018": ("gpu_memory_utilization", "--gpu-memory-utilization 0.9"),
        "pub-101": ("max_model_len", "Maximum concurrency for 20000 tokens"),
        "pub-102": ("max_model_len", "Maximum concurrency for 29000 tokens"),
        "pub-021": ("max_model_len", '"OPTION_MAX_MODEL_LEN": "8192"'),
        "pub-300": ("gpu_memory_utilization", "'gpu_memory_utilization': 0.25}"),
        "pub-302": ("tensor_parallel_size", "'tensor_parallel_size': 2, 'gpu_memory_utilization'"),
        "pub-304": ("gpu_memory_utilization", "'gpu_memory_utilization': 0.5}"),
        "pub-305": ("max_model_len", "'max_model_len': 16384, 'tensor_parallel_size': 4"),
        "pub-306": ("max_num_seqs", "'gpu_memory_utilization': 0.92, 'max_num_seqs': 128}"),
        "pub-307": ("gpu_total_gib", "Free memory on device (23.21/23.65 GiB)"),
        "pub-308": ("max_model_len", "'max_model_len': 8192, 'tensor_parallel_size': 2"),
        "pub-309": ("max_num_batched_tokens", "'max_num_batched_tokens': 4096, 'max_num_seqs': 1"),
        "pub-310": ("max_model_len", "'max_model_len': 4096}"),
        "pub-311": ("max_model_len", "'max_model_len': 32768}"),
        "pub-312": ("max_model_len", "'dtype': 'bfloat16', 'max_model_len': 1024}"),
        "pub-316": ("gpu_memory_utilization", "'gpu_memory_utilization': 0.88, 'max_num_seqs': 1}"),
        "pub-317": (
            "gpu_memory_utilization",
            "'max_model_len': 4096, 'gpu_memory_utilization': 0.85}",
        ),
        "pub-318": (
            "enable_expert_parallel",
            "'enable_expert_parallel': True, 'kv_cache_dtype': 'fp8'}",
        ),
        "pub-319": ("tensor_parallel_size", "'tensor_parallel_size': 8, 'kv_cache_dtype': 'fp8'}"),
        "pub-314": ("gpu_memory_utilization", "gpu_memory_utilization (0.80) = 31.50GiB"),
        "pub-315": ("gpu_total_gib", "Free memory on device (78.57/79.18 GiB)"),
        "pub-412": ("gpu_memory_utilization", "gpu_memory_utilization (0.90) = 28.57GiB"),
        "pub-413": ("enforce_eager", "enforce_eager=True, gpu_memory_utilization=0.9,"),
        "pub-414": ("max_model_len", "max_seq_len=10000, download_dir=None"),
        "pub-415": ("gpu_total_gib", "GPU 0 has a total capacity of 14.56 GiB"),
        "pub-416": ("gpu_memory_utilization", "'gpu_memory_utilization': 0.8, 'enable_lora'"),
        "pub-313": (
            "max_num_seqs",
            "'tensor_parallel_size': 2, 'disable_mm_preprocessor_cache': True, 'max_num_seqs': 64}",
        ),
    }
    for rid, (field, text) in cases.items():
        log = (DATA / "public_logs" / f"{rid}.log").read_text(encoding="utf-8")
        assert text in log, rid
        assert record_value_in(text, records[rid][field]), rid


def record_value_in(text: str, value: object) -> bool:
    return json.dumps(value) in text or str(value) in text


# Totals vLLM or torch printed in the public logs (GiB, two decimals) that name their GPU: the
# database holds the same figure. pub-008's L40S line (44.40) disagrees with the database's
# unverified 44.52 and is reported, not asserted (docs/accuracy.md).
@pytest.mark.parametrize(
    ("gpu", "log_total_gib", "source"),
    [
        ("A100-40GB", 39.39, "pub-021: total_gpu_memory (39.39GiB)"),
        ("RTX-3090", 23.58, "pub-006: total_gpu_memory (23.58GiB)"),
        ("RTX-5090", 31.37, "pub-007: total_gpu_memory (31.37GiB)"),
        ("RTX-5090", 31.4, "pub-015: Free memory on device (30.27/31.4 GiB)"),
        ("RTX-3090", 23.58, "pub-101: total_gpu_memory=23.58GiB"),
    ],
)
def test_gpu_totals_match_public_logs(gpu: str, log_total_gib: float, source: str) -> None:
    total_gib = vramplan.spec_database().gpu(gpu).total_memory_bytes / GIB
    decimals = len(str(log_total_gib).split(".")[1])
    # Half a unit of the printed rounding, plus 0.01 GiB: different machines' drivers reserve
    # slightly different amounts (reference/gpus.md: the H100 reads 79.19 and 79.22 GiB).
    assert abs(total_gib - log_total_gib) <= 0.5 * 10**-decimals + 0.01, source


def test_every_public_gpu_is_in_the_database() -> None:
    db = vramplan.spec_database()
    for gpu in ("A100-40GB", "A100-80GB", "L40S", "L4", "RTX-3090", "RTX-4090", "RTX-5090", "T4"):
        assert db.gpu(gpu).to_dict()["vendor"] == "nvidia", gpu
    assert db.gpu("MI300X").to_dict()["vendor"] == "amd"


def _figure_texts(value: float) -> list[str]:
    """How a log line can print a GiB figure the record took from it (2 or 4 decimals, or the
    record's own spelling, e.g. 0.5 from 'took 0.50 GiB')."""
    return [f"{value:.2f}", f"{value:.4f}", str(value)]


def test_pub3xx_records_figures_are_in_their_logs() -> None:
    """Every figure of pub-300 upward is printed in its log excerpt: no number is derived or
    typed by hand (the excerpt is the verbatim source, tests/data/README.md)."""
    records = [
        r
        for r in validate.read_records(DATA / "public_records.jsonl")
        if 300 <= int(r["id"].split("-")[1]) < 400
    ]
    assert len(records) == 20
    for record in records:
        log = (DATA / "public_logs" / f"{record['id']}.log").read_text(encoding="utf-8")
        assert log.startswith("# source: https://github.com/"), record["id"]
        _assert_figures_in_log(record, log)


def test_code_index_records_figures_are_in_their_logs() -> None:
    """pub-400 upward come from files the code-search index stores,
    most without their repository's name: the excerpt's first line says which file (index id or
    repository), and every figure the record holds is printed in the excerpt."""
    records = [
        r
        for r in validate.read_records(DATA / "public_records.jsonl")
        if int(r["id"].split("-")[1]) >= 400
    ]
    assert len(records) == 70
    for record in records:
        log = (DATA / "public_logs" / f"{record['id']}.log").read_text(encoding="utf-8")
        first = log.split("\n", 1)[0]
        assert first.startswith("# source: "), record["id"]
        # A stored file by its index id, or (pub-413 upward) a repository file or an issue
        # thread by its address.
        address = first.startswith("# source: https://github.com/")
        assert "code-search index id" in first or address, record["id"]
        _assert_figures_in_log(record, log)


def _assert_figures_in_log(record: dict, log: str) -> None:
    """Every figure the record holds is printed in its log excerpt: none derived or typed by hand."""
    for field in (
        "weights_gib",
        "activation_peak_gib",
        "non_torch_gib",
        "cudagraph_gib",
        "cudagraph_estimate_gib",
        "kv_cache_gib",
        "gpu_total_gib",
    ):
        value = record.get(field)
        if value is not None:
            assert any(t in log for t in _figure_texts(value)), (record["id"], field)
    if record["kv_tokens"] is not None:
        assert f"{record['kv_tokens']:,} tokens" in log, record["id"]
    if record["num_gpu_blocks"] is not None:
        blocks = str(record["num_gpu_blocks"])
        assert blocks in log.replace("\n", ""), record["id"]
    if record["max_concurrency"] is not None:
        assert f"per request: {record['max_concurrency']}" in log, record["id"]


def _bench_validate() -> ModuleType:
    """benchmarks/validate.py, whose `replay_form` reads a record's `model_config` copy."""
    spec = importlib.util.spec_from_file_location(
        "bench_validate", DATA.parents[1] / "benchmarks" / "validate.py"
    )
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_records_naming_a_config_copy_replay_from_it() -> None:
    """The records that name a config.json copy in tests/data/configs (`model_config`, for a
    model the database lacks) are expressed when replayed from it. pub-404 (Qwen2.5-VL-7B on one
    L4, vLLM 0.9.0.1) against its log's 'Model loading took 15.6271 GiB': the replay's 15.476 GiB
    is 1.0% short; each gap is pinned, so that a fix or a wider miss shows here."""
    bench = _bench_validate()
    records = validate.read_records(DATA / "public_records.jsonl")
    named = {r["id"]: r for r in records if r.get("model_config")}
    assert set(named) == {"pub-404", "pub-405", "pub-406", *(f"pub-{n}" for n in range(432, 436))}
    for rid, record in named.items():
        replay = validate.replay_record(bench.replay_form(record))
        assert replay.predicted is not None, (rid, replay.unsupported)
    # (record, the log's 'Model loading took' GiB on rank 0, the known gap pinned): pub-404's
    # replay (15.476 GiB) is 1.0% short; the Qwen3.5 hybrids at TP 4 are short too, pub-432
    # (27B: 12.771 of 13.01 GiB, 1.8%) and pub-435 (9B: 4.413 of 4.52 GiB, 2.4%).
    for rid, logged_gib, tolerance in (
        ("pub-404", 15.6271, 0.015),
        ("pub-432", 13.01, 0.025),
        ("pub-435", 4.52, 0.03),
    ):
        replay = validate.replay_record(bench.replay_form(named[rid]))
        assert replay.predicted is not None
        assert abs(replay.predicted["weights_gib"] - logged_gib) <= tolerance * logged_gib, rid


def test_qwen35_encoder_profile_explains_the_one_sequence_launch() -> None:
    """pub-432 and pub-433: Qwen3.5-27B at TP 4 on the same four RTX 3090s, one launch with
    max_num_seqs 1, the other at the default 256. Their logs' available KV differ by only
    0.09 GiB (7.56 vs 7.47): with one sequence the sampler is gone, yet the profile still peaks,
    in the vision encoder's run on its largest image (4096 x 4096 pixels, 65536 patches). Without
    that term the one-sequence launch was over-predicted by 0.82 GiB (+11%) and the pair's
    difference was 0.75 GiB; each replay is now within 4% of its log (+3.4%, -2.5%). The pair's
    predicted difference, 0.53 GiB, still over-charges the 256-sequence launch by about 0.4 GiB
    (pinned below 0.5 so that a fix or a wider miss shows here)."""
    bench = _bench_validate()
    records = {r["id"]: r for r in validate.read_records(DATA / "public_records.jsonl")}
    kv = {}
    for rid in ("pub-432", "pub-433"):
        replay = validate.replay_record(bench.replay_form(records[rid]))
        assert replay.predicted is not None, (rid, replay.unsupported)
        logged = records[rid]["kv_cache_gib"]
        assert abs(replay.predicted["kv_cache_gib"] - logged) <= 0.04 * logged, rid
        kv[rid] = (replay.predicted["kv_cache_gib"], logged)
    predicted_gap = kv["pub-432"][0] - kv["pub-433"][0]
    logged_gap = kv["pub-432"][1] - kv["pub-433"][1]
    assert abs(predicted_gap - logged_gap) <= 0.5


# Public startups of vLLM >= 0.27 against the 0.27+ rows: the KV cache each release's rules
# predict, and the error per release that docs/accuracy.md reports.


def _record(rid: str) -> dict:
    records = {r["id"]: r for r in validate.read_records(DATA / "public_records.jsonl")}
    return records[rid]


def test_pub103_figures_are_in_its_log() -> None:
    """The record's figures are what vramplan's log parser reads from the verbatim excerpt,
    including the one-line KV line (0.28+) and the 0.27 'consumed memory' line."""
    record = _record("pub-103")
    figures = vramplan.parse_vllm_log((DATA / "public_logs" / "pub-103.log").read_text())
    assert figures["kv_cache_gib"] == record["kv_cache_gib"] == 56.21
    assert figures["kv_tokens"] == record["kv_tokens"] == 460_496
    assert figures["max_concurrency"] == record["max_concurrency"] == 3.51
    assert figures["max_concurrency_tokens"] == record["max_model_len"] == 131_072
    assert figures["weights_gib"] == record["weights_gib"]
    assert figures["gpu_total_gib"] == record["gpu_total_gib"]
    assert figures["gpu_memory_utilization"] == record["gpu_memory_utilization"]
    assert figures["consumed_gib"] == 15.26


def test_pub103_kv_cache_at_031_and_what_the_026_rules_would_say() -> None:
    """Llama-3.1-8B, vLLM 0.31.0, A100 80GB (79.25 GiB), defaults: on Model Runner V2 with the
    0.27 consumed formula its 256-sequence sampler state (256 x (128,256 + 4,008) x 4 B =
    0.126 GiB) is inside the budget and so is the graph estimate (0.29+). The prediction is
    within 0.4% of the log's 56.21 GiB / 460,496 tokens: the log's "1.44 GiB for peak
    activation" less the planner's 0.48 GiB activation leaves a 0.96 GiB estimate, where the
    planner charges its pool, 0.68 GiB on the A100 (no FA3 accumulators), for a real capture
    of 0.23 GiB. The 0.26 rules (graphs outside the budget on MRV2, sampler state uncounted)
    overstate the KV cache by more than 1.5%."""
    replay = validate.replay_record(_record("pub-103"))
    assert replay.unsupported is None
    assert replay.launch is not None
    assert replay.launch["engine_version"] == "0.31.0"
    predicted = replay.predicted
    assert predicted is not None
    assert predicted["kv_cache_gib"] == pytest.approx(56.21, rel=0.004)
    assert predicted["kv_tokens"] == pytest.approx(460_496, rel=0.004)
    assert predicted["outcome"] == "started"
    older = validate.replay_record({**_record("pub-103"), "vllm_version": "0.26.0"})
    assert older.predicted is not None
    assert older.predicted["kv_cache_gib"] > 56.21 * 1.015
    # The sampler state, by hand.
    b = vramplan.breakdown("meta-llama/Llama-3.1-8B-Instruct", "A100-80GB", engine_version="0.31.0")
    assert b.model_runner == "v2"
    assert b.ranks[0].persistent_buffers_bytes == 256 * (128_256 + 4_008) * 4
