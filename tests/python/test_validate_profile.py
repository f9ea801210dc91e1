"""`validate --profile` / `--engine-version` and the error band of each replayed record: a user
checks a calibration profile on their own records, names the release of a log that prints
none, and reads each record's expected error as `plan` states it."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import vramplan
from vramplan import validate

MIB = float(1 << 20)
DATA = Path(__file__).resolve().parents[1] / "data"
TP4_LOG = DATA / "calibration" / "llama31_8b_h100_v019_tp4.log"

# vLLM 0.19.0's graph pool with its base raised from 107 to 207 MiB, every piece as the row has
# it (engines.yaml): a profile whose one change the replay must show.
PROFILE = (
    'engine_version: "0.19.0"\n'
    "overrides:\n"
    "  cudagraph_pool_mib: {base: 207, piece: 0.36, piece_moe: 0.076, piece_mla: 0.285,"
    " piece_mxfp4_moe: 0.357}\n"
)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vramplan", *args], capture_output=True, text=True, check=False
    )


def dev_records(*ids: str) -> list[dict]:
    lines = (DATA / "measured" / "dev.jsonl").read_text().splitlines()
    by_id = {r["id"]: r for r in map(json.loads, lines)}
    return [by_id[i] for i in ids]


@pytest.fixture
def profile(tmp_path: Path) -> Path:
    path = tmp_path / "h100-v019.yaml"
    path.write_text(PROFILE)
    return path


def test_validate_records_with_a_profile_in_json(profile: Path, tmp_path: Path) -> None:
    """dev-026 (Llama-3.1-8B, TP=4, H100, 0.19.0: 51 capture sizes x 32 layers = 1632 pieces,
    FA3's split accumulators 64.5 MiB at TP=4) replays its graph pool as
    base + 1632 x 0.36 + 64.5: 107 + 587.52 + 64.5 = 759.02 MiB with the release's row and
    207 + 587.52 + 64.5 = 859.02 MiB with the profile. dev-049 ran 0.15.0, which a 0.19.0
    profile does not describe: unsupported, with the reason."""
    records = tmp_path / "mine.jsonl"
    records.write_text("".join(json.dumps(r) + "\n" for r in dev_records("dev-026", "dev-049")))
    plain = run("validate", "--records", str(records), "--json")
    calibrated = run("validate", "--records", str(records), "--profile", str(profile), "--json")
    assert calibrated.returncode == 1, calibrated.stderr  # dev-049 is not expressed
    before = [json.loads(line) for line in plain.stdout.splitlines()]
    after = [json.loads(line) for line in calibrated.stdout.splitlines()]
    assert [r["id"] for r in after] == ["dev-026", "dev-049"]
    assert before[0]["predicted"]["cudagraph_gib"] * 1024 == pytest.approx(759.02, abs=0.01)
    assert after[0]["predicted"]["cudagraph_gib"] * 1024 == pytest.approx(859.02, abs=0.01)
    assert after[0]["launch"]["profile"].startswith("calibrated vLLM 0.19.0")
    assert after[1]["unsupported"] == "the profile is for vLLM 0.19.0, the record ran 0.15.0"
    assert before[1]["unsupported"] is None


def test_each_replayed_record_carries_plans_error_band(profile: Path) -> None:
    """The band is the one `plan` states for the same launch: an H100 at 0.19.0 is the
    "H100/H200 x v1" row of model_specs/error_bands.json."""
    loaded = vramplan.Profile.load(profile)
    replay = validate.replay_log_file(TP4_LOG, gpu="H100-80GB", profile=loaded)
    assert replay.error_band is not None
    assert replay.error_band["group"] == "H100/H200 x v1"
    launch = {k: v for k, v in replay.launch.items() if k not in ("model", "gpu", "profile")}
    planned = vramplan.breakdown(replay.launch["model"], "H100-80GB", **launch)
    assert replay.error_band == planned.error_band
    assert replay.to_json()["error_band"]["statement"] == planned.error_band["statement"]
    text = run("validate", str(TP4_LOG), "--gpu", "H100-80GB")
    assert f"expected error of {TP4_LOG.name}: available KV cache +/-" in " ".join(
        text.stdout.split()
    )


def test_engine_version_names_the_release_of_a_log_that_prints_none(tmp_path: Path) -> None:
    """The same log without its "(v0.19.0)" banner replays, given --engine-version 0.19.0,
    exactly as the log that prints it; a record that names its release keeps its own."""
    bare = tmp_path / "no-version.log"
    bare.write_text(TP4_LOG.read_text().replace(" (v0.19.0)", ""))
    assert "0.19.0" not in bare.read_text()
    printed = validate.replay_log_file(TP4_LOG, gpu="H100-80GB")
    named = validate.replay_log_file(bare, gpu="H100-80GB", engine_version="0.19.0")
    assert named.launch["engine_version"] == "0.19.0"
    assert named.predicted == printed.predicted
    result = run("validate", str(bare), "--gpu", "H100-80GB", "--engine-version", "0.19", "--json")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["predicted"] == printed.predicted
    own = validate.replay_record(dev_records("dev-026")[0], engine_version="0.15.0")
    assert own.launch["engine_version"] == "0.19.0"


def test_a_bad_engine_version_or_profile_is_a_named_error(profile: Path, tmp_path: Path) -> None:
    with pytest.raises(vramplan.ConfigError, match="engine_version"):
        validate.replay_log_file(TP4_LOG, engine_version="latest")
    bad = run("validate", str(TP4_LOG), "--engine-version", "latest")
    assert bad.returncode == 2
    assert "latest" in bad.stderr
    missing = run("validate", str(TP4_LOG), "--profile", str(tmp_path / "none.yaml"))
    assert missing.returncode == 2
    assert "none.yaml" in missing.stderr
    with pytest.raises(vramplan.ConfigError, match="profile"):
        validate.replay_log_file(TP4_LOG, profile=42)  # type: ignore[arg-type]
