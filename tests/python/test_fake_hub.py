"""Resolution through the Hub, against a fake Hub the test serves on 127.0.0.1 (HF_ENDPOINT).

The fake answers what huggingface_hub asks: HEAD/GET /{repo}/resolve/{revision}/{file} with
X-Repo-Commit and ETag, Range reads of safetensors headers, and the error codes the real Hub
sends (X-Error-Code RepoNotFound / EntryNotFound / GatedRepo)."""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import os
import re
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

pytest.importorskip("huggingface_hub")

import vramplan
from vramplan.resolve import resolve_model

COMMIT = "0123456789abcdef0123456789abcdef01234567"
GZIP_BOMB = gzip.compress(bytes(64 << 20), compresslevel=9)  # 64 MiB of zeros, ~64 KiB sent

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
    # Per file: a hostile answer (see Handler._hostile) instead of the file's bytes.
    hostile: dict[str, str] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)  # sent instead of the real ones
    redirect: bool = False  # every file answered by a 302 to /cdn/ (as LFS files are)


@dataclass
class FakeHub:
    repos: dict[str, Repo] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    url: str = ""
    sent_bytes: int = 0  # body bytes the hostile answers managed to send


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
            if parts[0] == "cdn":  # where a large file is redirected: bytes only, no Hub headers
                self._cdn(parts[1:])
                return
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
            headers.update(repo.headers)
            if repo.redirect:  # the Hub's answer for an LFS file: 302 to the CDN
                linked = {"X-Linked-Etag": headers.pop("ETag"), "X-Linked-Size": str(len(data))}
                location = {"Location": f"/cdn/{repo_id}/{filename}"}
                self._send(302, {**headers, **linked, **location})
                return
            if filename in repo.hostile:
                self._hostile(repo.hostile[filename], headers)
                return
            byte_range = self.headers.get("Range")
            if byte_range and self.command == "GET":
                first, last = byte_range.split("=")[1].split("-")
                chunk = data[int(first) : int(last) + 1]
                self._send(206, headers, chunk)
                return
            self._send(200, headers, data)

        def _cdn(self, parts: list[str]) -> None:
            repo = hub.repos.get("/".join(parts[:2]))
            data = repo.files.get("/".join(parts[2:])) if repo else None
            if data is None:
                self._send(404, {})
                return
            byte_range = self.headers.get("Range")
            if byte_range:
                first, last = byte_range.split("=")[1].split("-")
                self._send(206, {}, data[int(first) : int(last) + 1])
                return
            self._send(200, {}, data)

        def _stream(self, chunk: bytes, pause_s: float = 0.0) -> None:
            """Send `chunk` until the client goes away (or 2 GiB, a bound on the test)."""
            while hub.sent_bytes < 2 << 30:
                try:
                    self.wfile.write(chunk)
                except OSError:
                    return
                hub.sent_bytes += len(chunk)
                time.sleep(pause_s)

        def _hostile(self, mode: str, headers: dict[str, str]) -> None:
            if mode == "slow-headers":  # a slow-loris in the headers: no read ever times out
                self.wfile.write(b"HTTP/1.1 200 OK\r\nX-Pad: ")
                self._stream(b"a", pause_s=0.2)
                self.close_connection = True
                return
            if mode == "retry-after":
                self.send_response(429)
                self.send_header("Retry-After", str(10**9))
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            self.send_response(200)
            for key, value in headers.items():
                self.send_header(key, value)
            if mode == "huge":  # a 500 MB config.json, said up front
                self.send_header("Content-Length", str(500 << 20))
            elif mode == "gzip":  # 1 GiB of zeros in a few MB, sent as gzip
                self.send_header("Content-Encoding", "gzip")
                self.send_header("Content-Length", str(len(GZIP_BOMB)))
            elif mode == "trickle":  # a slow-loris: headers, then a byte at a time
                self.send_header("Content-Length", str(1 << 20))
            else:  # "endless": no length, bytes until the client stops reading
                self.send_header("Connection", "close")
            self.end_headers()
            if mode == "gzip":
                self._stream_once(GZIP_BOMB)
            elif mode == "trickle":
                self._stream(b"{", pause_s=0.2)
            else:
                self._stream(b" " * (1 << 16))
            self.close_connection = True

        def _stream_once(self, data: bytes) -> None:
            with contextlib.suppress(OSError):
                self.wfile.write(data)
                hub.sent_bytes += len(data)

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
    shard1 = safetensors_file({"a": ("BF16", [256, 64], 256 * 64 * 2)})
    shard2 = safetensors_file({"b": ("F32", [8], 32), "c": ("I8", [256, 128], 256 * 128)})
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
    assert resolved.checkpoint_bytes == 256 * 64 * 2 + 32 + 256 * 128


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
    # The hub answers after 30 s: only a request given up at 0.5 s raises (and says so).
    fake_hub.repos["acme/slow"] = Repo({"config.json": b"{}"}, delay_s=30.0)
    with pytest.raises(vramplan.Error, match=r"no answer .* within 0\.5 s"):
        resolve_model("acme/slow", timeout_s=0.5)


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


