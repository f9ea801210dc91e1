"""`_core.Version`: the core's one reader of engine version strings, as Python sees it, and the
Python readers that now go through it."""

from __future__ import annotations

import pytest
from vramplan import _core, validate
from vramplan.launch import engine_arg_names, parse_command

Version = _core.Version


@pytest.mark.parametrize(
    ("text", "parts"),
    [
        ("0.10.1.1", (0, 10, 1)),  # a fourth number (vLLM 0.10.1.1) is ignored
        ("0.4.6.post5", (0, 4, 6)),  # SGLang's post releases
        ("v0.11.0", (0, 11, 0)),  # a git tag
        ("0.33.0", (0, 33, 0)),
        ("v0.9.1rc2", (0, 9, 1)),  # a release candidate
        ("0.19.2rc1.dev100+gf946659ff", (0, 19, 2)),  # a nightly build
        ("0.9", (0, 9, 0)),  # no patch: .0
    ],
)
def test_the_spellings_releases_use(text: str, parts: tuple[int, int, int]) -> None:
    version = Version.parse(text)
    assert (version.major, version.minor, version.patch) == parts
    assert str(version) == "{}.{}.{}".format(*parts)
    assert repr(version) == f"Version('{version}')"
    assert Version.read(text) == version == Version(*parts)


def test_releases_order_numerically_not_as_text() -> None:
    assert Version.parse("0.9.1") < Version.parse("0.10.2") < Version.parse("0.11.0")
    assert Version.parse("0.10.1") < Version.parse("0.10.2")
    assert Version.parse("0.33.0") < Version(1, 0)
    assert Version.parse("0.8.5.post1") == Version(0, 8, 5)
    assert Version(0, 8, 5) >= Version(0, 8, 5) > Version(0, 8, 4)
    assert Version(0, 8, 5) != Version(0, 8, 4)
    assert len({Version.parse("0.8.5"), Version.parse("v0.8.5.post1"), Version(0, 8, 5)}) == 1


@pytest.mark.parametrize("text", ["", "banana", "0", "0.", "1.x", "latest", "1234567.0"])
def test_text_that_is_no_version_is_an_error_naming_field_and_value(text: str) -> None:
    assert Version.read(text) is None
    with pytest.raises(_core.ConfigError) as err:
        Version.parse(text, "engine_version")
    assert err.value.field == "engine_version"
    assert err.value.value == f"'{text}'"


def test_free_text_gives_its_first_version() -> None:
    # The benchmark records state versions in prose (tests/data/public_records.jsonl).
    assert str(Version.find("0.8.x, not printed (V0 lines)")) == "0.8.0"
    assert str(Version.find("not printed ('worker.py:267' lines: a 0.8.3 build)")) == "0.8.3"
    assert Version.find("not printed (V0 lines, Dec 2024)") is None


def test_a_record_is_replayed_at_its_patch_release() -> None:
    # engines.yaml has a 0.10.2 row: the record's patch is kept, a post/dev suffix dropped.
    assert validate._version({"vllm_version": "0.10.2"}) == "0.10.2"
    assert validate._version({"vllm_version": "0.6.4.post2-dev (PR #10511)"}) == "0.6.4"
    assert validate._version({"vllm_version": "0.8.x, not printed"}) == "0.8.0"


def test_argument_names_follow_the_release_numerically() -> None:
    # engine_args.yaml: async_scheduling arrives with 0.10.0 and use_v2_block_manager leaves.
    # As text "0.9.2" sorts after "0.10.0"; as releases it comes before.
    assert "async_scheduling" not in engine_arg_names("0.9.2")
    assert "use_v2_block_manager" in engine_arg_names("0.9.2")
    assert "async_scheduling" in engine_arg_names("0.10.0")
    assert "use_v2_block_manager" not in engine_arg_names("0.10.2")
    with pytest.raises(_core.ConfigError, match="banana"):
        engine_arg_names("banana")


def test_a_docker_tag_names_the_release() -> None:
    launch = parse_command("docker run --gpus all vllm/vllm-openai:v0.11.0 --model m")
    assert launch.image_version == "0.11.0"
    assert parse_command("docker run vllm/vllm-openai:latest --model m").image_version is None
