"""The CLI as a script sees it: exit codes, stdout that is safe to splice into a command line,
refusals with named errors, JSON on every subcommand, quiet closed pipes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import vramplan
from vramplan import _core

GIB = 1 << 30
LLAMA_70B = "meta-llama/Llama-3.1-70B-Instruct"


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vramplan", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )


def test_version() -> None:
    out = run("--version")
    assert out.returncode == 0
    # The package version, then the newest vLLM release the planner knows (its default).
    newest = _core.newest_known_vllm_version()
    assert out.stdout.startswith(f"vramplan {vramplan.__version__} (plans vLLM up to {newest}")


def test_flags_that_cannot_fit_print_nothing_and_exit_1() -> None:
    # Llama-3.1-70B in BF16 is 70.6e9 parameters x 2 B = 131 GiB: more than one 80 GB H100.
    out = run("flags", LLAMA_70B, "--gpu", "H100", "--context", "8192")
    assert out.returncode == 1
    assert out.stdout == ""
    assert "does not fit" in out.stderr
    assert "vramplan: remedy: " in out.stderr  # the cheapest remedy that fits
    assert "Traceback" not in out.stderr


def test_plan_that_cannot_fit_exits_1_in_text_and_json() -> None:
    assert run("plan", LLAMA_70B, "--gpu", "H100").returncode == 1
    out = run("plan", LLAMA_70B, "--gpu", "H100", "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["fits"] is False


def test_breakdown_exit_code_follows_the_outcome() -> None:
    assert run("breakdown", "--json").returncode == 0  # Llama-3.1-8B on one H100 starts
    out = run("breakdown", LLAMA_70B, "--gpu", "H100", "--json")
    assert out.returncode == 1
    assert json.loads(out.stdout)["outcome"] == "oom_at_load"


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--context", "1000000"], "context"),  # Llama-3.1-8B's maximum is 131072
        (["--context", "0"], "context"),
        (["--context", "-5"], "context"),
        (["--context", "32k"], "context"),
        (["--concurrency", "0"], "concurrency"),
        (["--concurrency", "-1"], "concurrency"),
        (["--num-gpus", "0"], "num_gpus"),
        (["--max-num-seqs", "-1"], "max_num_seqs"),
        (["--gpu-memory-utilization", "1.5"], "gpu_memory_utilization"),
    ],
)
@pytest.mark.parametrize("command", ["plan", "flags"])
def test_refusals_name_the_argument(command: str, args: list[str], named: str) -> None:
    out = run(command, "meta-llama/Llama-3.1-8B-Instruct", *args)
    assert out.returncode == 2, out.stderr
    assert out.stdout == ""
    assert named in out.stderr
    assert "Traceback" not in out.stderr


def test_context_beyond_the_model_is_refused_not_clamped() -> None:
    out = run("plan", "--context", "1000000", "--json")
    assert out.returncode == 2
    assert "131072" in out.stderr  # the model's max_position_embeddings, named


def test_context_auto_is_the_longest_that_fits_the_concurrency() -> None:
    out = run("plan", "Qwen/Qwen3-8B", "--gpu", "L4", "--context", "auto", "--concurrency", "4")
    assert out.returncode == 0, out.stderr
    data = json.loads(
        run(
            "plan",
            "Qwen/Qwen3-8B",
            "--gpu",
            "L4",
            "--context",
            "auto",
            "--concurrency",
            "4",
            "--json",
        ).stdout
    )
    assert data["fits"]
    longest = data["max_model_len"]
    assert data["max_num_seqs"] >= 4
    # Independently: the next token of context does not fit 4 sequences at the same batch
    # budget, and the chosen one does.
    batch = data["max_num_batched_tokens"]
    kwargs = {"concurrency": 4, "max_num_batched_tokens": batch}
    assert vramplan.plan("Qwen/Qwen3-8B", "L4", context=longest, **kwargs).fits
    assert not vramplan.plan("Qwen/Qwen3-8B", "L4", context=longest + 1, **kwargs).fits


def test_context_auto_alone_is_the_solvers_longest() -> None:
    data = json.loads(run("plan", "--context", "auto", "--json").stdout)
    assert data["max_model_len"] == vramplan.plan().max_model_len == 131072


def test_num_gpus_alone_chooses_the_smallest_split_that_fits() -> None:
    out = run("plan", LLAMA_70B, "--gpu", "H100", "--num-gpus", "4", "--context", "8192", "--json")
    assert out.returncode == 0, out.stderr
    data = json.loads(out.stdout)
    # 131 GiB of BF16 weights: TP=1 cannot load them, TP=2 (65.7 GiB per rank) can.
    assert data["breakdown"]["config"]["tensor_parallel_size"] == 2
    assert "--tensor-parallel-size 2" in data["vllm_args"]
    tried = [(a["tensor_parallel_size"], a["pipeline_parallel_size"]) for a in data["split_search"]]
    assert tried == [(1, 1), (2, 1)]
    assert data["split_search"][0]["result"].startswith("does not fit: oom_at_load")
    flags = run("flags", LLAMA_70B, "--gpu", "H100", "--num-gpus", "4", "--context", "8192")
    assert flags.returncode == 0
    assert flags.stdout.strip() == data["vllm_args"]


def test_split_order_prefers_tensor_parallel_then_fewest_gpus() -> None:
    from vramplan.search import candidate_splits

    assert candidate_splits(1) == [(1, 1)]
    assert candidate_splits(4) == [(1, 1), (2, 1), (4, 1), (1, 2), (1, 3), (2, 2), (1, 4)]
    assert candidate_splits(6)[:4] == [(1, 1), (2, 1), (4, 1), (6, 1)]
    with pytest.raises(vramplan.Error, match="num_gpus"):
        candidate_splits(0)


def test_num_gpus_when_nothing_fits_exits_1_with_the_largest_split() -> None:
    # Llama-3.1-405B in BF16 (~756 GiB) does not load on 8 x 80 GB at any split.
    out = run("plan", "meta-llama/Llama-3.1-405B-Instruct", "--num-gpus", "8", "--json")
    assert out.returncode == 1
    data = json.loads(out.stdout)
    assert data["breakdown"]["config"]["tensor_parallel_size"] == 8
    assert all(a["result"] != "fits" for a in data["split_search"])


def test_remedies_never_repeat_or_shorten_the_users_target() -> None:
    out = run(
        "plan",
        "Qwen/Qwen3-8B",
        "--gpu",
        "L4",
        "--max-model-len",
        "32768",
        "--concurrency",
        "16",
        "--json",
    )
    assert out.returncode == 1
    remedies = json.loads(out.stdout)["remedies"]
    assert remedies, "a launch that does not fit gets remedies"
    for remedy in remedies:
        assert remedy["kind"] != "shorter_context"
        assert not remedy["change"].startswith("--max-model-len")
    out = run("plan", "Qwen/Qwen3-8B", "--gpu", "L4", "--context", "32768", "--json")
    for remedy in json.loads(out.stdout)["remedies"]:
        assert "--max-model-len 32768" in remedy["flags"] or remedy["kind"] == "cpu_offload"


@pytest.mark.parametrize(
    "argv",
    [
        ["plan"],
        ["flags"],
        ["breakdown"],
        ["sweep", "--max-model-len", "4096,8192"],
        ["explain"],
        ["explain", "kv_cache"],
        ["models"],
        ["gpus"],
        ["schema"],
        ["probe", "--nvidia-smi-csv", "{data}/diagnose/nvidia_smi_two_h100_second_tenant.csv"],
        [
            "validate",
            (
                "{data}/measured/logs/vllm-0.19.0/"
                "meta-llama-llama-3-1-8b---h100-80gb--tp1pp1dp1--8192.log"
            ),
        ],
        ["inspect", "{data}/configs/Qwen__Qwen3-8B.json"],
        ["diagnose", "{data}/diagnose/v019_gpt_oss_20b_sampler_warmup.log"],
    ],
    ids=lambda argv: argv[0] if len(argv) == 1 else "-".join(argv[:2])[:30],
)
def test_every_subcommand_speaks_json(argv: list[str], data_dir: Path) -> None:
    out = run(*(a.format(data=data_dir) for a in argv), "--json")
    assert out.returncode == 0, out.stderr
    json.loads(out.stdout)


def test_every_subcommand_has_json() -> None:
    from vramplan.cli import build_parser

    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices  # type: ignore[union-attr]
    for name, sub in commands.items():
        assert any("--json" in a.option_strings for a in sub._actions), name


def test_a_closed_pipe_is_quiet() -> None:
    # A grid large enough to overflow the pipe's buffer: the writer meets EPIPE.
    lens = ",".join(str(1024 * i) for i in range(1, 101))
    seqs = ",".join(str(i) for i in range(1, 101))
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "vramplan",
            "sweep",
            "--max-model-len",
            lens,
            "--max-num-seqs",
            seqs,
            "--json",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None
    assert proc.stderr is not None
    assert proc.stdout.read(64)
    proc.stdout.close()
    stderr = proc.stderr.read().decode()
    proc.stderr.close()
    assert proc.wait(timeout=120) == 141
    assert stderr == ""


def test_validate_outcome_mismatch_is_readable_and_exits_1(
    dev_records: Path, tmp_path: Path
) -> None:
    # dev-032 failed at the KV allocation in the measurement (oom_kv_alloc); the planner
    # predicts it starts. dev-021 agrees (started / started).
    wanted = {"dev-021", "dev-032"}
    lines = [
        line
        for line in dev_records.read_text().splitlines()
        if line.strip() and json.loads(line)["id"] in wanted
    ]
    records = tmp_path / "two.jsonl"
    records.write_text("\n".join(lines) + "\n")
    out = run("validate", "--records", str(records))
    assert out.returncode == 1
    rows = [line.split() for line in out.stdout.splitlines() if "outcome" in line.split()]
    cells = {row[0]: [c for c in row if c not in ("|",)] for row in rows}
    assert cells["dev-032"][1:] == ["outcome", "started", "oom_kv_alloc", "MISMATCH"]
    assert cells["dev-021"][1:] == ["outcome", "started", "started", "ok"]
    only_ok = tmp_path / "one.jsonl"
    only_ok.write_text(next(line for line in lines if '"dev-021"' in line) + "\n")
    assert run("validate", "--records", str(only_ok)).returncode == 0


def test_sweep_writes_csv_and_names_the_parquet_engine(tmp_path: Path) -> None:
    import pandas as pd

    out_csv = tmp_path / "grid.csv"
    out = run(
        "sweep",
        "Qwen/Qwen3-8B",
        "--gpu",
        "L4",
        "--max-model-len",
        "4096,8192",
        "--max-num-seqs",
        "1,8,64",
        "--out",
        str(out_csv),
    )
    assert out.returncode == 0, out.stderr
    frame = pd.read_csv(out_csv)
    assert len(frame) == 6
    assert sorted(set(frame["max_model_len"])) == [4096, 8192]
    expected = vramplan.sweep(
        "Qwen/Qwen3-8B", "L4", max_model_len=[4096, 8192], max_num_seqs=[1, 8, 64]
    )
    assert list(frame["kv_tokens"]) == list(expected["kv_tokens"])
    bad = run("sweep", "--max-model-len", "4096", "--out", str(tmp_path / "grid.xlsx"))
    assert bad.returncode == 2
    assert ".csv" in bad.stderr


def test_sweep_parquet_without_pyarrow_is_a_named_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from vramplan.cli import main

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # import pyarrow -> ImportError
    status = main(["sweep", "--max-model-len", "4096", "--out", str(tmp_path / "g.parquet")])
    assert status == 2
    assert "pyarrow" in capsys.readouterr().err
    assert not (tmp_path / "g.parquet").exists()


def test_model_source_is_named(capsys: pytest.CaptureFixture[str]) -> None:
    from vramplan.cli import main

    # Where the spec came from only with --verbose (issue 19: not on every command).
    assert main(["plan", "Qwen/Qwen3-8B", "--gpu", "L4", "--context", "8192"]) == 0
    assert "model from database" not in capsys.readouterr().err
    assert main(["plan", "Qwen/Qwen3-8B", "--gpu", "L4", "--context", "8192", "--verbose"]) == 0
    assert "model from database" in capsys.readouterr().err
    assert main(["plan", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["model_source"]["source"] == "database"


def test_gpu_auto_uses_the_probe(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    from vramplan import probe
    from vramplan.cli import main

    monkeypatch.setattr(probe, "auto_gpu", lambda **_: probe.AutoGpu("L4", 2 * GIB, 64 * GIB))
    argv = ["--max-model-len", "4096", "--gpu-memory-utilization", "0.8"]
    assert main(["breakdown", "--gpu", "auto", *argv, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["gpu"] == "L4"
    assert data["model_source"]["gpu"] == "auto: L4"
    # The probe's other tenants shrink the startup free memory by exactly their 2 GiB.
    plain = vramplan.breakdown(
        gpu="L4", max_model_len=8192, gpu_memory_utilization=0.8, host_ram_bytes=64 * GIB
    )
    assert plain.startup_free_bytes - data["startup_free_bytes"] == 2 * GIB


def test_gpu_auto_takes_the_probed_interconnect(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    """Two A100s the probe found without NVLink: the plan charges PCIe's NCCL buffers and says
    where that came from; --interconnect overrides the probe."""
    from vramplan import probe
    from vramplan.cli import main

    monkeypatch.setattr(probe, "auto_gpu", lambda **_: probe.AutoGpu("A100-80GB", 0, 0, "pcie"))
    argv = ["--offline", "--engine-version", "0.19.0", "--tensor-parallel-size", "2"]
    argv += ["--num-gpus", "2", "--json"]

    def non_torch(*extra: str) -> tuple[int, str]:
        assert main(["breakdown", "--gpu", "auto", *argv, *extra]) == 0
        captured = capsys.readouterr()
        ranks = json.loads(captured.out)["ranks"]
        return ranks[0]["non_torch_bytes"], captured.err

    probed, notes = non_torch()
    assert "interconnect: pcie (NVML's NVLink state" in notes
    overridden, _ = non_torch("--interconnect", "nvlink")
    assert overridden - probed == (2223 - 384) << 20


def test_revision_and_offline_reach_the_resolver(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from vramplan.cli import main

    # A Hugging Face cache entry with one config at tag v1 (the layout huggingface_hub leaves).
    commit = "0123456789abcdef0123456789abcdef01234567"
    entry = tmp_path / "hub" / "models--acme--phi"
    (entry / "snapshots" / commit).mkdir(parents=True)
    config = Path(__file__).parent.parent / "data" / "configs" / "microsoft__phi-1.json"
    (entry / "snapshots" / commit / "config.json").write_bytes(config.read_bytes())
    (entry / "refs").mkdir()
    (entry / "refs" / "v1").write_text(commit)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("VRAMPLAN_CACHE", str(tmp_path / "vramplan"))
    monkeypatch.delenv("HF_HUB_OFFLINE")
    assert main(["breakdown", "acme/phi", "--revision", "v1", "--offline", "--json"]) == 0
    source = json.loads(capsys.readouterr().out)["model_source"]
    assert (source["source"], source["revision"]) == ("cache", commit)
    # Another tag is not in the cache, and --offline forbids asking the Hub.
    assert main(["breakdown", "acme/phi", "--revision", "v2", "--offline"]) == 2
    assert "offline" in capsys.readouterr().err
