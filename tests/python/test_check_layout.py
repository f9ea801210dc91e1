"""What `check` shows, in order: the verdict on the launch as the user wrote it, then what the
plan changes (the planned launch and its line), then the breakdown; piped output wraps at
words without padding; the "how we know" column only with --verbose."""

from __future__ import annotations

import json
import os
import subprocess
import sys

LAUNCH = ["vllm", "serve", "Qwen/Qwen3-8B", "--max-model-len", "32768", "--cpu-offload-gb", "4"]


def check(*options: str, columns: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "FORCE_COLOR")}
    if columns:
        env["COLUMNS"] = columns
    return subprocess.run(
        [sys.executable, "-m", "vramplan", "check", "--gpu", "L4", *options, "--", *LAUNCH],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
        env=env,
    )


def test_check_opens_with_the_verdict_on_the_launch_as_written() -> None:
    data = json.loads(check("--json").stdout)
    done = check()
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("your launch: fits: ")
    text = " ".join(done.stdout.split())  # wrapped lines joined: the words in order
    order = [
        f"your launch: {data['as_written']['verdict']}",
        "what the plan changes:",
        f"planned: {data['verdict']}",
        f"vllm serve Qwen/Qwen3-8B {data['vllm_args']}",
        "breakdown of the planned launch",
        "weights",
        "kv_cache",
    ]
    positions = [text.find(part) for part in order]
    assert -1 not in positions, dict(zip(order, positions))
    assert positions == sorted(positions)
    # The one change the plan makes to this launch (it fits as written), with its reason.
    [change] = data["changed"]
    assert change["knob"] == "gpu_memory_utilization"
    assert f"gpu_memory_utilization: {change['before']} -> {change['value']}" in text


def test_piped_check_wraps_at_words_without_padding() -> None:
    for columns, width in ((None, 100), ("72", 72)):
        done = check(columns=columns)
        data = json.loads(check("--json").stdout)
        for line in done.stdout.splitlines():
            assert line == line.rstrip(), repr(line)
            # The launch lines are copied whole, never wrapped; all else fits the width.
            if "vllm serve " not in line:
                assert len(line) <= width, (columns, line)
        assert f"vllm serve Qwen/Qwen3-8B {data['vllm_args']}\n" in done.stdout
        # Wrapped at words: the reason reads whole once the line breaks are spaces.
        assert data["changed"][0]["reason"] in " ".join(done.stdout.split())


def test_how_we_know_only_with_verbose() -> None:
    plain = check().stdout
    verbose = check("--verbose").stdout
    assert "how we know" not in plain
    assert "exact:" not in plain
    assert "how we know" in verbose
    assert "exact: the spec's tensors" in " ".join(verbose.split())
