"""Engine versions reach the core as given: patch releases pick their own engines.yaml row."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import vramplan
from vramplan import validate

DATA = Path(__file__).resolve().parents[1] / "data"


@pytest.mark.parametrize(
    ("version", "seqs", "serve_tokens"),
    [
        # docs/engine-versions.md fact 19: PR #17073 (0.8.5) made every >= 70 GiB GPU large,
        # A100 included (1024 sequences / 8192 serve tokens); PR #17885 (0.9.0) excluded A100
        # again (256 / 2048). "0.9" is 0.9.0.
        ("0.8.5", 1024, 8192),
        ("0.9", 256, 2048),
        ("0.10.1", 256, 2048),
    ],
)
def test_a100_batch_defaults_follow_the_release(version: str, seqs: int, serve_tokens: int) -> None:
    config = vramplan.breakdown(
        vramplan.DEFAULT_MODEL, "A100-80GB", engine_version=version, max_model_len=1024
    ).to_dict()["config"]
    assert (config["max_num_seqs"], config["max_num_batched_tokens"]) == (seqs, serve_tokens)


def test_capture_sizes_before_and_after_the_0_10_cap() -> None:
    # Fact 10: 0.8-0.9 capture 1, 2, 4, 8..512 step 8 (67 sizes) whatever max_num_seqs is;
    # fact 11: from 0.10 only up to 2 x max_num_seqs = 16: 1, 2, 4, 8, 16 (5 sizes).
    def sizes(version: str) -> int:
        b = vramplan.breakdown(
            vramplan.DEFAULT_MODEL,
            "H100-80GB",
            engine_version=version,
            max_model_len=1024,
            max_num_seqs=8,
        )
        return b.to_dict()["config"]["num_cudagraph_sizes"]

    assert sizes("0.9.2") == 67
    assert sizes("0.10.0") == 5


@pytest.mark.parametrize("version", ["0.4.3", "0.", "1.x"])
def test_unknown_versions_are_named_errors(version: str) -> None:
    with pytest.raises(vramplan.Error, match="engine_version"):
        vramplan.breakdown(vramplan.DEFAULT_MODEL, "H100-80GB", engine_version=version)


NEWEST = "0.33.0"  # the newest row of model_specs/engines.yaml (vLLM's newest release on PyPI)


def test_a_newer_version_is_planned_with_the_newest_rules_and_says_so(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from vramplan.cli import main

    # Text: a named warning on stderr, and the header says which rules were used.
    assert main(["breakdown", "--engine-version", "0.40.0"]) == 0
    captured = capsys.readouterr()
    assert "vramplan: warning: engine-version-newer-than-known" in captured.err
    assert f"planned with the {NEWEST} rules" in captured.out
    # JSON: the same warning as a field (stderr still names it).
    assert main(["breakdown", "--engine-version", "0.40.0", "--json"]) == 0
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["engine_version"] == "0.40.0"
    assert data["engine_version_warning"].startswith("engine-version-newer-than-known")
    assert NEWEST in data["engine_version_warning"]
    assert "engine-version-newer-than-known" in captured.err
    assert main(["plan", "--engine-version", "0.40.0", "--json"]) == 0
    plan_data = json.loads(capsys.readouterr().out)
    assert plan_data["engine_version_warning"] == data["engine_version_warning"]
    # Python: an attribute on the result; None for a known release.
    plan = vramplan.plan(vramplan.DEFAULT_MODEL, "H100-80GB", engine_version="0.40.0")
    assert plan.engine_version_warning == data["engine_version_warning"]
    known = vramplan.breakdown(vramplan.DEFAULT_MODEL, "H100-80GB", engine_version=NEWEST)
    assert known.engine_version_warning is None


def test_unparsable_version_exits_2_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    from vramplan.cli import main

    assert main(["plan", "--engine-version", "banana"]) == 2
    err = capsys.readouterr().err
    assert "engine_version" in err
    assert "'banana'" in err
    with pytest.raises(vramplan.Error, match="banana"):
        vramplan.plan(vramplan.DEFAULT_MODEL, "H100-80GB", engine_version="banana")


def test_no_version_plans_for_the_newest_release_and_names_it(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from vramplan.cli import main

    assert main(["breakdown"]) == 0
    captured = capsys.readouterr()
    assert f"(vLLM {NEWEST}," in captured.out
    assert "warning" not in captured.err
    with pytest.raises(SystemExit):
        main(["--version"])
    assert f"vLLM up to {NEWEST}" in capsys.readouterr().out


def test_model_runner_env_knob_reaches_the_plan_and_its_environment() -> None:
    # Llama-3.1-8B at 0.26 runs on Model Runner V2 (graphs outside the budget); the environment
    # variable forces the V1 runner, and the plan says to set it.
    v2 = vramplan.breakdown(vramplan.DEFAULT_MODEL, "H100-80GB", engine_version="0.26.0")
    assert v2.model_runner == "v2"
    plan = vramplan.plan(
        vramplan.DEFAULT_MODEL,
        "H100-80GB",
        engine_version="0.26.0",
        vllm_use_v2_model_runner="0",
    )
    assert plan.breakdown.model_runner == "v1"
    assert plan.to_vllm_env() == {"VLLM_USE_V2_MODEL_RUNNER": "0"}
    assert "VLLM_USE_V2_MODEL_RUNNER" not in plan.to_vllm_args()


def test_a_turing_card_on_0_9_is_planned_and_labelled_as_v0(
    capsys: pytest.CaptureFixture[str],
) -> None:
    # vLLM 0.8.0-0.10.1 print "Compute Capability < 8.0 is not supported by the V1 Engine.
    # Falling back to V0." on a T4 (7.5): the header names the engine that runs, and the
    # breakdown says why.
    from vramplan.cli import main

    args = ["breakdown", "Qwen/Qwen2.5-3B", "--gpu", "T4"]
    assert main([*args, "--engine-version", "0.9.2", "--max-model-len", "8192"]) == 0
    out = capsys.readouterr().out
    assert "(vLLM 0.9.2, v0, V0 engine)" in out
    assert "runs the V0 engine on T4 (compute capability 7.5 < 8.0" in out
    assert main([*args, "--engine-version", "0.10.2", "--max-model-len", "8192"]) == 0
    assert "V1 model runner" in capsys.readouterr().out


def test_a_pre_release_build_replays_with_its_own_rules() -> None:
    """dev-003 ran PR #10511's pre-merge build (vllm_version '0.6.4.post2-dev (PR #10511 dev
    build, Dec 2024)'), which counted the profile's cached activations in non-torch memory as
    well; 0.6.4 and 0.6.5 do not. Replayed with the build's rule, its non-torch figure is the V0
    single-rank 0.35 GiB plus the 1.26 GiB activation peak, 1.61 GiB against the 1.79 logged
    (the release's rule: 0.35). A release's record gets no build row."""
    records = {
        json.loads(line)["id"]: json.loads(line)
        for line in (DATA / "measured" / "dev.jsonl").read_text(encoding="utf-8").splitlines()
        if line
    }
    build = records["dev-003"]
    assert validate.build_profile(records["dev-001"]) is None
    assert validate.build_profile(build) is not None
    replay = validate.replay_record(build)
    assert replay.predicted is not None
    predicted = replay.predicted
    assert predicted["non_torch_gib"] == pytest.approx(
        0.35 + predicted["activation_peak_gib"], abs=0.001
    )
    assert predicted["activation_peak_gib"] == pytest.approx(1.26, abs=0.01)
    assert abs(predicted["non_torch_gib"] - 1.79) < 0.2
    assert abs(predicted["kv_cache_gib"] - 53.29) < 0.2  # 'the current vLLM instance can use'
    release = validate.replay_record({**build, "vllm_version": "0.6.4.post1"})
    assert release.predicted is not None
    assert release.predicted["non_torch_gib"] == pytest.approx(0.35, abs=0.001)
