"""The resolution chain: database, path, Hugging Face cache (no network), offline errors."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import vramplan
from vramplan import _core
from vramplan.cli import main as cli_main
from vramplan.resolve import hub_cache_dir, resolve_model

CONFIGS = Path(__file__).resolve().parents[1] / "data" / "configs"
COMMIT = "fedcba9876543210fedcba9876543210fedcba98"


def fixture_repos() -> list[tuple[str, Path]]:
    """(ORG/NAME, config) for every config in tests/data/configs (real copies, and the files
    written from published values): one model or more per family of the architecture table."""
    out = []
    for path in sorted([*CONFIGS.glob("*.json"), *CONFIGS.glob("published_values/*.json")]):
        if path.name.endswith(".hf_quant_config.json"):
            continue
        org, name = path.stem.split("__", 1)
        out.append((f"{org}/{name}", path))
    return out


def put_in_cache(cache: Path, repo_id: str, config: Path, revision: str = "main") -> Path:
    """The layout huggingface_hub leaves: models--ORG--NAME/{refs/<rev>, snapshots/<commit>/}."""
    entry = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = entry / "snapshots" / COMMIT
    snapshot.mkdir(parents=True, exist_ok=True)
    (snapshot / "config.json").write_bytes(config.read_bytes())
    (entry / "refs").mkdir(exist_ok=True)
    (entry / "refs" / revision).write_text(COMMIT)
    return snapshot


@pytest.fixture
def hub_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "hub"
    cache.mkdir()
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")  # nothing here may reach a network
    monkeypatch.setenv("VRAMPLAN_CACHE", str(tmp_path / "vramplan"))
    return cache


def test_cache_dir_follows_huggingface_hub(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.delenv("HF_HUB_CACHE", raising=False)
    monkeypatch.setenv("HF_HOME", str(tmp_path / "home"))
    assert hub_cache_dir() == tmp_path / "home" / "hub"
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "c"))
    assert hub_cache_dir() == tmp_path / "c"
    monkeypatch.delenv("HF_HUB_CACHE")
    monkeypatch.delenv("HF_HOME")
    assert hub_cache_dir() == Path("~/.cache/huggingface/hub").expanduser()


def test_database_id_answers_first(hub_cache: Path) -> None:
    resolved = resolve_model("meta-llama/Llama-3.1-8B-Instruct")
    assert resolved.source == "database"
    assert resolved.location.endswith(".yaml")


def test_path_answers_with_its_kind(hub_cache: Path) -> None:
    resolved = resolve_model(CONFIGS / "microsoft__phi-1.json")
    assert resolved.source == "path"
    assert resolved.spec.model_type == "phi"


def test_cache_revision_and_refs(hub_cache: Path) -> None:
    put_in_cache(hub_cache, "acme/phi", CONFIGS / "microsoft__phi-1.json", revision="v1")
    with pytest.raises(vramplan.Error, match="offline"):
        resolve_model("acme/phi")  # refs/main absent
    resolved = resolve_model("acme/phi", revision="v1")
    assert (resolved.source, resolved.revision) == ("cache", COMMIT)
    assert resolve_model("acme/phi", revision=COMMIT).source == "cache"
    assert vramplan.load_model("acme/phi", revision="v1").id == "acme/phi"


def test_offline_miss_suggests_database_ids(hub_cache: Path) -> None:
    with pytest.raises(vramplan.Error, match=r"Did you mean: .*Qwen/Qwen3-8B"):
        resolve_model("Qwen/Qwen3-8C")


@pytest.mark.parametrize(("repo_id", "config"), fixture_repos(), ids=lambda v: str(v))
def test_plan_from_a_cache_holding_only_config_json(
    hub_cache: Path, repo_id: str, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # Names that are not database ids, so the cache must answer.
    cached_id = repo_id + "-cached"
    put_in_cache(hub_cache, cached_id, config)
    quant = json.loads(config.read_text()).get("quantization_config") or {}
    method = str(quant.get("quant_method", ""))
    act_order = quant.get("desc_act") and quant.get("group_size", -1) != -1
    if method == "bitsandbytes" or (method == "gptq" and act_order):
        # The default (newest) release has no bitsandbytes loader (gone in 0.28) and refuses
        # GPTQ group activation ordering: exit 2 naming the field; 0.27 plans it.
        assert cli_main(["plan", cached_id, "--gpu", "H100", "--json"]) == 2
        assert f"vLLM {_core.newest_known_vllm_version()}" in capsys.readouterr().err
        version = ["--engine-version", "0.27.0"]
    else:
        version = []
    status = cli_main(["plan", cached_id, "--gpu", "H100", "--json", *version])
    plan = json.loads(capsys.readouterr().out)
    assert status == (0 if plan["fits"] else 1)  # a plan that does not fit exits 1
    assert plan["breakdown"]["model"] == cached_id
    assert plan["breakdown"]["weights_bytes"] > 0


def test_python_m_vramplan_plan_from_the_cache(hub_cache: Path) -> None:
    put_in_cache(hub_cache, "acme/qwen3.5-27b", CONFIGS / "Qwen__Qwen3.5-27B.json")
    env = {**os.environ, "HF_HUB_CACHE": str(hub_cache), "HF_HUB_OFFLINE": "1"}
    result = subprocess.run(
        [sys.executable, "-m", "vramplan", "plan", "acme/qwen3.5-27b", "--gpu", "H100"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert "acme/qwen3.5-27b" in result.stdout


def test_did_you_mean_weighs_family_and_size_before_the_suffix() -> None:
    """Seed 000's post names "Qwen3-32B-Instruct", which is not a Hub id: the suggestion is
    the same family and size (Qwen/Qwen3-32B), not the id that shares "-Instruct"."""
    with pytest.raises(vramplan.Error, match=r"Did you mean: Qwen/Qwen3-32B, "):
        vramplan.load_model("Qwen/Qwen3-32B-Instruct", offline=True)


@pytest.fixture
def cwd_with_a_config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A working directory holding a config.json: what an empty model string used to plan."""
    folder = tmp_path / "cwd"
    folder.mkdir()
    (folder / "config.json").write_bytes((CONFIGS / "microsoft__phi-1.json").read_bytes())
    monkeypatch.chdir(folder)
    return folder


