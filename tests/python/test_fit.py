"""`vramplan fit`: every GPU type x count x split for a target, ranked; the reverse (which
models fit a GPU); price files; the engine guard; speed; the example notebook."""

from __future__ import annotations

import json
import math
import os
import shlex
import sys
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
import vramplan
from vramplan import cli
from vramplan.fit import read_prices, splits

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = ROOT / "tests" / "data" / "configs"
GIB = 1 << 30

LLAMA_8B = "meta-llama/Llama-3.1-8B-Instruct"
# Llama-3.1-8B-Instruct: 16,060,522,496 bytes of bf16 safetensors (the Hub's file sizes), and
# 2 (K, V) x 32 layers x 8 KV heads x 128 dims x 2 bytes = 131,072 bytes of KV per token.
LLAMA_8B_WEIGHTS = 16_060_522_496
LLAMA_8B_KV_PER_TOKEN = 131_072
L4_TOTAL = 23_675_797_504  # 22.05 GiB as CUDA reports it (model_specs/gpus.yaml)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def prices(tmp_path: Path) -> Path:
    path = tmp_path / "prices.csv"
    path.write_text("gpu,usd_per_hour\nL4,0.70\nA100-40GB,1.60\nH100,2.50\n")
    return path


def test_cheapest_option_known_by_hand(prices: Path) -> None:
    # Target: 4 sequences of 32768 tokens. Prices per GPU-hour: L4 0.70, A100-40GB 1.60,
    # H100 2.50. Cheapest candidates by price alone:
    #   1 x L4 ($0.70): weights + 4 x 32768 tokens of KV = 16,060,522,496 + 17,179,869,184
    #     = 33,240,391,680 B > 23,675,797,504 B, the whole card: cannot fit at any utilization.
    #   2 x L4 as DP=2 ($1.40): each replica is one L4 holding 2 sequences: 16,060,522,496 +
    #     8,589,934,592 = 24,650,457,088 B > the whole card: cannot fit either.
    #   2 x L4 as TP=2 ($1.40): per GPU 8,030,261,248 + 8,589,934,592 = 16,620,195,840 B,
    #     leaving 7,055,601,664 B (6.57 GiB) for the CUDA context, activations at 2048 batched
    #     tokens, non-torch memory, graphs and the 0.5 GiB margin: fits. PP=2 likewise.
    #   1 x A100-40GB ($1.60) is next, then 3 x L4 ($2.10), then 1 x H100 ($2.50).
    single = LLAMA_8B_WEIGHTS + 4 * 32768 * LLAMA_8B_KV_PER_TOKEN
    assert single > L4_TOTAL
    assert LLAMA_8B_WEIGHTS + 2 * 32768 * LLAMA_8B_KV_PER_TOKEN > L4_TOTAL
    options = vramplan.fit(
        LLAMA_8B,
        context=32768,
        concurrency=4,
        gpus=["L4", "A100-40GB", "H100"],
        max_gpus=4,
        prices=prices,
    )
    assert isinstance(options, pd.DataFrame)
    best = options.iloc[0]
    assert (best.gpu, best.num_gpus, best.usd_per_hour) == ("L4", 2, pytest.approx(1.40))
    assert (best.tensor_parallel_size, best.pipeline_parallel_size) == (2, 1)  # TP before PP
    second = options.iloc[1]
    assert (second.gpu, second.num_gpus, second.pipeline_parallel_size) == ("L4", 2, 2)
    third = options.iloc[2]
    assert (third.gpu, third.num_gpus, third.usd_per_hour) == ("A100-40GB", 1, 1.60)
    one_l4 = options[(options.gpu == "L4") & (options.num_gpus == 1)]
    assert not one_l4.fits.any()
    dp_l4 = options[(options.gpu == "L4") & (options.data_parallel_size == 2)]
    assert not dp_l4[dp_l4.num_gpus == 2].fits.any()
    # The fitting rows are in price order.
    costs = options[options.fits].usd_per_hour.tolist()
    assert costs == sorted(costs)
    assert best.launch.startswith(f"vllm serve {LLAMA_8B} ")
    assert "--tensor-parallel-size 2" in best.launch
    assert best.max_concurrency >= 4
    assert best.max_context >= 32768
    assert best.kv_headroom == best.max_concurrency / 4


def test_without_prices_fewest_gpus_first() -> None:
    options = vramplan.fit(LLAMA_8B, context=8192, concurrency=2, max_gpus=4)
    fitting = options[options.fits]
    counts = fitting.num_gpus.tolist()
    assert counts == sorted(counts)
    assert options.usd_per_hour.isna().all()
    # Every GPU type x count x split is there, fitting or not: sum over counts 1..4 of the
    # ordered (TP, PP, DP) factorisations: 1 + 3 + 3 + 6 = 13 per GPU.
    assert [len(splits(n)) for n in (1, 2, 3, 4)] == [1, 3, 3, 6]
    assert len(options) == 13 * len(vramplan.gpus())
    # A fit's misfits say why.
    assert options[~options.fits].verdict.str.len().min() > 0