# --- a hostile Hub: every answer checked, bounded in bytes and time, nothing outside the cache --


def _bounded(work: Callable[[], object], seconds: float = 30.0) -> BaseException | None:
    """The error `work()` ends in, run on a thread the test gives up on after `seconds` (a
    hang fails the test instead of stalling the suite)."""
    outcome: dict[str, BaseException | None] = {}

    def run() -> None:
        try:
            work()
        except BaseException as err:  # noqa: BLE001 - handed to the test
            outcome["error"] = err
        else:
            outcome["error"] = None

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    assert not worker.is_alive(), f"still running after {seconds} s"
    return outcome["error"]


def _files(root: Path) -> dict[Path, int]:
    return {p: p.lstat().st_size for p in root.rglob("*") if not p.is_dir()}


def _config_repo(**extra: object) -> Repo:
    return Repo({"config.json": json.dumps(TINY_LLAMA).encode()}, **extra)  # type: ignore[arg-type]


@pytest.mark.parametrize("etag", ['"../../../escape"', "ABSOLUTE", '"abc"', 'W/"x y"'])
def test_an_etag_that_is_not_a_hash_is_refused_and_nothing_is_written(
    fake_hub: FakeHub, tmp_path: Path, etag: str
) -> None:
    if etag == "ABSOLUTE":
        etag = f'"{tmp_path / "escape"}"'
    fake_hub.repos["acme/etag"] = _config_repo(headers={"ETag": etag})
    with pytest.raises(vramplan.Error, match="ETag"):
        resolve_model("acme/etag", timeout_s=5)
    assert _files(tmp_path) == {}  # not in the cache, not beside it


def test_a_commit_that_is_not_40_hex_digits_is_refused(fake_hub: FakeHub, tmp_path: Path) -> None:
    fake_hub.repos["acme/commit"] = _config_repo(headers={"X-Repo-Commit": "../../../escape"})
    with pytest.raises(vramplan.Error, match="commit"):
        resolve_model("acme/commit", timeout_s=5)
    assert _files(tmp_path) == {}


def test_bytes_that_do_not_match_their_etag_are_refused(fake_hub: FakeHub, tmp_path: Path) -> None:
    other = '"' + hashlib.sha256(b"something else").hexdigest() + '"'
    fake_hub.repos["acme/swapped"] = _config_repo(headers={"ETag": other})
    with pytest.raises(vramplan.Error, match="do not match the ETag"):
        resolve_model("acme/swapped", timeout_s=5)
    assert _files(tmp_path) == {}


@pytest.mark.parametrize(
    ("mode", "filename", "named"),
    [
        ("huge", "config.json", r"over the \d+-byte limit \(refused before reading\)"),
        ("endless", "config.json", r"over the \d+-byte limit \(stopped reading\)"),
        ("gzip", "config.json", "Content-Encoding gzip"),
        ("trickle", "config.json", r"did not finish within 1 s"),
        ("slow-headers", "config.json", r"did not finish within 1 s"),
        ("retry-after", "config.json", r"HTTP 429; it asks to retry after '1000000000' s"),
        ("huge", "model.safetensors.index.json", r"refused before reading"),
        ("endless", "model.safetensors.index.json", r"stopped reading"),
        ("trickle", "hf_quant_config.json", r"did not finish within 1 s"),
    ],
)
def test_hostile_answers_end_in_a_named_error_bounded_in_time_and_bytes(
    fake_hub: FakeHub, tmp_path: Path, mode: str, filename: str, named: str
) -> None:
    repo = _config_repo(hostile={filename: mode})
    repo.files.setdefault(filename, b"{}")
    fake_hub.repos["acme/hostile"] = repo
    error = _bounded(lambda: resolve_model("acme/hostile", timeout_s=1))
    assert isinstance(error, vramplan.Error), error
    assert re.search(named, str(error)), error
    assert fake_hub.sent_bytes < 64 << 20  # the client stopped reading long before the end
    assert sum(_files(tmp_path).values()) < 1 << 20  # nothing large kept


