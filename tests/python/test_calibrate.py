"""`vramplan calibrate`: fit an engine row's constants to real vLLM 0.19 H100 startup logs
(excerpts in tests/data/calibration/, provenance in tests/data/README.md), predict a log left
out, and carry the result as a Profile that plans take."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import vramplan
from vramplan import _core, validate
from vramplan.calibrate import CalibrationError

MIB = float(1 << 20)
GIB = float(1 << 30)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vramplan", *args], capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def logs() -> Path:
    return Path(__file__).resolve().parents[1] / "data" / "calibration"


def constant(profile: vramplan.Profile, name: str) -> dict:
    return next(c for c in profile.constants if c["name"] == name)


def errors(profile: vramplan.Profile, log_id: str) -> dict[str, dict]:
    return {e["term"]: e for e in profile.errors if e["id"] == log_id}


def test_two_llama_logs_fit_the_graph_pool_and_predict_the_tp4_log(logs: Path) -> None:
    """Llama-3.1-8B, vLLM 0.19.0, H100, 8192 tokens: fit on TP=1 and TP=2 (dev-021, dev-025),
    predict TP=4 (dev-026)."""
    fit = vramplan.calibrate(
        logs / "llama31_8b_h100_v019_tp1.log",
        logs / "llama31_8b_h100_v019_tp2.log",
        gpu="H100-80GB",
        held_out=[logs / "llama31_8b_h100_v019_tp4.log"],
    )
    assert fit.engine_version == "0.19.0"
    assert fit.gpu == "H100-80GB"
    assert fit.fitted_on == ["llama31_8b_h100_v019_tp1.log", "llama31_8b_h100_v019_tp2.log"]
    # Both logs capture 51 sizes x 32 layers ("Graph capturing finished ..., took 0.91 GiB" at
    # TP=1, 0.76 GiB at TP=2), so the piece (0.36 MiB) cannot be told from the base; FA3's
    # split accumulators are 32 splits x 32/TP heads x 129 x 4 B x 512 tokens = 258 / 129 MiB:
    #   base + 1632 x 0.36 + 258 = 0.91 x 1024 = 931.84 MiB  ->  base = 86.32
    #   base + 1632 x 0.36 + 129 = 0.76 x 1024 = 778.24 MiB  ->  base = 61.72
    # and least squares takes their mean, 74.02 MiB.
    assert constant(fit, "cudagraph_pool_mib.base")["after"] == pytest.approx(74.02, abs=0.05)
    piece = constant(fit, "cudagraph_pool_mib.piece")
    assert not piece["fitted"]
    assert piece["after"] == 0.36
    assert "collinear with cudagraph_pool_mib.base" in piece["status"]
    # TP=2's "non-torch forward increase memory: 2.07GiB" is the TP>=2 constant.
    assert constant(fit, "non_torch_tensor_parallel_bytes")["after"] / GIB == pytest.approx(
        2.07, abs=1e-4
    )
    # Both activation peaks are the sampler's (1.89 GiB): 1024 requests x 128256 padded vocab
    # x (s + 2 B) + 8192 tokens x 4096 x 2 B = 1.89 GiB -> s = 12.94 B per logit.
    sampler = (1.89 * GIB - 8192 * 4096 * 2) / (1024 * 128256) - 2
    assert constant(fit, "sampler_bytes_per_logit")["after"] == pytest.approx(sampler, abs=0.01)
    assert "not exercised" in constant(fit, "forward_hidden_buffers")["status"]
    assert "not exercised" in constant(fit, "cuda_context_bytes")["status"]
    # The fitted logs' printed figures are reproduced to their 0.01 GiB print resolution; the
    # graph figures to the base's +-12.3 MiB spread.
    for log_id in fit.fitted_on:
        for term in ("activation_peak_gib", "non_torch_gib"):
            e = errors(fit, log_id)[term]
            assert abs(e["after"] - e["measured"]) < 0.005, (log_id, term)
        e = errors(fit, log_id)["cudagraph_gib"]
        assert abs(e["after"] - e["measured"]) == pytest.approx(12.3 / 1024, abs=1e-3), log_id
    # TP=4, measured 0.67 GiB of graphs, 2.13 GiB non-torch, 67.44 GiB KV cache: predicted
    # before and after within 0.1 GiB (the TP>=2 non-torch constant cannot follow 2.07 -> 2.13).
    held = errors(fit, "llama31_8b_h100_v019_tp4.log")
    assert held["cudagraph_gib"]["measured"] == pytest.approx(0.67)
    assert held["cudagraph_gib"]["held_out"]
    for term in ("cudagraph_gib", "non_torch_gib", "kv_cache_gib", "activation_peak_gib"):
        assert abs(held[term]["after"] - held[term]["measured"]) < 0.1, term
    # The row's pool over-predicts TP=4 (107 + 587.52 + 64.5 = 759.02 MiB = 0.741 GiB); the
    # fit's gives 74.02 + 587.52 + 64.5 = 726.04 MiB = 0.709 GiB.
    assert held["cudagraph_gib"]["before"] == pytest.approx(759.02 / 1024, abs=2e-3)
    assert held["cudagraph_gib"]["after"] == pytest.approx(726.04 / 1024, abs=2e-3)
    report = fit.format_report()
    assert "(held out)" in report
    assert "err before" in report


def test_four_logs_of_two_models_identify_the_per_piece_constant(logs: Path) -> None:
    """Llama-3.1-8B (32 layers) and Qwen2.5-7B (28 layers, hidden 3584) at TP=1/2: the pool's
    three coefficients, predicting both TP=4 logs."""
    fit = vramplan.calibrate(
        *(logs / f"{m}_h100_v019_tp{tp}.log" for m in ("llama31_8b", "qwen25_7b") for tp in (1, 2)),
        gpu="H100-80GB",
        held_out=[logs / "llama31_8b_h100_v019_tp4.log", logs / "qwen25_7b_h100_v019_tp4.log"],
    )
    assert len(fit.fitted_on) == 4
    # 1632 vs 1428 pieces per size is too little lever at 0.01 GiB resolution for the piece:
    # the standard error would exceed its 0.02 MiB tolerance, so it is kept and says so.
    piece = constant(fit, "cudagraph_pool_mib.piece")
    assert not piece["fitted"]
    assert "uncertain" in piece["status"] or "collinear" in piece["status"]
    for log_id in ("llama31_8b_h100_v019_tp4.log", "qwen25_7b_h100_v019_tp4.log"):
        held = errors(fit, log_id)
        for term in ("cudagraph_gib", "kv_cache_gib"):
            assert abs(held[term]["after"] - held[term]["measured"]) < 0.1, (log_id, term)


def test_profile_round_trips_and_plans_take_it(logs: Path, tmp_path: Path) -> None:
    fit = vramplan.calibrate(
        logs / "llama31_8b_h100_v019_tp1.log",
        logs / "llama31_8b_h100_v019_tp2.log",
        gpu="H100-80GB",
    )
    path = tmp_path / "h100-v019.yaml"
    fit.save(path)
    loaded = vramplan.Profile.load(path)
    assert loaded.engine_version == "0.19.0"
    assert loaded.fitted_on == fit.fitted_on
    assert loaded.engine_profile.cudagraph_base_mib == pytest.approx(74.02, abs=0.05)
    # The engine's own reader gives the same row from the same text.
    direct = _core.apply_profile_overrides(_core.engine_profile("0.19.0"), path.read_text(), "x")
    assert direct.cudagraph_base_mib == loaded.engine_profile.cudagraph_base_mib
    knobs = {
        "engine_version": "0.19.0",
        "tensor_parallel_size": 4,
        "max_model_len": 8192,
        "gpu_memory_utilization": 0.95,
    }
    spec = vramplan.load_model("meta-llama/Llama-3.1-8B-Instruct")
    gpu = vramplan.load_gpu("H100-80GB")
    plain = vramplan.breakdown(spec, gpu, **knobs)
    calibrated = vramplan.breakdown(spec, gpu, profile=loaded, **knobs)
    # 74.02 + 1632 x 0.36 + 64.5 = 726.04 MiB, against the row's 759.02 MiB.
    assert calibrated.ranks[0].cudagraph_bytes / MIB == pytest.approx(726.04, abs=0.5)
    assert plain.ranks[0].cudagraph_bytes / MIB == pytest.approx(759.02, abs=0.5)


def test_one_log_identical_logs_and_eager_logs_are_named_errors(logs: Path, tmp_path: Path) -> None:
    tp1 = logs / "llama31_8b_h100_v019_tp1.log"
    with pytest.raises(CalibrationError, match="1 distinct launch") as one:
        vramplan.calibrate(tp1, gpu="H100-80GB")
    assert "cudagraph_pool_mib.piece" in one.value.terms
    assert isinstance(one.value, vramplan.Error)
    assert isinstance(one.value, ValueError)
    copy = tmp_path / "again.log"
    copy.write_bytes(tp1.read_bytes())
    with pytest.raises(CalibrationError, match="identical logs count once"):
        vramplan.calibrate(tp1, copy, gpu="H100-80GB")
    # Eager launches capture no graphs: the graph pool, asked for, cannot be fitted.
    eager = []
    for name in ("llama31_8b_h100_v019_tp1.log", "llama31_8b_h100_v019_tp2.log"):
        record = validate.record_from_log(
            vramplan.parse_vllm_log((logs / name).read_text()), log_id=name, gpu="H100-80GB"
        )
        record["enforce_eager"] = True
        record["cudagraph_gib"] = None
        eager.append(record)
    with pytest.raises(CalibrationError, match="not exercised") as graph:
        vramplan.calibrate(records=eager, terms=["cudagraph"])
    assert graph.value.terms == [
        "cudagraph_pool_mib.base",
        "cudagraph_pool_mib.piece",
    ]
    with pytest.raises(vramplan.ConfigError, match="unknown calibration term"):
        vramplan.calibrate(records=eager, terms=["weights"])


def test_mixed_versions_or_gpus_are_refused(logs: Path) -> None:
    records = [
        validate.record_from_log(
            vramplan.parse_vllm_log((logs / name).read_text()), log_id=name, gpu="H100-80GB"
        )
        for name in ("llama31_8b_h100_v019_tp1.log", "llama31_8b_h100_v019_tp2.log")
    ]
    records[1]["vllm_version"] = "0.10.1"
    with pytest.raises(vramplan.ConfigError, match="one vLLM version at a time"):
        vramplan.calibrate(records=records)


def test_cli_prints_errors_before_and_after_and_writes_the_profile(
    logs: Path, tmp_path: Path
) -> None:
    out = tmp_path / "p.yaml"
    result = run(
        "calibrate",
        str(logs / "qwen25_7b_h100_v019_tp1.log"),
        str(logs / "qwen25_7b_h100_v019_tp2.log"),
        "--gpu",
        "H100-80GB",
        "--held-out",
        str(logs / "qwen25_7b_h100_v019_tp4.log"),
        "--out",
        str(out),
    )
    assert result.returncode == 0, result.stderr
    assert "err before" in result.stdout
    assert "(held out)" in result.stdout
    assert "cudagraph_pool_mib.base" in result.stdout
    assert vramplan.Profile.load(out).fitted_on == [
        "qwen25_7b_h100_v019_tp1.log",
        "qwen25_7b_h100_v019_tp2.log",
    ]
    as_json = run(
        "calibrate",
        str(logs / "qwen25_7b_h100_v019_tp1.log"),
        str(logs / "qwen25_7b_h100_v019_tp2.log"),
        "--gpu",
        "H100-80GB",
        "--json",
    )
    report = json.loads(as_json.stdout)
    assert {c["name"] for c in report["constants"]} >= {"sampler_bytes_per_logit"}
    bad = run("calibrate", str(logs / "qwen25_7b_h100_v019_tp1.log"), "--gpu", "H100-80GB")
    assert bad.returncode == 2
    assert "cannot identify" in bad.stderr


def test_a_shared_gpu_name_in_a_record_warns_which_size_was_assumed(logs: Path) -> None:
    import importlib

    sample = importlib.import_module("vramplan.calibrate")._sample
    name = "llama31_8b_h100_v019_tp1.log"
    record = validate.record_from_log(
        vramplan.parse_vllm_log((logs / name).read_text()), log_id=name, gpu="NVIDIA A100"
    )
    # The log's total (79.19 GiB, CUDA's figure for an 80 GB card) picks the size: no warning.
    assert record["gpu_total_gib"]
    _, _, label = sample(record, {})
    assert label == "A100-80GB"
    record["gpu_total_gib"] = None
    with pytest.warns(UserWarning, match=r"llama31.*'NVIDIA A100'.*assumed A100-80GB"):
        sample(record, {})


def test_one_log_with_the_packaged_priors_is_a_maximum_a_posteriori_fit(logs: Path) -> None:
    """The TP=1 log alone: without priors no constant is identified (one launch); with the
    packaged priors (device measurements, vLLM's code) each constant it shows moves from its
    prior toward the log, and one it cannot show (TP>1 non-torch) keeps the packaged value."""
    from vramplan.calibrate import priors_file, read_priors

    tp1 = logs / "llama31_8b_h100_v019_tp1.log"
    tp2 = logs / "llama31_8b_h100_v019_tp2.log"
    fitted = vramplan.calibrate(tp1, gpu="H100-80GB", priors=priors_file(), held_out=[tp2])
    priors = {p["name"]: p for p in read_priors(priors_file(), "0.19.0")}
    tp = constant(fitted, "non_torch_tensor_parallel_bytes")
    assert tp["after"] == tp["before"] != priors["non_torch_tensor_parallel_bytes"]["value"]
    assert tp["status"].startswith("kept at the packaged value")
    # The held-out TP=2 launch: its available-KV error after the fit is no worse than before
    # (with the prior's 1 GiB for the TP term it went from -0.13 to +1.07 GiB).
    kv = next(e for e in fitted.errors if e["held_out"] and e["term"] == "kv_cache_gib")
    assert abs(kv["after"] - kv["measured"]) <= abs(kv["before"] - kv["measured"]) + 0.01
    # The log prints 0.25 GiB of non-torch memory; the prior is 156 MiB: the posterior lies
    # between them, nearer the log (sigma 0.005 GiB against the prior's 128 MiB).
    non_torch = constant(fitted, "non_torch_single_rank_bytes")
    assert priors["non_torch_single_rank_bytes"]["value"] < non_torch["after"] <= 0.25 * GIB
    assert non_torch["after"] > 0.24 * GIB
    assert non_torch["status"].startswith("fitted from its prior")
    # The CLI: --priors alone takes the packaged file.
    result = run("calibrate", str(tp1), "--gpu", "H100-80GB", "--priors", "--json")
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    by_name = {c["name"]: c for c in report["constants"]}
    assert by_name["non_torch_tensor_parallel_bytes"]["after"] == tp["after"]


def test_the_packaged_priors_cite_no_record_and_read_at_every_row() -> None:
    """Independence of the leave-one-source-out fit rests on this file naming no record."""
    import re

    from vramplan.calibrate import priors_file, read_priors

    text = priors_file().read_text()
    assert not re.search(r"\b(dev|pub)-\d{3}", text)
    rows = re.findall(
        r'from_version: "([0-9.]+)"', (priors_file().parent / "engines.yaml").read_text()
    )
    assert len(rows) > 20
    for version in rows:
        names = {p["name"] for p in read_priors(priors_file(), version)}
        assert len(names) == 9, version  # every calibrated constant has a prior
    assert {p["name"]: p["value"] for p in read_priors(priors_file(), "0.17.0")}[
        "sampler_bytes_per_logit"
    ] == 13.0


def test_the_sort_path_sampler_prior_is_its_buffers_by_hand() -> None:
    """Torch's CUDA sort of 128 or more rows (SortStable.cu, segmented_sort_pairs) holds, per
    logit and beside the bf16 logits: the fp32 logits 4 B, the sorted values 4 B, their int64
    indices 8 B, the int64 source indices it fills 8 B, and cub's alternate key and value
    buffers 4 + 8 B. The prior of every row before 0.17 (the Triton top-k/top-p) is that sum,
    and the rows fitted on records (37.2 B at V0 from dev-003/004, 36.9 B at 0.8-0.16 from
    dev-049/050) lie within one and a half of its sigmas: code and records agree."""
    from vramplan import _core
    from vramplan.calibrate import priors_file, read_priors

    by_hand = 4 + 4 + 8 + 8 + (4 + 8)
    for version in ("0.6.4", "0.10.1", "0.16.0"):
        prior = {p["name"]: p for p in read_priors(priors_file(), version)}[
            "sampler_bytes_per_logit"
        ]
        assert prior["value"] == by_hand, version
        fitted = _core.engine_profile(version).sampler_bytes_per_logit
        assert abs(fitted - by_hand) <= 1.5 * prior["sigma"], version


def test_a_bad_priors_file_is_a_named_error(logs: Path, tmp_path: Path) -> None:
    bad = tmp_path / "priors.yaml"
    bad.write_text('rows:\n  - {from_version: "0.5", sampler_bytes_per_logit: {value: 1}}\n')
    result = run(
        "calibrate",
        str(logs / "llama31_8b_h100_v019_tp1.log"),
        "--gpu",
        "H100-80GB",
        "--priors",
        str(bad),
    )
    assert result.returncode == 2
    assert "priors.yaml" in result.stderr
    assert "rows[0].sampler_bytes_per_logit" in result.stderr
    assert "Traceback" not in result.stderr