def replay(
    capsys: pytest.CaptureFixture[str], record: dict[str, object], context: int, concurrency: int
) -> None:
    """The printed launch line through `vramplan plan` on the option's GPUs: it must fit."""
    words = shlex.split(str(record["launch"]))
    assert words[:2] == ["vllm", "serve"], record["launch"]
    per_replica = math.ceil(concurrency / int(str(record["data_parallel_size"])))
    code, out, err = run(
        capsys,
        "plan",
        words[2],
        "--gpu",
        str(record["gpu"]),
        "--num-gpus",
        str(record["num_gpus"]),
        *words[3:],
        "--context",
        str(context),
        "--concurrency",
        str(per_replica),
        "--json",
    )
    assert code == 0, (record["launch"], err)
    data = json.loads(out)
    assert data["fits"], (record["launch"], data["verdict"])
    assert data["max_num_seqs"] * int(str(record["data_parallel_size"])) >= concurrency


@pytest.mark.parametrize(
    ("model", "context", "concurrency", "extra"),
    [
        (LLAMA_8B, 32768, 8, []),
        ("Qwen/Qwen3-30B-A3B", 16384, 16, ["--gpus", "H100,L40S,A100-80GB,L4"]),
    ],
)
def test_every_option_printed_replays_through_plan(
    capsys: pytest.CaptureFixture[str], model: str, context: int, concurrency: int, extra: list[str]
) -> None:
    argv = ["fit", model, "--context", str(context), "--concurrency", str(concurrency)]
    code, out, _ = run(capsys, *argv, "--max-gpus", "4", *extra, "--json")
    assert code == 0
    records = json.loads(out)
    fitting = [r for r in records if r["fits"]]
    assert len(fitting) > 10
    assert any(r["data_parallel_size"] > 1 for r in fitting)
    for record in fitting:
        replay(capsys, record, context, concurrency)
    # The text answer: every numbered launch line belongs to a row of the table above it.
    code, out, _ = run(capsys, *argv, "--max-gpus", "4", *extra, "--top", "0")
    assert code == 0
    lines = out.splitlines()
    rows = {}
    for line in lines:
        cells = [c.strip() for c in line.split("|")]
        if len(cells) == 10 and cells[0].isdigit():
            rows[cells[0]] = {
                "gpu": vramplan.load_gpu(cells[1]).id,
                "num_gpus": cells[2],
                "data_parallel_size": cells[5],
            }
    launches = [line.split(": ", 1) for line in lines if ": vllm serve " in line]
    assert len(launches) == len(rows) == len(fitting)
    for number, launch in launches:
        replay(capsys, {**rows[number], "launch": launch}, context, concurrency)


def test_price_file_errors_name_file_line_and_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    cases = {
        "gpu,price\nL4,1\n": "header",
        "gpu,usd_per_hour\nL4,1\nNoSuchGPU,2\n": "line 3: gpu",
        "gpu,usd_per_hour\nL4,-1\n": "line 2: usd_per_hour",
        "gpu,usd_per_hour\nL4,nan\n": "line 2: usd_per_hour",
        "gpu,usd_per_hour\nL4,1,2\n": "line 2",
        "gpu,usd_per_hour\nL4,1\nNVIDIA L4,2\n": "listed twice",
    }
    for number, (text, where) in enumerate(cases.items()):
        path = tmp_path / f"prices{number}.csv"
        path.write_text(text)
        with pytest.raises(vramplan.Error, match=where) as err:
            read_prices(path)
        assert str(path) in str(err.value)
        code, _, stderr = run(
            capsys,
            "fit",
            LLAMA_8B,
            "--context",
            "1024",
            "--concurrency",
            "1",
            "--prices",
            str(path),
        )
        assert code == 2
        assert str(path) in stderr
        assert "Traceback" not in stderr
    binary = tmp_path / "binary.csv"
    binary.write_bytes(b"gpu,usd_per_hour\nL4,\xff\n")
    with pytest.raises(vramplan.Error, match="not UTF-8"):
        read_prices(binary)
    with pytest.raises(vramplan.Error, match="price file"):
        read_prices(tmp_path / "missing.csv")
    fifo = tmp_path / "prices.fifo"
    os.mkfifo(fifo)  # opening it for reading would block until a writer came
    with pytest.raises(vramplan.Error, match="FIFO"):
        read_prices(fifo)
    good = tmp_path / "good.csv"
    good.write_text("gpu,usd_per_hour\nNVIDIA L4,0.7\n\nH100,2.5\n")
    assert read_prices(good) == {"L4": 0.7, "H100-80GB": 2.5}


