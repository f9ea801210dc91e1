"""Resolution through the Hub, against a fake Hub the test serves on 127.0.0.1 (HF_ENDPOINT).

The fake answers what huggingface_hub asks: HEAD/GET /{repo}/resolve/{revision}/{file} with
X-Repo-Commit and ETag, Range reads of safetensors headers, and the error codes the real Hub
sends (X-Error-Code RepoNotFound / EntryNotFound / GatedRepo)."""

from __future__ import annotations

import hashlib
import json
import struct
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("huggingface_hub")

import vramplan
from vramplan.resolve import resolve_model

COMMIT = "0123456789abcdef0123456789abcdef01234567"

TINY_LLAMA = {
    "architectures": ["LlamaForCausalLM"],
    "model_type": "llama",
    "hidden_size": 64,
    "intermediate_size": 128,
    "num_hidden_layers": 2,
    "num_attention_heads": 4,
    "num_key_value_heads": 2,
    "vocab_size": 256,
    "max_position_embeddings": 1024,
    "torch_dtype": "bfloat16",
}


def safetensors_file(tensors: dict[str, tuple[str, list[int], int]]) -> bytes:
    """A safetensors file: 8-byte header length, JSON header, then the tensor bytes."""
    header: dict[str, object] = {"__metadata__": {"format": "pt"}}
    offset = 0
    for name, (dtype, shape, nbytes) in tensors.items():
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + nbytes]}
        offset += nbytes
    raw = json.dumps(header).encode()
    raw += b" " * (-len(raw) % 8)
    return struct.pack("<Q", len(raw)) + raw + bytes(offset)


@dataclass
class Repo:
    files: dict[str, bytes]
    status: int | None = None  # answer every request with this status (401 / 403)
    delay_s: float = 0.0  # sleep before answering (timeouts)


@dataclass
class FakeHub:
    repos: dict[str, Repo] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    url: str = ""


def _handler(hub: FakeHub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, headers: dict[str, str], body: bytes = b"") -> None:
            self.send_response(status)
            for key, value in headers.items():
                self.send_header(key, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            if self.command != "HEAD":
                self.wfile.write(body)

        def _answer(self) -> None:
            hub.requests.append((self.command, self.path))
            parts = self.path.split("?")[0].strip("/").split("/")
            if len(parts) < 5 or parts[2] != "resolve":
                self._send(404, {"X-Error-Code": "RepoNotFound"})
                return
            repo_id, filename = f"{parts[0]}/{parts[1]}", "/".join(parts[4:])
            repo = hub.repos.get(repo_id)
            if repo is None:
                self._send(404, {"X-Error-Code": "RepoNotFound"})
                return
            time.sleep(repo.delay_s)
            if repo.status is not None:
                code = {"X-Error-Code": "GatedRepo"} if repo.status == 403 else {}
                self._send(repo.status, code)
                return
            commit = {"X-Repo-Commit": COMMIT}
            data = repo.files.get(filename)
            if data is None:
                self._send(404, {**commit, "X-Error-Code": "EntryNotFound"})
                return
            headers = {**commit, "ETag": '"' + hashlib.sha256(data).hexdigest() + '"'}
            byte_range = self.headers.get("Range")
            if byte_range and self.command == "GET":
                first, last = byte_range.split("=")[1].split("-")
                chunk = data[int(first) : int(last) + 1]
                self._send(206, headers, chunk)
                return
            self._send(200, headers, data)

        do_GET = _answer
        do_HEAD = _answer

    return Handler


@pytest.fixture
def fake_hub(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeHub]:
    hub = FakeHub()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(hub))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    hub.url = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("HF_ENDPOINT", hub.url)
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setenv("VRAMPLAN_CACHE", str(tmp_path / "vramplan"))
    monkeypatch.delenv("HF_HUB_OFFLINE", raising=False)
    monkeypatch.delenv("HF_TOKEN", raising=False)
    yield hub
    server.shutdown()
    server.server_close()


def test_hub_gives_config_and_exact_header_bytes_then_the_cache_answers(fake_hub: FakeHub) -> None:
    weights = safetensors_file(
        {
            "model.embed_tokens.weight": ("BF16", [256, 64], 256 * 64 * 2),
            "lm_head.weight": ("BF16", [256, 64], 256 * 64 * 2),
        }
    )
    fake_hub.repos["acme/tiny-llama"] = Repo(
        {"config.json": json.dumps(TINY_LLAMA).encode(), "model.safetensors": weights}
    )
    first = resolve_model("acme/tiny-llama", timeout_s=5)
    assert first.source == "hub"
    assert first.revision == COMMIT
    assert first.spec.id == "acme/tiny-llama"
    # Two bf16 [256, 64] tensors: the header's bytes, read by range requests.
    assert first.checkpoint_bytes == 2 * 256 * 64 * 2
    assert any(
        method == "GET" and "model.safetensors" in path for method, path in fake_hub.requests
    )

    fake_hub.requests.clear()
    second = resolve_model("acme/tiny-llama", timeout_s=5)
    assert fake_hub.requests == []  # the second resolution makes no request
    assert second.source == "cache"
    assert second.checkpoint_bytes == first.checkpoint_bytes
    assert second.spec.checkpoint_bytes() == first.spec.checkpoint_bytes()