@pytest.mark.parametrize("blank", ["", "   ", "\t\n"])
def test_an_empty_model_string_is_a_named_error(cwd_with_a_config: Path, blank: str) -> None:
    for call in (
        lambda: resolve_model(blank),
        lambda: vramplan.load_model(blank),
        lambda: vramplan.plan(blank, "H100"),
    ):
        with pytest.raises(vramplan.ConfigError, match=r"model: .* is empty"):
            call()
    # The current directory stays reachable when it is asked for by name.
    assert resolve_model(".").spec.model_type == "phi"


def test_an_empty_model_on_the_command_line_is_a_named_error(cwd_with_a_config: Path) -> None:
    result = subprocess.run(
        [sys.executable, "-m", "vramplan", "plan", "", "--gpu", "H100"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode != 0
    assert "is empty" in result.stderr
    assert "Traceback" not in result.stderr
    assert "phi" not in result.stdout


def test_a_record_with_an_empty_model_is_a_named_error(cwd_with_a_config: Path) -> None:
    from vramplan import validate

    records = cwd_with_a_config / "records.jsonl"
    held = {"id": "held-001", "model": "", "gpu": "H100", "vllm_version": "0.19.0"}
    records.write_text(json.dumps(held) + "\n" + json.dumps({**held, "model": None}) + "\n")
    for replay in validate.replay_file(records):
        assert replay.predicted is None
        assert replay.unsupported is not None
        assert "is empty" in replay.unsupported
    result = subprocess.run(
        [sys.executable, "-m", "vramplan", "validate", "--records", str(records), "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "Traceback" not in result.stderr
    lines = [json.loads(line) for line in result.stdout.splitlines()]
    assert [line["id"] for line in lines] == ["held-001", "held-001"]
    assert all("is empty" in line["unsupported"] for line in lines)


def test_config_defaults_reach_python_json_and_the_command_line(hub_cache: Path) -> None:
    # llava-hf/llava-1.5-7b-hf leaves text_config.hidden_size (and three more keys) to
    # LlamaConfig's defaults; every output says which defaults the plan used.
    config = CONFIGS / "llava-hf__llava-1.5-7b-hf.json"
    spec = vramplan.load_model(config)
    assert "text_config.hidden_size = 4096 (LlamaConfig)" in spec.config_defaults
    assert spec.to_dict()["config_defaults"] == spec.config_defaults
    data = vramplan.breakdown(str(config), "H100", max_model_len=4096).to_dict()
    note = [m for m in data["messages"] if "transformers config class's defaults" in m]
    assert len(note) == 1
    assert "text_config.num_attention_heads = 32 (LlamaConfig)" in note[0]
    result = subprocess.run(
        [sys.executable, "-m", "vramplan", "breakdown", str(config), "--gpu", "H100"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert "text_config.hidden_size = 4096 (LlamaConfig)" in result.stdout + result.stderr
