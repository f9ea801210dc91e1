"""The few Hub requests a plan needs (config.json, the quantization side files, the
safetensors index and shard headers), made here rather than through huggingface_hub's
downloader so that every answer is checked before it is used or stored:

- size: a Content-Length over the file's limit is refused before the body is read, and a body
  (chunked, or longer than it said) is read only up to the limit; no encoding is accepted but
  identity (a gzip bomb is refused, not inflated);
- time: each request must finish (connect to last byte, a trickling answer included) within
  `timeout_s`, and the whole resolution within a total budget; `Retry-After` is reported, never
  waited on; requests run one after another in the caller's thread, so nothing is left running
  after an error;
- shape: the commit must be 40 hex digits and the ETag a git or sha256 hash that the bytes
  match; files land in the cache under names built from those, never from the server's text;
- the cache layout is huggingface_hub's (blobs/, snapshots/<commit>/, refs/<revision>), so the
  next resolution and other tools read it offline.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.client
import json
import os
import re
import socket
import struct
import tempfile
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import Message
from pathlib import Path
from typing import Any
from urllib.parse import quote, urljoin, urlsplit

from . import _core

# config.json and the side files: as large as a local one may be.
MAX_JSON_BYTES = 16 << 20
# A safetensors index: a weight map of a few hundred thousand tensors.
MAX_INDEX_BYTES = 32 << 20
# One shard's header: far above a real one (a shard of a thousand tensors has ~150 KB) and
# small enough to parse in bounded memory (the format itself allows 100 MB).
MAX_HEADER_BYTES = 16 << 20
# Headers of every shard together, so a hostile index cannot hold memory or time.
MAX_ALL_HEADERS_BYTES = 256 << 20
MAX_SHARDS = 4096
# The first read of a shard: the length prefix and, for most shards, the whole header.
_HEADER_PREFETCH = 256 << 10
_MAX_REDIRECTS = 5
_CHUNK = 64 << 10
_COMMIT = re.compile(r"[0-9a-f]{40}")
_ETAG = re.compile(r'(?:W/)?"?([0-9a-f]{40}|[0-9a-f]{64})"?')
_SHARD = re.compile(r"(?!.*(^|/)\.{1,2}(/|$))[A-Za-z0-9._/-]{1,255}\.safetensors")


class HubError(_core.Error):
    """The Hub's answer could not be used; the message names the repo and the cause."""


class Missing(HubError):
    """The Hub says the file (X-Error-Code EntryNotFound) is not in the repo."""


class RepoNotFound(HubError):
    """HTTP 404 for the repo itself."""


@dataclass(frozen=True)
class _Answer:
    status: int
    headers: Message
    body: bytes


class _Sockets:
    """The sockets of the request in flight, so that the request's watchdog can end an answer
    that trickles in (headers a byte at a time, which no per-read timeout catches) at its
    deadline."""

    def __init__(self) -> None:
        self.open: list[socket.socket] = []
        self.expired = False
        self.answered = False  # the status line and headers arrived

    def expire(self) -> None:
        self.expired = True
        for sock in self.open:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _tracked(base: type[http.client.HTTPConnection], sockets: _Sockets) -> Any:
    class Tracked(base):  # type: ignore[valid-type,misc]  # a class chosen at run time
        def connect(self) -> None:
            super().connect()
            sockets.open.append(self.sock)

    return Tracked


