"""Terminal rendering for the CLI: rich tables and colour on a terminal, the same tables in
plain text (no escape codes) when the output is a pipe or a file."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from typing import IO, Any

from rich import box
from rich.console import Console
from rich.padding import Padding
from rich.segment import Segment
from rich.table import Table
from rich.text import Text

from ._quoting import shell_word, visible
from ._units import gib_text

# Piped output is not wrapped at a terminal's width: long provenance lines stay on one line.
PIPED_WIDTH = 200
# Piped output meant for reading (check): wrapped at words at this width unless COLUMNS says.
PIPED_READING_WIDTH = 100

_OUTCOME_STYLE = {"started": "bold green"}


class _Console(Console):
    """rich's Console for text that holds user strings (model paths, served names, GPU names,
    log lines): no markup, emoji codes or highlighting is read from any string, and control
    characters are printed as escapes (`\\x1b`), so no string can restyle, hide text, clear
    the screen or set the window title. A closed pipe raises BrokenPipeError (rich itself
    exits 1): the CLI exits 141 for it, as a shell pipeline expects."""

    reading = False  # prose wraps at words (check); else it stays one line

    def __init__(self, **options: Any) -> None:
        super().__init__(markup=False, emoji=False, highlight=False, **options)

    def render_str(self, text: str, **options: Any) -> Text:
        options.update(markup=False, emoji=False, highlight=False)
        return super().render_str(visible(text, keep_newlines=True), **options)

    def _render_buffer(self, buffer: Iterable[Segment]) -> str:
        # The last step before the terminal: Text objects built from user strings included.
        text = super()._render_buffer(
            segment
            if segment.control
            else Segment(visible(segment.text, keep_newlines=True), segment.style)
            for segment in buffer
        )
        if self.is_terminal:
            return text
        # Plain text: no cell padding after the last word of a line.
        return "\n".join(line.rstrip(" ") for line in text.split("\n"))

    def on_broken_pipe(self) -> None:
        raise BrokenPipeError


def console(file: IO[str] | None = None, *, reading: bool = False) -> Console:
    """A console on `file` (stdout): colour and box tables on a terminal, plain text otherwise,
    its lines unpadded. NO_COLOR is honoured; FORCE_COLOR / TTY_COMPATIBLE as rich reads them.
    `reading`: plain text wraps at words at PIPED_READING_WIDTH (or COLUMNS), not one table row
    a line."""
    stream = sys.stdout if file is None else file
    if stream.isatty():
        made = _Console(file=stream)
    else:
        width = int(os.environ.get("COLUMNS", "0") or 0) or (
            PIPED_READING_WIDTH if reading else PIPED_WIDTH
        )
        made = _Console(
            file=stream,
            force_terminal=False,
            no_color=True,
            color_system=None,
            width=width,
            soft_wrap=False,
        )
    made.reading = reading
    return made


def unwrapped(out: Console) -> bool:
    """Whether prose stays one line (soft wrap): yes, unless the console is for reading (check),
    where it wraps at words like the tables."""
    return not (isinstance(out, _Console) and out.reading)


def bold_lead(lead: str, rest: str) -> Text:
    """`lead` in bold then `rest`, neither read as markup."""
    return Text.assemble((lead, "bold"), rest)


def outcome_text(outcome: str) -> Text:
    return Text(outcome, style=_OUTCOME_STYLE.get(outcome, "bold red"))


def table(
    out: Console,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    right: Iterable[str] = (),
) -> Table:
    """A table with these columns (`right`: right-aligned ones): boxed on a terminal, space-
    separated columns under a header line when plain."""
    aligned = set(right)
    t = Table(
        title=title,
        title_justify="left",
        box=box.SIMPLE_HEAVY if out.is_terminal else box.ASCII2,
        show_edge=out.is_terminal,
        header_style="bold" if out.is_terminal else "",
        pad_edge=False,
    )
    for name in columns:
        t.add_column(name, justify="right" if name in aligned else "left", overflow="fold")
    for row in rows:
        t.add_row(*(cell if isinstance(cell, Text) else str(cell) for cell in row))
    return t


def breakdown(out: Console, data: dict[str, Any], *, how: bool = True) -> None:
    """Per-rank terms; `how`: with the "how we know" column (each term's provenance)."""
    cfg = data["config"]
    runner = {"v2": "Model Runner V2", "v1": "V1 model runner"}[data["model_runner"]]
    if data["engine_era"] == "v0":
        runner = "V0 engine"  # V0 releases, and 0.8-0.10.1 below compute capability 8.0
    assumed = (
        f", planned with the {data['newest_known_vllm_version']} rules"
        if data["engine_version_warning"]
        else ""
    )
    out.print(
        Text.assemble(
            (visible(str(data["model"])), "bold"),
            " on ",
            (visible(str(data["gpu"])), "bold"),
            f"  (vLLM {data['engine_version']}{assumed}, {data['engine_era']}, {runner})",
        )
    )
    out.print(
        f"TP={cfg['tensor_parallel_size']} PP={cfg['pipeline_parallel_size']}  "
        f"gpu_memory_utilization={cfg['gpu_memory_utilization']:.2f}  "
        f"max_model_len={cfg['max_model_len']}  max_num_seqs={cfg['max_num_seqs']}  "
        f"max_num_batched_tokens={cfg['max_num_batched_tokens']}  dtype={cfg['dtype']}  "
        f"quantization={cfg['quantization']}"
    )
    for rank in data["ranks"]:
        rows: list[list[Any]] = [
            [term["name"], gib_text(term["bytes"]), term["provenance"]] for term in rank["terms"]
        ]
        rows.append(
            [
                "kv per token",
                f"{rank['kv_bytes_per_token']:,} B",
                f"block {rank['block_size']} tokens, {rank['num_blocks']:,} blocks",
            ]
        )
        columns = ["term", "size", "how we know"]
        if not how:
            columns, rows = columns[:2], [row[:2] for row in rows]
        out.print(
            table(
                out,
                columns,
                rows,
                right=["size"],
                title=(
                    f"per GPU rank, pipeline stage {rank['pipeline_rank']}: total "
                    f"{gib_text(rank['total_memory_bytes'])}, budget "
                    f"{gib_text(rank['requested_memory_bytes'])}"
                ),
            )
        )
    out.print(f"GPU KV cache size: {data['kv_tokens']:,} tokens")
    out.print(
        f"Maximum concurrency for {cfg['max_model_len']:,} tokens per request: "
        f"{data['max_concurrency']:.2f}x"
    )
    host = data["host"]
    out.print(
        f"host RAM required: {gib_text(host['required_bytes'])} "
        f"(+ {gib_text(host['page_cache_bytes'])} reclaimable page cache)"
    )
    out.print(Text("outcome: ").append(outcome_text(data["outcome"])))
    if "error_band" in data:
        out.print(f"expected error: {data['error_band']['statement']}", soft_wrap=unwrapped(out))
    for message in data["messages"]:
        out.print(f"  {message}", soft_wrap=unwrapped(out))


def _verdict_style(fits: bool) -> str:
    return "bold green" if fits else "bold red"


def plan(out: Console, data: dict[str, Any]) -> None:
    """A plan's JSON (with remedies already filtered to the user's target)."""
    breakdown(out, data["breakdown"])
    written = data["as_written"]
    out.print(
        Text("\nas written: ").append(written["verdict"], style=_verdict_style(written["fits"]))
    )
    for change in data["changed"]:
        before = change["before"] or "unset"
        out.print(f"  changed {change['knob']}: {before} -> {change['value']} ({change['reason']})")
    out.print(Text("verdict: ").append(data["verdict"], style=_verdict_style(data["fits"])))
    _kept_free(out, data)
    if data.get("workload"):
        workload(out, data["workload"], data["max_num_seqs"])
    _binding(out, data)
    model = _launch_line(out, data)
    _remedies(out, data, model)


def check(out: Console, data: dict[str, Any], *, how: bool = False) -> None:
    """`check`: the verdict on the launch as the user wrote it, then what the plan changes (the
    planned launch, its verdict and line), the remedies, then the planned launch's breakdown
    (its "how we know" column with `how`). Prose wraps at words at the console's width."""
    written = data["as_written"]
    out.print(
        Text("your launch: ", "bold").append(
            written["verdict"], style=_verdict_style(written["fits"])
        )
    )
    if data["changed"]:
        out.print(Text("what the plan changes:", "bold"))
        for change in data["changed"]:
            before = change["before"] or "unset"
            line = Text(f"{change['knob']}: {before} -> {change['value']} ({change['reason']})")
            out.print(Padding(line, (0, 0, 0, 2)))  # wrapped lines stay under the item
    else:
        out.print(Text("what the plan changes: ", "bold").append("nothing"))
    out.print(Text("planned: ", "bold").append(data["verdict"], style=_verdict_style(data["fits"])))
    model = _launch_line(out, data)
    _kept_free(out, data)
    if data.get("workload"):
        workload(out, data["workload"], data["max_num_seqs"])
    _remedies(out, data, model)
    out.print(Text("\nbreakdown of the planned launch", "bold"))
    breakdown(out, data["breakdown"], how=how)
    _binding(out, data)


def _kept_free(out: Console, data: dict[str, Any]) -> None:
    """The safety margin (and why, when the error band sets it) and the runtime headroom."""
    margin = data["safety_margin_bytes"]
    band = data.get("error_band") or {}
    why = (
        f" (the largest cross-validated over-prediction of {band['group']} launches like this "
        "one, docs/accuracy.md)"
        if band.get("over_prediction_bytes") == margin
        else ""
    )
    out.print(f"safety margin kept free per GPU: {gib_text(margin)}{why}", soft_wrap=unwrapped(out))
    if data.get("runtime_headroom_bytes"):
        out.print(
            f"runtime headroom kept free per GPU: {gib_text(data['runtime_headroom_bytes'])} "
            "(allocated after startup, beyond vLLM's profile)",
            soft_wrap=unwrapped(out),
        )


def _binding(out: Console, data: dict[str, Any]) -> None:
    """Why each solved knob has its value."""
    out.print(
        table(
            out,
            ["knob", "value", "why"],
            [[knob, data[knob], why] for knob, why in data["binding"].items()],
        )
    )


def _launch_line(out: Console, data: dict[str, Any]) -> str:
    """The planned launch as one `vllm serve` line (never wrapped: it is copied); the model
    word as the line writes it."""
    model = shell_word(data.get("served_model") or data["breakdown"]["model"])
    env = "".join(
        f"{name}={shell_word(value)} " for name, value in data.get("vllm_env", {}).items()
    )
    out.print(f"{env}vllm serve {model} {data['vllm_args']}", soft_wrap=True)
    return model


def _remedies(out: Console, data: dict[str, Any], model: str) -> None:
    if not data["remedies"]:
        return
    out.print(
        table(
            out,
            ["remedy", "alone", "what it gives"],
            [
                [
                    r["change"],
                    Text("fits", "green") if r["fits"] else Text("not enough", "yellow"),
                    r["detail"]
                    + (f"; drops your {', '.join(r['drops'])}" if r.get("drops") else ""),
                ]
                for r in data["remedies"]
            ],
            title="remedies (cheapest first)",
        )
    )
    for r in data["remedies"]:
        if r["fits"]:
            out.print(f"cheapest that fits: vllm serve {model} {r['flags']}", soft_wrap=True)
            break


def workload(out: Console, w: dict[str, Any], max_num_seqs: int) -> None:
    """What the workload asks of the KV cache: requests held, preemption, the prefill trade."""
    out.print(Text("workload: ").append(str(w["description"])), soft_wrap=unwrapped(out))
    out.print(
        f"  one request holds {w['blocks_p50']:,} KV blocks at p50, {w['blocks_p99']:,} at p99 "
        f"(at its peak); the {w['pool_blocks']:,} usable blocks hold {w['requests_held_p50']:,} "
        f"p50 or {w['requests_held_p99']:,} p99 requests"
        + (
            f", the shared prefix's {w['shared_prefix_blocks']:,} blocks once"
            if w["shared_prefix_blocks"]
            else ""
        ),
        soft_wrap=unwrapped(out),
    )
    out.print(
        f"  preemption: {max_num_seqs} busy slots overflow the KV cache with probability "
        f"{w['preemption_probability']:.2%} (target {w['preemption_target']:.2%}; the most slots "
        f"under it: {w['max_num_seqs_for_target']})",
        soft_wrap=unwrapped(out),
    )
    out.print(
        f"  max_num_batched_tokens costs {gib_text(w['activation_peak_bytes'])} of activation "
        f"(= {w['activation_kv_tokens']:,} KV tokens) and prefills a p50 prompt in "
        f"{w['prefill_steps_p50']} step(s), a p99 prompt in {w['prefill_steps_p99']}",
        soft_wrap=unwrapped(out),
    )
    if w["request_seconds"]:
        out.print(
            f"  Little's law: at {w['request_seconds']:g} s per request (your figure; latency is "
            f"not modelled) at most {w['requests_per_second_bound']:.2f} requests/s",
            soft_wrap=unwrapped(out),
        )


def replay_rows(replays: Iterable[Any], terms: Sequence[str]) -> tuple[list[list[Any]], int]:
    """Rows of predicted vs measured per term (validate) and the number of outcome
    mismatches and records the planner cannot express."""
    rows: list[list[Any]] = []
    problems = 0
    for replay in replays:
        if replay.unsupported:
            problems += 1
            rows.append([replay.id, "unsupported", "-", "-", Text(replay.unsupported, "yellow")])
            continue
        for term in (*terms, "outcome"):
            predicted = replay.predicted.get(term)
            measured = replay.measured.get(term)
            if measured is None:
                continue
            if term == "outcome":
                same = predicted == measured
                problems += not same
                flag = Text("ok", "green") if same else Text("MISMATCH", "bold red")
                rows.append([replay.id, term, str(predicted), str(measured), flag])
            elif predicted is None:
                rows.append([replay.id, term, "-", f"{measured:.2f}", "-"])
            else:
                error = float(predicted) - float(measured)
                # Counts (KV tokens) print whole; GiB and ratios with two decimals.
                digits = 0 if isinstance(predicted, int) and isinstance(measured, int) else 2
                rows.append(
                    [
                        replay.id,
                        term,
                        f"{predicted:.{digits}f}",
                        f"{measured:.{digits}f}",
                        f"{error:+.{digits}f}",
                    ]
                )
    return rows, problems


def replays(out: Console, replays: Sequence[Any], terms: Sequence[str]) -> int:
    rows, problems = replay_rows(replays, terms)
    out.print(
        table(
            out,
            ["id", "term", "predicted", "measured", "error / outcome"],
            rows,
            right=["predicted", "measured", "error / outcome"],
        )
    )
    # Each record's expected error, as plan states it: once per band, naming its records.
    by_band: dict[str, list[str]] = {}
    for replay in replays:
        if replay.error_band:
            by_band.setdefault(replay.error_band["statement"], []).append(replay.id)
    for statement, ids in by_band.items():
        out.print(f"expected error of {', '.join(ids)}: {statement}", soft_wrap=unwrapped(out))
    return problems