def test_sharded_checkpoint_sums_every_shard(fake_hub: FakeHub) -> None:
    shard1 = safetensors_file({"a": ("BF16", [16, 64], 16 * 64 * 2)})
    shard2 = safetensors_file({"b": ("F32", [8], 32), "c": ("I8", [10, 10], 100)})
    index = {
        "metadata": {"total_size": 0},
        "weight_map": {
            "a": "model-1.safetensors",
            "b": "model-2.safetensors",
            "c": "model-2.safetensors",
        },
    }
    fake_hub.repos["acme/sharded"] = Repo(
        {
            "config.json": json.dumps(TINY_LLAMA).encode(),
            "model.safetensors.index.json": json.dumps(index).encode(),
            "model-1.safetensors": shard1,
            "model-2.safetensors": shard2,
        }
    )
    resolved = resolve_model("acme/sharded", timeout_s=5)
    assert resolved.checkpoint_bytes == 16 * 64 * 2 + 32 + 100


def test_quantization_side_file_is_fetched(fake_hub: FakeHub) -> None:
    # ModelOpt keeps its scheme in hf_quant_config.json beside config.json.
    quant = {"quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head"]}}
    fake_hub.repos["acme/tiny-fp8"] = Repo(
        {
            "config.json": json.dumps(TINY_LLAMA).encode(),
            "hf_quant_config.json": json.dumps(quant).encode(),
        }
    )
    resolved = resolve_model("acme/tiny-fp8", timeout_s=5)
    assert resolved.spec.to_dict()["quantization"] == "fp8"


@pytest.mark.parametrize("status", [401, 403])
def test_gated_repo_names_hf_token(fake_hub: FakeHub, status: int) -> None:
    fake_hub.repos["acme/gated"] = Repo({}, status=status)
    with pytest.raises(vramplan.Error, match="HF_TOKEN"):
        resolve_model("acme/gated", timeout_s=5)


def test_unknown_repo_suggests_database_ids(fake_hub: FakeHub) -> None:
    with pytest.raises(vramplan.Error, match=r"Did you mean: .*meta-llama/Llama-3.1-8B-Instruct"):
        resolve_model("meta-llama/Llama-3.1-8B-Instruc", timeout_s=5)


def test_repo_without_config_is_named(fake_hub: FakeHub) -> None:
    fake_hub.repos["acme/gguf-only"] = Repo({"model.gguf": b"GGUF"})
    with pytest.raises(vramplan.Error, match=r"no config\.json"):
        resolve_model("acme/gguf-only", timeout_s=5)


def test_timeout_is_named_and_bounded(fake_hub: FakeHub) -> None:
    fake_hub.repos["acme/slow"] = Repo({"config.json": b"{}"}, delay_s=30.0)
    start = time.monotonic()
    with pytest.raises(vramplan.Error, match=r"no answer .* within 0\.5 s"):
        resolve_model("acme/slow", timeout_s=0.5)
    assert time.monotonic() - start < 10


def test_truncated_safetensors_header_is_named(fake_hub: FakeHub) -> None:
    # The length prefix promises a 1000-byte header; the file ends after 40 bytes.
    truncated = struct.pack("<Q", 1000) + b'{"a": {"dtype": "BF16", "shape": [2]'
    fake_hub.repos["acme/truncated"] = Repo(
        {"config.json": json.dumps(TINY_LLAMA).encode(), "model.safetensors": truncated}
    )
    with pytest.raises(vramplan.Error, match="truncated or malformed"):
        resolve_model("acme/truncated", timeout_s=5)


def test_offline_never_asks_the_hub(fake_hub: FakeHub, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_hub.repos["acme/tiny-llama"] = Repo({"config.json": json.dumps(TINY_LLAMA).encode()})
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    with pytest.raises(vramplan.Error, match="offline"):
        resolve_model("acme/tiny-llama")
    with pytest.raises(vramplan.Error, match="offline"):
        resolve_model("acme/tiny-llama", offline=True)
    assert fake_hub.requests == []