def test_sglang_is_refused_by_name_where_not_searched(capsys: pytest.CaptureFixture[str]) -> None:
    # fit MODEL searches SGLang launches (tests/python/test_sglang_fit.py); the reverse search
    # and colocate run the vLLM solver only and refuse SGLang by name.
    with pytest.raises(vramplan.Error, match="does not search SGLang launches"):
        vramplan.fit_models("L4", context=1024, concurrency=1, engine="sglang")
    with pytest.raises(vramplan.Error, match="engine"):
        vramplan.fit(LLAMA_8B, context=1024, concurrency=1, engine="trtllm")
    for argv in (
        ["fit", "--gpu", "L4", "--engine", "sglang"],
        ["colocate", "Qwen/Qwen3-0.6B", "--engine", "sglang"],
    ):
        code, out, err = run(capsys, *argv)
        assert code == 2
        assert out == ""
        assert "does not search SGLang launches" in err
        assert "plan --engine sglang" in err


def test_bad_targets_are_named(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(vramplan.Error, match="context"):
        vramplan.fit(LLAMA_8B, context=10**7, concurrency=1)
    with pytest.raises(vramplan.Error, match="gpus"):
        vramplan.fit(LLAMA_8B, context=1024, concurrency=1, gpus=["NoSuchGPU"])
    code, _, err = run(capsys, "fit", LLAMA_8B, "--context", "1024")
    assert code == 2
    assert "--concurrency is required" in err
    code, _, err = run(capsys, "fit")
    assert code == 2
    assert "--gpu" in err
    code, _, err = run(
        capsys, "fit", LLAMA_8B, "--gpu", "L4", "--context", "1", "--concurrency", "1"
    )
    assert code == 2
    assert "--gpus L4" in err


def test_pinned_split_keeps_only_that_split() -> None:
    options = vramplan.fit(
        LLAMA_8B, context=4096, concurrency=1, gpus="H100", max_gpus=4, tensor_parallel_size=2
    )
    assert set(options.tensor_parallel_size) == {2}
    assert set(options.num_gpus) == {2, 4}


def test_whole_catalogue_reports_progress_per_option() -> None:
    # One model over every GPU type x 1..8 GPUs x every TP/PP/DP split, each planned by the C++
    # solver, with the longest context of every fitting option (its time: benchmarks/
    # bench_python.py, not a test).
    calls = []
    options = vramplan.fit(
        LLAMA_8B, context=32768, concurrency=16, progress=lambda d, t: calls.append((d, t))
    )
    assert len(options) == len(calls) == calls[-1][1] == 38 * len(vramplan.gpus())


def test_reverse_lists_models_that_fit_a_gpu(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    cache = tmp_path / "hub"
    snapshot = cache / "models--someorg--my-qwen" / "snapshots" / ("0" * 40)
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_bytes((CONFIGS / "Qwen__Qwen3-8B.json").read_bytes())
    (cache / "models--someorg--my-qwen" / "refs").mkdir()
    (cache / "models--someorg--my-qwen" / "refs" / "main").write_text("0" * 40)
    (cache / "models--someorg--broken" / "snapshots" / ("1" * 40)).mkdir(parents=True)
    monkeypatch.setenv("HF_HUB_CACHE", str(cache))
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("VRAMPLAN_CACHE", str(tmp_path / "vramplan"))
    models = vramplan.fit_models("L4")
    by_id = models.set_index("model")
    # Llama-3.1-70B: 70.6 B parameters x 2 bytes = 141 GB of weights > 22.05 GiB: no.
    assert not by_id.loc["meta-llama/Meta-Llama-3.1-70B", "fits"]
    # Qwen3-0.6B: 1.5 GB of weights on 22.05 GiB: yes, up to its 40960-token maximum.
    assert by_id.loc["Qwen/Qwen3-0.6B", "fits"]
    assert by_id.loc["Qwen/Qwen3-0.6B", "max_context"] == 40960
    # The cached config is read offline and answers like the database's own Qwen3-8B.
    assert by_id.loc["someorg/my-qwen", "source"].startswith("hf_cache")
    assert by_id.loc["someorg/my-qwen", "fits"]
    assert by_id.loc["someorg/my-qwen", "max_context"] == by_id.loc["Qwen/Qwen3-8B", "max_context"]
    assert not by_id.loc["someorg/broken", "fits"]
    fitting = models[models.fits]
    assert fitting.max_context.tolist() == sorted(fitting.max_context.tolist(), reverse=True)
    assert models.fits.tolist() == sorted(models.fits.tolist(), reverse=True)
    code, out, err = run(capsys, "fit", "--gpu", "L4", "--top", "0", "--no-hf-cache")
    assert code == 0
    assert "Qwen/Qwen3-0.6B" in out
    assert "someorg/my-qwen" not in out
    assert "Meta-Llama-3.1-70B " not in out
    assert "models fit" in err
    # Two L4s: the 14B model needs TP=2 (28 GiB of bf16 weights > one card).
    two = vramplan.fit_models("L4", num_gpus=2, hf_cache=False).set_index("model")
    assert two.loc["Qwen/Qwen3-14B", "fits"]
    assert two.loc["Qwen/Qwen3-14B", "tensor_parallel_size"] == 2


def test_plot_fit_draws_cost_against_capacity(prices: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    options = vramplan.fit(
        LLAMA_8B, context=32768, concurrency=4, gpus=["L4", "H100"], max_gpus=2, prices=prices
    )
    figure = vramplan.plot_fit(options)
    ax = figure.axes[0]
    assert ax.get_ylabel() == "$/hour"
    points = {c.get_gid(): c.get_offsets() for c in ax.collections}
    assert set(points) == {"fit:H100-80GB", "fit:L4"}
    fitting = options[options.fits]
    h100 = fitting[fitting.gpu == "H100-80GB"]
    assert sorted(points["fit:H100-80GB"][:, 1].tolist()) == sorted(h100.usd_per_hour.tolist())
    assert sorted(points["fit:H100-80GB"][:, 0].tolist()) == sorted(
        float(v) for v in h100.max_concurrency
    )
    unpriced = vramplan.plot_fit(LLAMA_8B, context=8192, concurrency=1, gpus="L4", max_gpus=2)
    assert unpriced.axes[0].get_ylabel() == "GPUs"


def test_fit_notebook_runs(notebook_outputs: Any) -> None:
    outputs = notebook_outputs(ROOT / "docs" / "examples" / "fit.ipynb")
    mimes = {m for o in outputs for m in o.get("data", {})}
    assert "text/html" in mimes  # the DataFrames
    assert "image/png" in mimes  # plot_fit
    text = "".join(str(o.get("text", "")) for o in outputs)
    assert "services:" in text  # the compose file


def test_progress_shows_past_a_second_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from vramplan import cli_fit

    progress = cli_fit._Progress("fit")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    progress(1, 2)  # within the first second: nothing
    assert capsys.readouterr().err == ""
    progress.start -= cli_fit.PROGRESS_AFTER_S
    progress(2, 2)
    progress.close()
    assert capsys.readouterr().err == "\rvramplan: fit: 2/2\n"


def test_fit_out_writes_every_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "options.csv"
    argv = ["fit", LLAMA_8B, "--context", "8192", "--concurrency", "2", "--gpus", "L4,H100"]
    code, stdout, err = run(capsys, *argv, "--max-gpus", "2", "--out", str(out))
    assert code == 0
    assert stdout == ""
    assert "wrote 8 rows" in err
    frame = pd.read_csv(out)
    assert list(frame.columns) == list(
        vramplan.fit(LLAMA_8B, context=8192, concurrency=2, gpus="L4", max_gpus=1).columns
    )


def test_launch_flags_are_honoured_or_refused(capsys: pytest.CaptureFixture[str]) -> None:
    # Host RAM is the node's: 8 GiB cannot hold a multi-GPU launch's workers, so fewer options
    # fit than without the limit, and each one that does replays with the same limit.
    argv = ["fit", "Qwen/Qwen3-8B", "--context", "32768", "--concurrency", "4", "--gpus", "H100"]
    code, out, _ = run(capsys, *argv, "--json")
    unlimited = [r for r in json.loads(out) if r["fits"]]
    code, out, _ = run(capsys, *argv, "--host-ram-gib", "8", "--json")
    limited = [r for r in json.loads(out) if r["fits"]]
    assert code == 0
    assert 0 < len(limited) < len(unlimited)
    # --gpu-total-bytes resizes the card of the reverse question: fewer models fit 16 GiB.
    full = vramplan.fit_models("L4", hf_cache=False)
    small = vramplan.fit_models(
        vramplan.load_gpu("L4", total_memory_bytes=16 * GIB), hf_cache=False
    )
    assert small.fits.sum() < full.fits.sum()
    for argv, flag in (
        (
            ["fit", LLAMA_8B, "--context", "1", "--concurrency", "1", "--gpu-total-bytes", "1"],
            "--gpu-total-bytes",
        ),
        (["fit", "--gpu", "L4", "--revision", "main"], "--revision"),
    ):
        code, out, err = run(capsys, *argv)
        assert code == 2
        assert f"{flag} cannot be used here" in err