def test_an_index_of_20000_shards_is_refused_with_nothing_left_running(
    fake_hub: FakeHub, tmp_path: Path
) -> None:
    shards = {f"t{i}": f"model-{i:05d}-of-20000.safetensors" for i in range(20000)}
    repo = _config_repo()
    repo.files["model.safetensors.index.json"] = json.dumps({"weight_map": shards}).encode()
    fake_hub.repos["acme/many"] = repo
    error = _bounded(lambda: resolve_model("acme/many", timeout_s=5))
    assert isinstance(error, vramplan.Error)
    assert "20000 shards" in str(error)
    asked = len(fake_hub.requests)
    assert not any("of-20000" in path for _, path in fake_hub.requests)
    assert not [t for t in threading.enumerate() if t.name.startswith("vramplan")]
    time.sleep(0.5)  # a worker left behind would still be asking
    assert len(fake_hub.requests) == asked


def test_headers_far_from_the_configs_size_are_refused(fake_hub: FakeHub) -> None:
    # A 32-byte tensor beside a config whose weights are ~200 KB: not this model's checkpoint.
    repo = _config_repo()
    repo.files["model.safetensors"] = safetensors_file({"a": ("BF16", [16], 32)})
    fake_hub.repos["acme/tiny-header"] = repo
    with pytest.raises(vramplan.Error, match="not this model's checkpoint"):
        resolve_model("acme/tiny-header", timeout_s=5)


def test_a_revision_with_a_control_character_is_refused(fake_hub: FakeHub, tmp_path: Path) -> None:
    fake_hub.repos["acme/tiny-llama"] = _config_repo()
    for revision in ("main\n", "main\r", "ma\x1bin"):
        with pytest.raises(vramplan.Error, match="not a branch, tag or commit"):
            resolve_model("acme/tiny-llama", revision=revision, timeout_s=5)
    assert fake_hub.requests == []
    assert _files(tmp_path) == {}


def test_an_unwritable_cache_is_named_not_an_unreachable_hub(
    fake_hub: FakeHub, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a-file").write_text("")
    monkeypatch.setenv("HF_HUB_CACHE", str(tmp_path / "a-file" / "hub"))
    fake_hub.repos["acme/tiny-llama"] = _config_repo()
    with pytest.raises(vramplan.Error, match="cannot write the Hugging Face cache"):
        resolve_model("acme/tiny-llama", timeout_s=5)


def test_the_cli_plans_from_the_fake_hub_and_names_a_hostile_one(fake_hub: FakeHub) -> None:
    fake_hub.repos["acme/tiny-llama"] = _config_repo()
    fake_hub.repos["acme/etag"] = _config_repo(headers={"ETag": '"../../../escape"'})
    env = {**os.environ}
    good = subprocess.run(
        [sys.executable, "-m", "vramplan", "plan", "acme/tiny-llama", "--gpu", "L4"],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip
    assert good.returncode == 0, good.stderr
    bad = subprocess.run(
        [sys.executable, "-m", "vramplan", "plan", "acme/etag", "--gpu", "L4"],
        capture_output=True, text=True, timeout=60, check=False, env=env,
    )  # fmt: skip
    assert bad.returncode == 2, bad.stderr
    assert "ETag" in bad.stderr


def test_files_redirected_to_a_cdn_keep_the_hubs_commit_and_etag(fake_hub: FakeHub) -> None:
    weights = safetensors_file(
        {
            "model.embed_tokens.weight": ("BF16", [256, 64], 256 * 64 * 2),
            "lm_head.weight": ("BF16", [256, 64], 256 * 64 * 2),
        }
    )
    fake_hub.repos["acme/lfs"] = Repo(
        {"config.json": json.dumps(TINY_LLAMA).encode(), "model.safetensors": weights},
        redirect=True,
    )
    resolved = resolve_model("acme/lfs", timeout_s=5)
    assert resolved.revision == COMMIT
    assert resolved.checkpoint_bytes == 2 * 256 * 64 * 2
    assert any(path.startswith("/cdn/") for _, path in fake_hub.requests)


def test_a_header_longer_than_the_limit_is_refused_before_reading(fake_hub: FakeHub) -> None:
    repo = _config_repo()
    repo.files["model.safetensors"] = struct.pack("<Q", 1 << 30) + b"{" * 64
    fake_hub.repos["acme/huge-header"] = repo
    with pytest.raises(vramplan.Error, match=r"a header of 1073741824 bytes"):
        resolve_model("acme/huge-header", timeout_s=5)
