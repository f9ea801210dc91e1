"""User strings on the terminal: a model path, served name, GPU name or log text is printed as
itself, never read as rich markup or emoji codes, and its control characters are shown as
escapes (`\\x1b`), never obeyed, on a terminal and in piped output alike."""

from __future__ import annotations

import io
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from vramplan import _render

LLAMA_CONFIG = (
    '{"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 4096, '
    '"num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8, '
    '"intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072, '
    '"torch_dtype": "bfloat16"}'
)
# What a terminal obeys: any ESC but rich's own colour (SGR) sequences, BEL, backspace, CR.
OBEYED = re.compile(r"\x1b(?!\[[0-9;]*m)|[\x07\x08\r\x9b]")


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vramplan", *args],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=cwd,
        env={**os.environ, "HF_HUB_OFFLINE": "1"},
    )


@pytest.fixture
def hostile_model(tmp_path: Path) -> Path:
    """A checkpoint folder whose name closes a markup tag, sets the window title and opens a
    style."""
    path = tmp_path / "m[/x]\x1b]0;pwned\x07[bold]z:thumbs_up:"
    path.mkdir(parents=True)
    (path / "config.json").write_text(LLAMA_CONFIG, encoding="utf-8")
    return path


def test_a_model_path_with_markup_and_escapes_prints_as_itself(
    hostile_model: Path, tmp_path: Path
) -> None:
    served = "[bold]tenant-a[/bold]"
    done = _cli(
        "plan",
        str(hostile_model),
        "--gpu",
        "H100-80GB",
        "--served-model-name",
        served,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert not OBEYED.search(done.stdout + done.stderr)
    shown = str(hostile_model).replace("\x1b", "\\x1b").replace("\x07", "\\x07")
    assert shown in done.stdout  # the heading, whole: nothing eaten as markup
    assert ":thumbs_up:" in done.stdout
    assert f"--served-model-name '{served}'" in done.stdout  # the launch as it must be typed
    launch = next(line for line in done.stdout.splitlines() if line.startswith("vllm serve"))
    assert "$'" in launch  # the escapes are bash's: the line still pastes exactly


def test_breakdown_and_errors_show_control_characters(hostile_model: Path, tmp_path: Path) -> None:
    done = _cli("breakdown", str(hostile_model), "--gpu", "H100-80GB", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not OBEYED.search(done.stdout)
    refused = _cli("plan", "org/\x1b[2Jmodel[/x]", "--gpu", "H100-80GB", cwd=tmp_path)
    assert refused.returncode == 2
    assert "\x1b" not in refused.stderr
    assert "internal error" not in refused.stderr


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_on_a_terminal_only_colour_sequences_are_written() -> None:
    stream = _Terminal()
    out = _render.console(stream)
    assert out.is_terminal
    out.print("[red]x[/red] \x1b]0;title\x07 :smile: [/closing]")
    out.print(_render.table(out, ["a"], [["\x1b[2J[bold]cell"]], title="t\x1b[H[/x]"))
    out.print(_render.outcome_text("\x1bc"))
    text = stream.getvalue()
    assert not OBEYED.search(text), repr(text)
    assert "[red]x[/red]" in text
    assert ":smile:" in text
    assert "\\x1b[2J[bold]cell" in text


def test_probe_shows_a_gpu_name_with_escapes(tmp_path: Path) -> None:
    csv = tmp_path / "smi.csv"
    csv.write_text(
        "0, NVIDIA H100 80GB HBM3\x1b]0;x\x07\x1b[2J, 81559, 1000, 80559\n", encoding="utf-8"
    )
    done = _cli("probe", "--nvidia-smi-csv", str(csv), cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert not OBEYED.search(done.stdout + done.stderr)
    assert "\\x1b[2J" in done.stdout


def test_piped_tables_keep_rows_whole_and_align_wide_characters() -> None:
    stream = io.StringIO()
    out = _render.console(stream)
    assert not out.is_terminal
    wide = "模型"  # two East Asian wide characters: four terminal cells
    long_cell = "x" * 250  # wider than any terminal: the row stays one line in a pipe
    out.print(
        _render.table(
            out,
            ["name", "size"],
            [[wide, "1.00 GiB"], ["ab", long_cell]],
            right=["size"],
            title="t",
        )
    )
    out.print(_render.bold_lead("lead:", " " + "y" * 250))
    # Written here by hand: columns padded to the widest cell (in cells), " | " between them,
    # a "-+-" rule under the header, right-aligned "size", no padding after the last word.
    size = 250
    assert stream.getvalue().split("\n") == [
        "t",
        "name | " + " " * (size - 4) + "size",
        "-----+" + "-" * (size + 1),
        wide + " | " + " " * (size - 8) + "1.00 GiB",
        "ab   | " + long_cell,
        "lead: " + "y" * 250,
        "",
    ]
