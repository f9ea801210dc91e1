"""Every malformed spec is a SpecError (a ValueError) naming file, field and value."""

from __future__ import annotations

from pathlib import Path

import pytest
import vramplan

BAD = sorted((Path(__file__).resolve().parents[1] / "data" / "bad_specs").glob("*.yaml"))


@pytest.mark.parametrize("path", BAD, ids=[p.stem for p in BAD])
def test_bad_spec(path: Path) -> None:
    expected = path.read_text().splitlines()[0].removeprefix("# expect: ")
    with pytest.raises(vramplan.SpecError) as info:
        vramplan.load_model(path)
    assert expected in str(info.value)
    assert info.value.file == str(path)
    assert isinstance(info.value, ValueError)


def test_unknown_model_lists_near_names() -> None:
    with pytest.raises(vramplan.ConfigError, match=r"(?i)llama-3\.1-8b"):
        vramplan.load_model("meta-llama/Llama-3.1-8X")
