"""Errors and short outputs that lead somewhere: suggestions a user can act on, --quiet that is
quiet, help written for users."""

from __future__ import annotations

import pytest
import vramplan
from vramplan import cli


@pytest.mark.parametrize(("term", "suggested"), [("kv", "kv_cache"), ("actvation", "activation")])
def test_explain_suggests_the_term_meant(term: str, suggested: str) -> None:
    with pytest.raises(vramplan.Error, match=rf"Did you mean: {suggested}"):
        vramplan.explain(term)


def test_quiet_plan_prints_the_verdict_and_the_launch_only(
    capsys: pytest.CaptureFixture[str],
) -> None:
    code = cli.main(["plan", "Qwen/Qwen3-8B", "--gpu", "L4", "--context", "8192", "--quiet"])
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert code == 0
    assert len(lines) == 2
    assert lines[0].startswith("verdict: fits")
    assert lines[1].startswith("vllm serve Qwen/Qwen3-8B --gpu-memory-utilization ")
    assert err == ""


def test_help_opens_with_what_the_tool_does(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        cli.main(["--help"])
    text = capsys.readouterr().out
    assert "GPU memory" in text.split("\n\n")[1]
    assert "bindings" not in text
