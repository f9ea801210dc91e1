"""What a person sees: rich tables with colour on a terminal (checked under a pseudo-terminal),
plain text without escape codes when piped, help for every knob, `vramplan explain`."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys

import pytest
import vramplan
from vramplan.explain import EXPLANATIONS

ESC = "\x1b["


def run_piped(*args: str) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE")}
    return subprocess.run(
        [sys.executable, "-m", "vramplan", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=env,
    )


def run_in_pty(*args: str) -> tuple[int, str]:
    """Run the CLI with stdout and stderr on a pseudo-terminal; return (status, output)."""
    master, slave = pty.openpty()
    env = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    env.update(TERM="xterm-256color", COLUMNS="160", LINES="50")
    proc = subprocess.Popen(
        [sys.executable, "-m", "vramplan", *args],
        stdin=subprocess.DEVNULL,
        stdout=slave,
        stderr=slave,
        env=env,
    )
    os.close(slave)
    chunks = []
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not chunk:
            break
        chunks.append(chunk)
    os.close(master)
    return proc.wait(timeout=120), b"".join(chunks).decode("utf-8", "replace")


def test_terminal_output_is_a_coloured_table() -> None:
    status, out = run_in_pty("plan", "--context", "8192")
    assert status == 0
    assert ESC in out  # colour
    assert "━" in out  # the heavy rule under a rich table's header
    for cell in ("weights", "kv_cache", "cuda_context", "max_num_seqs", "vllm serve"):
        assert cell in out


@pytest.mark.parametrize(
    "argv",
    [
        ["plan", "--context", "8192"],
        ["breakdown"],
        ["flags"],
        ["gpus"],
        ["explain"],
        ["explain", "non_torch"],
        ["sweep", "--max-model-len", "4096,8192"],
        ["plan", "meta-llama/Llama-3.1-70B-Instruct", "--gpu", "H100"],  # remedies table
    ],
)
def test_piped_output_has_no_escape_codes(argv: list[str]) -> None:
    out = run_piped(*argv)
    assert out.returncode in (0, 1), out.stderr
    assert out.stdout.strip()
    assert ESC not in out.stdout
    assert ESC not in out.stderr


def test_piped_table_keeps_one_row_per_line() -> None:
    out = run_piped("breakdown").stdout
    rows = [line for line in out.splitlines() if line.startswith("weights ")]
    assert len(rows) == 1
    assert "GiB" in rows[0]
    assert "exact:" in rows[0]  # provenance on the same line, not wrapped


def test_every_knob_has_help_on_the_command_line() -> None:
    text = run_piped("plan", "--help").stdout
    flat = " ".join(text.split())
    for knob in vramplan.KNOBS:
        assert knob["help"], knob["name"]
        assert "".join(str(knob["help"]).split()) in "".join(flat.split()), knob["name"]


def test_every_breakdown_term_and_outcome_is_explained() -> None:
    b = vramplan.breakdown()
    names = {t.name for t in b.ranks[0].terms} | {t.name for t in b.host.terms}
    names |= set(vramplan._core.outcome_names())
    assert names <= set(EXPLANATIONS), names - set(EXPLANATIONS)
    for e in EXPLANATIONS.values():
        assert e.what
        assert e.why
        assert e.flags


@pytest.mark.parametrize(
    ("term", "flag"),
    [
        ("weights", "--tensor-parallel-size"),
        ("activation_peak", "--max-num-batched-tokens"),
        ("non_torch", "--disable-custom-all-reduce"),
        ("cudagraph", "--enforce-eager"),
        ("kv_cache", "--kv-cache-dtype fp8"),
        ("kv_cache_bytes", "--gpu-memory-utilization"),  # JSON field names work too
        ("pinned", "--cpu-offload-gb"),
        ("oom_at_load", "--quantization fp8"),
    ],
)
def test_explain_names_the_flag_that_moves_a_term(term: str, flag: str) -> None:
    out = run_piped("explain", term)
    assert out.returncode == 0, out.stderr
    assert flag in " ".join(out.stdout.split())
    data = json.loads(run_piped("explain", term, "--json").stdout)
    assert flag in data["flags"]


def test_explain_unknown_term_lists_the_known_ones() -> None:
    out = run_piped("explain", "vram")
    assert out.returncode == 2
    assert "unknown term 'vram'" in out.stderr
    assert "activation_peak" in out.stderr
    with pytest.raises(vramplan.Error, match="term"):
        vramplan.explain(42)  # type: ignore[arg-type]


def test_record_replays_show_a_progress_bar_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import io

    from vramplan.cli import _progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    items = list(range(50))
    monkeypatch.setattr(sys, "stderr", io.StringIO())
    assert _progress(items, "replaying records") is items  # piped: no bar
    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert list(_progress(items, "replaying records")) == items
    assert "replaying records" in terminal.getvalue()
    assert _progress(items[:5], "replaying records") == items[:5]  # short: no bar
