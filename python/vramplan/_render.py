"""Terminal rendering for the CLI: rich tables and colour on a terminal, the same tables in
plain text (no escape codes) when the output is a pipe or a file."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Sequence
from typing import IO, Any

from ._quoting import shell_word, visible
from ._styled import Indented, Styled, TableSpec
from ._units import GIB, gib_text

# Piped output meant for reading (check): wrapped at words at this width unless COLUMNS says.
# Other piped output is never wrapped: a table row or a provenance line stays one line for grep.
PIPED_READING_WIDTH = 100

_OUTCOME_STYLE = {"started": "bold green"}


class PlainConsole:
    """Piped output without rich: a table as rich's ASCII2 box without edges lays it out (`a |
    b` rows under a `--+--` rule), at its natural width; prose one line an item; lines
    unpadded; user strings' control characters as escapes."""

    is_terminal = False
    reading = False

    def __init__(self, stream: IO[str]) -> None:
        self.file = stream

    def print(self, content: Any, *, soft_wrap: bool = True) -> None:
        del soft_wrap  # piped prose is never wrapped
        lines = _plain_lines(content)
        self.file.write("".join(line.rstrip(" ") + "\n" for line in lines))

    def flush(self) -> None:
        self.file.flush()


def _plain_text(content: str | Styled) -> str:
    return visible(
        content.plain if isinstance(content, Styled) else str(content), keep_newlines=True
    )


def _cells(text: str) -> int:
    """Terminal cells `text` takes: East Asian wide characters two, combining marks none."""
    if text.isascii():
        return len(text)
    import unicodedata

    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def _plain_lines(content: Any) -> list[str]:
    if isinstance(content, TableSpec):
        return _plain_table(content)
    if isinstance(content, Indented):
        return [" " * content.spaces + line for line in _plain_lines(content.content)]
    return _plain_text(content).split("\n")


def _plain_table(spec: TableSpec) -> list[str]:
    # A cell's own line breaks would break the row: shown as spaces, one row a line.
    cells = [[_plain_text(cell).replace("\n", " ") for cell in row] for row in spec.rows]
    widths = [_cells(name) for name in spec.columns]
    for row in cells:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], _cells(cell))

    def line(row: Sequence[str]) -> str:
        padded = []
        for name, cell, width in zip(spec.columns, row, widths):
            pad = " " * (width - _cells(cell))
            padded.append(pad + cell if name in spec.right else cell + pad)
        return " | ".join(padded)

    last = len(widths) - 1
    rule = "+".join("-" * (w + (i > 0) + (i < last)) for i, w in enumerate(widths))
    title = [] if spec.title is None else _plain_text(spec.title).split("\n")
    return [*title, line(spec.columns), rule, *(line(row) for row in cells)]


def console(file: IO[str] | None = None, *, reading: bool = False) -> Any:
    """A console on `file` (stdout): colour and box tables on a terminal (rich), plain text
    otherwise. NO_COLOR is honoured; FORCE_COLOR / TTY_COMPATIBLE as rich reads them on a
    terminal. `reading`: plain text wraps at words at PIPED_READING_WIDTH (or COLUMNS), not one
    table row a line (rich lays it out)."""
    stream = sys.stdout if file is None else file
    if reading or stream.isatty():
        from ._terminal import rich_console

        width = int(os.environ.get("COLUMNS", "0") or 0) or PIPED_READING_WIDTH
        return rich_console(stream, piped_width=width, reading=reading)
    return PlainConsole(stream)


def unwrapped(out: Any) -> bool:
    """Whether prose stays one line (soft wrap): yes, unless the console is for reading (check),
    where it wraps at words like the tables."""
    return not out.reading


def bold_lead(lead: str, rest: str) -> Styled:
    """`lead` in bold then `rest`, neither read as markup."""
    return Styled.assemble((lead, "bold"), rest)


def outcome_text(outcome: str) -> Styled:
    return Styled(outcome, _OUTCOME_STYLE.get(outcome, "bold red"))


def table(
    out: Any,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    title: str | None = None,
    right: Iterable[str] = (),
) -> TableSpec:
    """A table with these columns (`right`: right-aligned ones)."""
    del out  # the console that prints it lays it out
    cells = [[cell if isinstance(cell, Styled) else str(cell) for cell in row] for row in rows]
    return TableSpec(list(columns), cells, title, frozenset(right))


def _rank_table(
    out: Any, rank: dict[str, Any], kv_row: list[str], budget: str, *, how: bool
) -> None:
    """One rank's terms (name, size, how we know) and its KV row, titled with the GPU's total and
    the engine's budget (vLLM: total x utilization; SGLang: what the slack leaves): every
    engine's breakdown is drawn by this table."""
    rows: list[list[Any]] = [
        [term["name"], gib_text(term["bytes"]), term["provenance"]] for term in rank["terms"]
    ]
    rows.append(kv_row)
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
                f"{gib_text(rank['total_memory_bytes'])}, {budget} "
                f"{gib_text(rank['requested_memory_bytes'])}"
            ),
        )
    )


def breakdown(out: Any, data: dict[str, Any], *, how: bool = True) -> None:
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
        Styled.assemble(
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
        kv_row = [
            "kv per token",
            f"{rank['kv_bytes_per_token']:,} B",
            f"block {rank['block_size']} tokens, {rank['num_blocks']:,} blocks",
        ]
        _rank_table(out, rank, kv_row, "budget", how=how)
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
    out.print(Styled("outcome: ").append(outcome_text(data["outcome"])))
    if "error_band" in data:
        out.print(f"expected error: {data['error_band']['statement']}", soft_wrap=unwrapped(out))
    for message in data["messages"]:
        out.print(f"  {message}", soft_wrap=unwrapped(out))


def sglang_breakdown(
    out: Any, data: dict[str, Any], *, how: bool = True, solved: bool = False
) -> None:
    """An SGLang breakdown's JSON: the launch, its rank's terms (the table vLLM's breakdown is
    drawn with), SGLang's baseline and slack, and the verdict (`solved`: mem_fraction_static is
    the solver's)."""
    out.print(
        Styled.assemble(
            (visible(str(data["model"])), "bold"),
            " on ",
            (visible(str(data["gpu"])), "bold"),
            f"  (SGLang {data['sglang_version']}, rules read from the "
            f"{data['rules_release']} wheel)",
        )
    )
    if data.get("version_note"):
        out.print(f"  note: {data['version_note']}", soft_wrap=unwrapped(out))
    f_source = (
        "solved: the largest that leaves the safety margin in the slack"
        if solved
        else "the release's default formula"
        if data["mem_fraction_static_default"]
        else "given"
    )
    out.print(
        f"--tp-size {data['tp_size']} --pp-size {data['pp_size']} --dp-size {data['dp_size']}  "
        f"mem_fraction_static={data['mem_fraction_static']:.3f} ({f_source})  "
        f"context_length={data['context_length']}  "
        f"max_running_requests={data['max_running_requests']}  "
        f"chunked_prefill_size={data['chunked_prefill_size']}  "
        f"cuda_graph_max_bs={data['cuda_graph_max_bs']}"
    )
    swa = f", SWA tokens {data['swa_tokens']}" if data["swa_tokens"] else ""
    mamba = f", {data['mamba_slots']} Mamba slots" if data["mamba_pool_bytes"] else ""
    kv_row = [
        "kv per token",
        f"{data['cell_bytes']:,} B",
        (
            f"max_total_num_tokens={data['max_total_num_tokens']:,}{swa}, page "
            f"{data['page_size']}{mamba}"
        ),
    ]
    for rank in data["ranks"]:
        _rank_table(out, rank, kv_row, "weights and pools", how=how)
    smi = f"nvidia-smi {data['gpu_mib']} MiB" + (" (assumed)" if data["gpu_mib_assumed"] else "")
    out.print(
        f"baseline B {gib_text(data['baseline_free_bytes'])} (free after distributed init; GPU "
        f"{smi}), slack B x (1 - f) {gib_text(data['slack_bytes'])} kept out of the pools"
    )
    out.print(f"if the slack is too small: {slack_consequence(data)}", soft_wrap=unwrapped(out))
    for line in hicache_lines(data.get("hicache")):
        out.print(line)
    out.print(Styled("verdict: ").append(outcome_text(data["verdict"])))
    if data["error"]:
        out.print(f"  SGLang would fail with: {data['error']}", soft_wrap=unwrapped(out))
    for note in data["notes"]:
        out.print(f"  note: {note}", soft_wrap=unwrapped(out))


def hicache_lines(hicache: dict[str, Any] | None) -> list[str]:
    """The HiCache host pools of a breakdown (--enable-hierarchical-cache), per rank and per
    node; none without HiCache."""
    if not hicache:
        return []
    sizing = (
        f"--hicache-size {hicache['size_gb']} GB"
        if hicache["size_gb"]
        else f"ratio {hicache['ratio']:.3f}"
        + (" (auto-sized to the host)" if hicache["ratio_auto_sized"] else "")
    )
    lines = [f"host memory (HiCache, {sizing}, layout {hicache['mem_layout']}):"]
    for name in ("full_pool", "swa_pool", "mamba_pool"):
        pool = hicache[name]
        if pool:
            unit = "slots" if name == "mamba_pool" else "tokens"
            lines.append(
                f"  {name.replace('_', ' '):<11} {gib_text(pool['bytes'], width=8)}  {pool['tokens']} {unit} x "
                f"{pool['bytes_per_token']} B, pinned {pool['pinned_bytes'] / GIB:.2f} GiB"
            )
    lines.append(
        f"  pinned per rank {gib_text(hicache['pinned_bytes_per_rank'], width=8)}, per node "
        f"{hicache['pinned_bytes_per_node'] / GIB:.2f} GiB ({hicache['ranks_per_node']} ranks)"
    )
    if hicache["budget_bytes"] is not None:
        lines.append(
            f"  SGLang's host check allows {hicache['budget_bytes'] / GIB:.2f} GiB per rank"
        )
    return lines


def slack_consequence(data: dict[str, Any]) -> str:
    """What follows when the slack B x (1 - f) cannot hold what it must (SGLang sizes the pool
    first and only then captures graphs and runs a prefill), and the margin this launch has."""
    graphs = data["decode_graph_bytes"] + data["prefill_graph_bytes"]
    return (
        f"below {(data['req_to_token_bytes'] + graphs) / GIB:.2f} GiB (req_to_token + graphs) "
        "the graph capture runs out of memory (oom_cuda_graph_capture); below "
        f"{(data['req_to_token_bytes'] + graphs + data['activation_bytes']) / GIB:.2f} GiB "
        "(+ activations) the first chunked prefill does (oom_first_prefill); this launch's "
        f"slack is {data['slack_bytes'] / GIB:.2f} GiB"
    )


def sglang_plan(out: Any, data: dict[str, Any]) -> None:
    """An SGLang plan's JSON: the launch as written, the largest value of each knob that starts,
    the planned launch (both breakdowns drawn as vLLM's are), the verdict, the accuracy, the
    launch line and the remedies."""
    release = {k: data[k] for k in ("sglang_version", "rules_release", "version_note")}
    out.print(Styled("the launch as written:", "bold"))
    sglang_breakdown(out, data["launch"] | release)
    rows = [
        [flag, "none starts" if data[key] is None else str(data[key])]
        for flag, key in (
            ("--mem-fraction-static", "max_mem_fraction_static"),
            ("--max-running-requests", "max_running_requests"),
            ("--context-length", "max_context_length"),
            ("--chunked-prefill-size", "max_chunked_prefill_size"),
            ("--cuda-graph-max-bs", "max_cuda_graph_max_bs"),
        )
    ]
    out.print(
        table(
            out,
            ["flag", "largest that starts"],
            rows,
            right=["largest that starts"],
            title="\nlargest values that start (each with the others as given)",
        )
    )
    out.print(
        Styled(
            f"\nplanned (safety margin {data['safety_margin_bytes'] / GIB:.2f} GiB kept in the "
            "slack):",
            "bold",
        )
    )
    solved = bool(data["launch"]["mem_fraction_static_default"])
    sglang_breakdown(out, data["planned"] | release, solved=solved)
    out.print(Styled("\nverdict: ").append(data["verdict"], style=_verdict_style(data["fits"])))
    out.print(f"accuracy: {data['error_band']}", soft_wrap=unwrapped(out))
    out.print(data["launch_line"], soft_wrap=True)
    for remedy in data["remedies"]:
        state = "fits" if remedy["fits"] else "does not fit"
        out.print(
            f"remedy {remedy['kind']} ({state}): {remedy['change']}: {remedy['detail']}",
            soft_wrap=unwrapped(out),
        )


def _verdict_style(fits: bool) -> str:
    return "bold green" if fits else "bold red"


def plan(out: Any, data: dict[str, Any]) -> None:
    """A plan's JSON (with remedies already filtered to the user's target)."""
    breakdown(out, data["breakdown"])
    written = data["as_written"]
    out.print(
        Styled("\nas written: ").append(written["verdict"], style=_verdict_style(written["fits"]))
    )
    for change in data["changed"]:
        before = change["before"] or "unset"
        out.print(f"  changed {change['knob']}: {before} -> {change['value']} ({change['reason']})")
    out.print(Styled("verdict: ").append(data["verdict"], style=_verdict_style(data["fits"])))
    _kept_free(out, data)
    if data.get("workload"):
        workload(out, data["workload"], data["max_num_seqs"])
    _binding(out, data)
    model = _launch_line(out, data)
    _remedies(out, data, model)


def check(out: Any, data: dict[str, Any], *, how: bool = False) -> None:
    """`check`: the verdict on the launch as the user wrote it, then what the plan changes (the
    planned launch, its verdict and line), the remedies, then the planned launch's breakdown
    (its "how we know" column with `how`). Prose wraps at words at the console's width."""
    written = data["as_written"]
    out.print(
        Styled("your launch: ", "bold").append(
            written["verdict"], style=_verdict_style(written["fits"])
        )
    )
    if data["changed"]:
        out.print(Styled("what the plan changes:", "bold"))
        for change in data["changed"]:
            before = change["before"] or "unset"
            line = Styled(f"{change['knob']}: {before} -> {change['value']} ({change['reason']})")
            out.print(Indented(line, 2))
    else:
        out.print(Styled("what the plan changes: ", "bold").append("nothing"))
    out.print(
        Styled("planned: ", "bold").append(data["verdict"], style=_verdict_style(data["fits"]))
    )
    model = _launch_line(out, data)
    _kept_free(out, data)
    if data.get("workload"):
        workload(out, data["workload"], data["max_num_seqs"])
    _remedies(out, data, model)
    out.print(Styled("\nbreakdown of the planned launch", "bold"))
    breakdown(out, data["breakdown"], how=how)
    _binding(out, data)


def _kept_free(out: Any, data: dict[str, Any]) -> None:
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


def _binding(out: Any, data: dict[str, Any]) -> None:
    """Why each solved knob has its value."""
    out.print(
        table(
            out,
            ["knob", "value", "why"],
            [[knob, data[knob], why] for knob, why in data["binding"].items()],
        )
    )


def _launch_line(out: Any, data: dict[str, Any]) -> str:
    """The planned launch as one `vllm serve` line (never wrapped: it is copied); the model
    word as the line writes it."""
    model = shell_word(data.get("served_model") or data["breakdown"]["model"])
    env = "".join(
        f"{name}={shell_word(value)} " for name, value in data.get("vllm_env", {}).items()
    )
    out.print(f"{env}vllm serve {model} {data['vllm_args']}", soft_wrap=True)
    return model


def _remedies(out: Any, data: dict[str, Any], model: str) -> None:
    if not data["remedies"]:
        return
    out.print(
        table(
            out,
            ["remedy", "alone", "what it gives"],
            [
                [
                    r["change"],
                    Styled("fits", "green") if r["fits"] else Styled("not enough", "yellow"),
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


def workload(out: Any, w: dict[str, Any], max_num_seqs: int) -> None:
    """What the workload asks of the KV cache: requests held, preemption, the prefill trade."""
    out.print(Styled("workload: ").append(str(w["description"])), soft_wrap=unwrapped(out))
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
            rows.append([replay.id, "unsupported", "-", "-", Styled(replay.unsupported, "yellow")])
            continue
        for term in (*terms, "outcome"):
            predicted = replay.predicted.get(term)
            measured = replay.measured.get(term)
            if measured is None:
                continue
            if term == "outcome":
                same = predicted == measured
                problems += not same
                flag = Styled("ok", "green") if same else Styled("MISMATCH", "bold red")
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


def replays(out: Any, replays: Sequence[Any], terms: Sequence[str]) -> int:
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