class _HTTPHandler(urllib.request.HTTPHandler):
    def __init__(self, sockets: _Sockets) -> None:
        super().__init__()
        self._sockets = sockets

    def http_open(self, req: urllib.request.Request) -> Any:
        return self.do_open(_tracked(http.client.HTTPConnection, self._sockets), req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def __init__(self, sockets: _Sockets) -> None:
        super().__init__()
        self._sockets = sockets

    def https_open(self, req: urllib.request.Request) -> Any:
        context = getattr(self, "_context", None)
        connection = _tracked(http.client.HTTPSConnection, self._sockets)
        return self.do_open(connection, req, context=context)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Redirects are followed by HubClient itself: the first answer's commit and ETag are the
    Hub's, and the token is not sent to another host."""

    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass
class HubClient:
    endpoint: str
    repo_id: str
    token: str | None
    timeout_s: float
    total_s: float

    def __post_init__(self) -> None:
        self._deadline = time.monotonic() + self.total_s
        self._sockets = _Sockets()
        self._opener = urllib.request.build_opener(
            _NoRedirect, _HTTPHandler(self._sockets), _HTTPSHandler(self._sockets)
        )
        self.header_bytes_read = 0

    # --- requests ---------------------------------------------------------------------------

    def _fail(self, problem: str, kind: type[HubError] = HubError) -> HubError:
        return kind(f"model {self.repo_id} on {self.endpoint}: {problem}")

    def _request_deadline(self) -> float:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise self._fail(
                f"the Hub's answers took longer than {self.total_s:g} s in all; plan offline "
                "from a local path or the cache (HF_HUB_OFFLINE=1), or raise the timeout"
            )
        return time.monotonic() + min(self.timeout_s, left)

    def _open(self, url: str, headers: dict[str, str], max_bytes: int) -> _Answer:
        """One request, bounded: its status, headers and at most `max_bytes` of body (a
        longer body is refused). 3xx answers are returned, not followed. A watchdog ends the
        request at its deadline, whatever part of the answer is trickling in."""
        deadline = self._request_deadline()
        request = urllib.request.Request(url, headers={"Accept-Encoding": "identity", **headers})
        if self.token and urlsplit(url).netloc == urlsplit(self.endpoint).netloc:
            request.add_unredirected_header("Authorization", f"Bearer {self.token}")
        self._sockets.open.clear()
        self._sockets.expired = False
        self._sockets.answered = False
        watchdog = threading.Timer(max(deadline - time.monotonic(), 0.0), self._sockets.expire)
        watchdog.daemon = True
        watchdog.start()
        try:
            return self._exchange(request, url, deadline, max_bytes)
        except (OSError, ValueError, http.client.HTTPException) as err:
            # Whichever of the socket's timeout and the watchdog ends the request first, a
            # request that got no headers had no answer; one whose body trickled was late.
            if self._sockets.expired and self._sockets.answered:
                raise self._late(url) from None
            if self._sockets.expired:
                raise self._unreachable(TimeoutError("timed out")) from None
            raise self._unreachable(err) from None
        finally:
            watchdog.cancel()
            watchdog.join()
            self._sockets.open.clear()

    def _late(self, url: str) -> HubError:
        return self._fail(f"{url}: the answer did not finish within {self.timeout_s:g} s")

    def _exchange(
        self, request: urllib.request.Request, url: str, deadline: float, max_bytes: int
    ) -> _Answer:
        try:
            response = self._opener.open(request, timeout=max(deadline - time.monotonic(), 0.01))
        except urllib.error.HTTPError as err:
            response = err
        self._sockets.answered = True
        with contextlib.closing(response):
            status = int(response.status or 0)
            message = response.headers
            if status >= 400 or 300 <= status < 400:
                return _Answer(status, message, b"")
            encoding = (message.get("Content-Encoding") or "identity").strip().lower()
            if encoding != "identity":
                raise self._fail(
                    f"{url}: answered with Content-Encoding {encoding}, which was not asked for"
                )
            length = message.get("Content-Length")
            if length is not None and length.strip().isdigit() and int(length) > max_bytes:
                raise self._fail(
                    f"{url}: {int(length)} bytes, over the {max_bytes}-byte limit (refused "
                    "before reading)"
                )
            return _Answer(status, message, self._read(response, url, deadline, max_bytes))

    def _read(self, response: Any, url: str, deadline: float, max_bytes: int) -> bytes:
        """The body, at most `max_bytes`; errors (a timeout, the watchdog's shutdown) are
        named by _open."""
        chunks: list[bytes] = []
        size = 0
        while True:
            if time.monotonic() > deadline:
                raise self._late(url)
            chunk = response.read1(min(_CHUNK, max_bytes + 1 - size))
            if not chunk and self._sockets.expired:
                raise self._late(url)
            if not chunk:
                return self._whole(b"".join(chunks), response, url)
            size += len(chunk)
            if size > max_bytes:
                raise self._fail(f"{url}: over the {max_bytes}-byte limit (stopped reading)")
            chunks.append(chunk)

    def _whole(self, body: bytes, response: Any, url: str) -> bytes:
        """The body, refused where it ended before its Content-Length."""
        length = (response.headers.get("Content-Length") or "").strip()
        if length.isdigit() and len(body) < int(length):
            raise self._fail(f"{url}: the answer ended after {len(body)} of {length} bytes")
        return body

    def _unreachable(self, err: BaseException) -> HubError:
        reason = getattr(err, "reason", None) or err
        if "timed out" in str(reason):
            return self._fail(
                f"no answer from the Hub within {self.timeout_s:g} s per request; check the "
                "network or HF_ENDPOINT, or plan offline from a local path or the cache "
                "(HF_HUB_OFFLINE=1)"
            )
        return self._fail(
            f"the Hub could not be reached ({reason}); not in the database or the local "
            "Hugging Face cache either"
        )

    def _get(self, revision: str, filename: str, max_bytes: int, **headers: str) -> _Answer:
        """GET resolve/<revision>/<filename>, redirects followed; the first answer's headers
        (the Hub's commit and ETag) with the last answer's body."""
        url = (
            f"{self.endpoint}/{quote(self.repo_id)}/resolve/{quote(revision, safe='')}/"
            f"{quote(filename)}"
        )
        first: Message | None = None
        for _ in range(_MAX_REDIRECTS + 1):
            answer = self._open(url, headers, max_bytes)
            first = first or answer.headers
            if not 300 <= answer.status < 400:
                self._check_status(answer, filename)
                return _Answer(answer.status, first, answer.body)
            location = answer.headers.get("Location")
            if not location or urlsplit(urljoin(url, location)).scheme not in ("http", "https"):
                raise self._fail(f"{filename}: HTTP {answer.status} without a usable Location")
            url = urljoin(url, location)
        raise self._fail(f"{filename}: more than {_MAX_REDIRECTS} redirects")

    def _check_status(self, answer: _Answer, filename: str) -> None:
        status = answer.status
        if status < 400:
            return
        code = answer.headers.get("X-Error-Code", "")
        if status in (401, 403) or code == "GatedRepo":
            raise self._fail(
                f"access denied (HTTP {status}): the repo is gated or private. Accept its "
                "license on the Hub, then set HF_TOKEN (or run `hf auth login`) with a token "
                "that can read it."
            )
        if code == "EntryNotFound":
            raise self._fail(f"the repo has no {filename}", Missing)
        if code == "RevisionNotFound":
            raise self._fail("revision not found.")
        if status == 404:
            raise self._fail("HTTP 404 (no such repo)", RepoNotFound)
        retry = answer.headers.get("Retry-After")
        wait = f"; it asks to retry after {retry[:40]!r} s" if retry else ""
        raise self._fail(f"{filename}: the Hub answered HTTP {status}{wait}")

    # --- files --------------------------------------------------------------------------------

    def file(self, revision: str, filename: str, max_bytes: int) -> tuple[bytes, str, str]:
        """(bytes, commit, etag) of a whole file, the ETag checked against the bytes."""
        answer = self._get(revision, filename, max_bytes)
        commit = (answer.headers.get("X-Repo-Commit") or "").strip()
        if not _COMMIT.fullmatch(commit):
            raise self._fail(f"{filename}: the commit {commit[:80]!r} is not 40 hex digits")
        raw_etag = answer.headers.get("X-Linked-Etag") or answer.headers.get("ETag") or ""
        match = _ETAG.fullmatch(raw_etag.strip())
        if match is None:
            raise self._fail(f"{filename}: the ETag {raw_etag[:80]!r} is not a git or sha256 hash")
        etag = match.group(1)
        if etag not in (_git_blob_id(answer.body), hashlib.sha256(answer.body).hexdigest()):
            raise self._fail(f"{filename}: the bytes do not match the ETag {etag}")
        return answer.body, commit, etag

    def safetensors_bytes(self, commit: str, declared: int) -> int:
        """Exact stored bytes of every tensor, from the shard headers by range requests; 0 for
        a repo without safetensors. `declared` (the config's own size, 0 for none) bounds
        what the headers may sum to."""
        try:
            index, _, _ = self.file(commit, "model.safetensors.index.json", MAX_INDEX_BYTES)
        except Missing:
            shards = ["model.safetensors"]
        else:
            shards = self._shards(index)
        total = 0
        for shard in shards:
            try:
                total += self._header_bytes(commit, shard)
            except Missing:
                if shard == "model.safetensors" and len(shards) == 1:
                    return 0
                raise
        if declared and not declared / 4 <= total <= declared * 4:
            raise self._fail(
                f"the safetensors headers sum to {total} bytes, against the {declared} bytes "
                "config.json gives the weights: not this model's checkpoint"
            )
        return total

    def _shards(self, raw: bytes) -> list[str]:
        try:
            data = json.loads(raw)
            names = sorted(set(data["weight_map"].values()))
        except (ValueError, KeyError, TypeError, AttributeError):
            raise self._fail("model.safetensors.index.json has no weight_map") from None
        if len(names) > MAX_SHARDS:
            raise self._fail(
                f"model.safetensors.index.json names {len(names)} shards (at most {MAX_SHARDS})"
            )
        for name in names:
            if not isinstance(name, str) or not _SHARD.fullmatch(name):
                raise self._fail(f"the index names a shard {str(name)[:80]!r}")
        return names

    def _header_bytes(self, commit: str, shard: str) -> int:
        head = self._range(commit, shard, 0, _HEADER_PREFETCH)
        if len(head) < 8:
            raise self._fail(f"{shard}: a safetensors header is truncated or malformed")
        (length,) = struct.unpack("<Q", head[:8])
        if length > MAX_HEADER_BYTES:
            raise self._fail(f"{shard}: a header of {length} bytes (at most {MAX_HEADER_BYTES})")
        self.header_bytes_read += length
        if self.header_bytes_read > MAX_ALL_HEADERS_BYTES:
            raise self._fail(f"the shard headers exceed {MAX_ALL_HEADERS_BYTES} bytes in all")
        header = head[8 : 8 + length]
        if len(header) < length:
            header += self._range(commit, shard, 8 + len(header), length - len(header))
        if len(header) != length:
            raise self._fail(f"{shard}: a safetensors header is truncated or malformed")
        try:
            tensors = json.loads(header)
        except (ValueError, RecursionError):
            raise self._fail(f"{shard}: a safetensors header is truncated or malformed") from None
        if not isinstance(tensors, dict):
            raise self._fail(f"{shard}: a safetensors header is truncated or malformed")
        total = 0
        for name, tensor in tensors.items():
            if name == "__metadata__":
                continue
            offsets = tensor.get("data_offsets") if isinstance(tensor, dict) else None
            if (
                not isinstance(offsets, list)
                or len(offsets) != 2
                or not all(type(o) is int for o in offsets)
                or not 0 <= offsets[0] <= offsets[1]
            ):
                raise self._fail(f"{shard}: tensor {str(name)[:80]} has bad offsets")
            total += offsets[1] - offsets[0]
        return total

    def _range(self, commit: str, shard: str, first: int, size: int) -> bytes:
        answer = self._get(commit, shard, size, Range=f"bytes={first}-{first + size - 1}")
        if answer.status == 200 and first > 0:
            raise self._fail(f"{shard}: the server ignored a range request")
        return answer.body[:size]


def _git_blob_id(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data, usedforsecurity=False).hexdigest()


def store(cache: Path, repo_id: str, revision: str, commit: str, files: dict[str, Any]) -> Path:
    """Files (name -> (bytes, etag)) into huggingface_hub's cache layout; the snapshot folder.
    Every name written is built from checked parts (repo id, 40-hex commit, hash ETag, fixed
    file names), and each is checked to stay inside the cache."""
    entry = cache / ("models--" + repo_id.replace("/", "--"))
    snapshot = entry / "snapshots" / commit
    try:
        (entry / "blobs").mkdir(parents=True, exist_ok=True)
        snapshot.mkdir(parents=True, exist_ok=True)
        root = cache.resolve()
        for name, (data, etag) in files.items():
            blob = entry / "blobs" / etag
            link = snapshot / name
            for path in (blob, link):
                if not path.parent.resolve().is_relative_to(root):
                    msg = f"{path}: outside the Hugging Face cache ({cache})"
                    raise _core.ConfigError(msg)
            _write_new(blob, data)
            with contextlib.suppress(FileNotFoundError):
                link.unlink()
            link.symlink_to(Path("..", "..", "blobs", etag))
        if revision != commit:
            ref = entry / "refs" / revision
            ref.parent.mkdir(parents=True, exist_ok=True)
            if not ref.parent.resolve().is_relative_to(entry.resolve()):
                msg = f"{ref}: outside the Hugging Face cache ({cache})"
                raise _core.ConfigError(msg)
            _write_new(ref, commit.encode())
    except OSError as err:
        msg = (
            f"cannot write the Hugging Face cache {cache} ({err.strerror or err}"
            f"{': ' + str(err.filename) if err.filename else ''}); set HF_HUB_CACHE to a "
            "writable folder"
        )
        raise _core.ConfigError(msg) from err
    return snapshot


def _write_new(path: Path, data: bytes) -> None:
    """`data` at `path`, by a temporary file renamed over it (a link there is replaced, not
    followed)."""
    fd, name = tempfile.mkstemp(prefix=".vramplan-", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        Path(name).chmod(0o644)
        Path(name).replace(path)
    finally:
        with contextlib.suppress(OSError):
            Path(name).unlink()
