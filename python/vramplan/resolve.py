"""One resolution chain for every place that takes a MODEL.

database id or alias -> a path (spec YAML, config.json, checkpoint folder, .gguf) -> the local
Hugging Face cache (HF_HUB_CACHE, else HF_HOME/hub, else ~/.cache/huggingface/hub; the snapshot
refs/<revision> names) -> the Hub itself (_hub: every answer bounded in size and time and checked), unless
HF_HUB_OFFLINE=1 or offline=True. Online, config.json and the quantization side files land in
the Hub cache (so the next resolution is offline), and the safetensors headers are read by HTTP
range requests: the weights are exact bytes without downloading a shard. Python only finds files; the C++ core reads
them.
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from typing import NamedTuple

from . import _core, _io
from ._database import spec_database
from ._identity import local_path

# Where the answer came from, as the breakdown names it.
SOURCES = ("database", "path", "cache", "hub")

# Side files a checkpoint may carry beside config.json: ModelOpt's, and the AutoGPTQ /
# AutoRound ones older checkpoints use instead of config.json's quantization_config.
QUANT_SIDE_FILES = ("hf_quant_config.json", "quantize_config.json", "quant_config.json")

_REPO_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*/[A-Za-z0-9][A-Za-z0-9_.-]*$")
_COMMIT = re.compile(r"^[0-9a-f]{40}$")
_SNAPSHOT_NAME = re.compile(r"^[A-Za-z0-9._-]{1,64}$")
# A branch, tag or commit: Hub names (refs/pr/1 included), never an absolute path or '..'.
_REVISION = re.compile(r"^(?!.*(^|/)\.{1,2}(/|$))[A-Za-z0-9._-][A-Za-z0-9._/-]{0,254}$")
_MAX_REF_BYTES = 4096  # a ref file holds one commit hash
_MAX_NAME_CHARS = 4096
# config.json and the side files fetched from the Hub: as large as a local one may be.
_MAX_CONFIG_BYTES = 16 << 20
_TRUE = {"1", "on", "yes", "true"}


class ResolvedModel(NamedTuple):  # not a dataclass: the CLI starts without `dataclasses`
    """A ModelSpec and where it came from."""

    spec: _core.ModelSpec
    source: str  # one of SOURCES
    location: str  # database file, path, cache snapshot folder or Hub URL
    revision: str | None = None  # commit the cache or Hub answered with
    checkpoint_bytes: int = 0  # exact stored tensor bytes from headers (0: not read)


def hub_cache_dir() -> Path:
    """The Hugging Face Hub cache, as huggingface_hub finds it."""
    if os.environ.get("HF_HUB_CACHE"):
        return Path(os.environ["HF_HUB_CACHE"]).expanduser()
    if os.environ.get("HF_HOME"):
        return Path(os.environ["HF_HOME"]).expanduser() / "hub"
    return Path("~/.cache/huggingface/hub").expanduser()


def _vramplan_cache_dir() -> Path:
    """Where header byte counts read over HTTP are kept (VRAMPLAN_CACHE, else XDG)."""
    if os.environ.get("VRAMPLAN_CACHE"):
        return Path(os.environ["VRAMPLAN_CACHE"]).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or "~/.cache"
    return Path(base).expanduser() / "vramplan"


def _offline(offline: bool | None) -> bool:
    if offline is not None:
        return offline
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in _TRUE


def _error(message: str) -> _core.Error:
    return _core.Error(message)


def _unknown(name: str, detail: str) -> _core.ConfigError:
    """The database's unknown-model error (near names included), extended with what else was
    tried and a did-you-mean over ids and aliases."""
    try:
        spec_database().model(name)
        database = f"model: {name}"
    except _core.ConfigError as err:
        database = str(err)
    return _core.ConfigError(f"{database}; {detail}.{_did_you_mean(name)}")


# Words of a model id that name a variant of the same weights, not another model: left out
# when ids are compared, so that "-Instruct" does not outweigh the family and size.
_VARIANT_WORDS = frozenset(
    {"instruct", "chat", "base", "it", "hf", "fp8", "awq", "gptq", "int4", "int8", "bf16", "fp16"}
)


def _family_size_core(model_id: str) -> tuple[str, str, str]:
    """(family, size, the name without variant words) of a model id: Qwen/Qwen3-32B-Instruct
    gives ("qwen3", "32b", "qwen3-32b")."""
    words = [w for w in re.split(r"[-_ ]", model_id.rsplit("/", 1)[-1].lower()) if w]
    size = next((w for w in words if re.fullmatch(r"\d+(\.\d+)?[bm]", w)), "")
    core = "-".join(w for w in words if w not in _VARIANT_WORDS)
    return (words[0] if words else ""), size, core


def _did_you_mean(name: str) -> str:
    """The database's closest ids: same family and size first, then same family, then by the
    similarity of the names without their variant words."""
    db = spec_database()
    names = list(db.model_ids())
    for model_id in db.model_ids():
        names.extend(db.model(model_id).aliases)
    family, size, core = _family_size_core(name)
    import difflib  # only for a name not found: not on every start

    def rank(candidate: str) -> tuple[bool, bool, float, float]:
        f, s, c = _family_size_core(candidate)
        similarity = difflib.SequenceMatcher(None, core, c).ratio()
        whole = difflib.SequenceMatcher(None, name.lower(), candidate.lower()).ratio()
        return (bool(size) and f == family and s == size, f == family, similarity, whole)

    ranked = sorted(names, key=rank, reverse=True)
    close = [n for n in ranked if rank(n)[1] or rank(n)[2] >= 0.6][:3]
    return f" Did you mean: {', '.join(close)}?" if close else ""


def _headers_cache_file(repo_id: str, commit: str) -> Path:
    return _vramplan_cache_dir() / "safetensors" / repo_id.replace("/", "--") / f"{commit}.json"


def _cached_header_bytes(repo_id: str, commit: str | None) -> int:
    if commit is None:
        return 0
    path = _headers_cache_file(repo_id, commit)
    try:
        data = json.loads(_io.read_bytes(path, what="header cache", max_bytes=_MAX_REF_BYTES))
    except ValueError:  # vramplan.Error is one: an unreadable cache entry is just a miss
        return 0
    total = data.get("total_bytes") if isinstance(data, dict) else None
    return total if isinstance(total, int) and total > 0 else 0


def _store_header_bytes(repo_id: str, commit: str, total: int) -> None:
    path = _headers_cache_file(repo_id, commit)
    text = json.dumps({"repo_id": repo_id, "total_bytes": total})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        _io.write_text_atomic(path, text, what="header cache")  # readers never see half of it
    except (OSError, _core.ConfigError):
        pass  # a read-only cache only costs the next call its range requests


def _inside(path: Path, root: Path) -> bool:
    """Does `path`, links resolved, stay under `root` (links resolved too)?"""
    try:
        return path.resolve().is_relative_to(root.resolve())
    except (OSError, RuntimeError):  # a link loop
        return False


def _exists(path: Path) -> bool:
    try:
        return path.exists()
    except (OSError, ValueError):  # a name too long for the file system, a NUL byte
        return False


def check_revision(revision: str | None) -> None:
    if revision is not None and not _REVISION.fullmatch(revision):
        msg = (
            f"--revision: {revision[:200]!r} is not a branch, tag or commit name (letters, "
            "digits, '.', '_', '-', '/'; no '..' component, at most 255 characters)"
        )
        raise _core.ConfigError(msg)


def check_model_name(model: str | Path) -> None:
    """An empty or blank model string is a named error: `Path("")` is the current directory, so
    it would otherwise plan whatever config.json sits there."""
    if isinstance(model, str) and not model.strip():
        msg = (
            f"model: {model!r} is empty; give a model id, alias or path "
            "(write '.' for the current directory)"
        )
        raise _core.ConfigError(msg)


def _cache_snapshot(repo_id: str, revision: str | None) -> tuple[Path, str] | None:
    """The snapshot folder and commit of `repo_id` in the local Hub cache, or None."""
    entry = hub_cache_dir() / ("models--" + repo_id.replace("/", "--"))
    snapshots = entry / "snapshots"
    if not snapshots.is_dir():
        return None
    wanted = revision or "main"
    commit = wanted if _COMMIT.match(wanted) else None
    if commit is None:
        ref = entry / "refs" / wanted
        if not _inside(ref, entry / "refs"):
            return None
        try:
            commit = _io.read_bytes(ref, what="ref", max_bytes=_MAX_REF_BYTES).decode().strip()
        except (_core.ConfigError, UnicodeDecodeError):
            return None
        if not _COMMIT.match(commit) and not _SNAPSHOT_NAME.match(commit):
            return None
    folder = snapshots / commit
    if not folder.is_dir():
        return None
    # Every snapshot file is a link into blobs/; one leading outside the cache is not followed.
    root = hub_cache_dir()
    if not _inside(folder, root) or not all(_inside(f, root) for f in folder.iterdir()):
        msg = f"{folder}: the Hugging Face cache snapshot links outside the cache ({root})"
        raise _core.ConfigError(msg)
    if not (folder / "config.json").is_file() and not any(folder.glob("*.gguf")):
        return None
    return folder, commit


def _load_path(path: Path) -> tuple[_core.ModelSpec, int]:
    data = _core.load_model_path(str(path))
    return data["spec"], int(data["checkpoint_bytes"])


def _from_cache(repo_id: str, revision: str | None) -> ResolvedModel | None:
    found = _cache_snapshot(repo_id, revision)
    if found is None:
        return None
    folder, commit = found
    spec, exact = _load_path(folder)
    if exact == 0:
        exact = _cached_header_bytes(repo_id, commit)
        if exact > 0:
            spec = _core.with_checkpoint_bytes(spec, exact)
    return ResolvedModel(spec, "cache", str(folder), commit, exact)


# The whole Hub step (config.json, side files, index, every shard header) takes at most this
# many times the per-request timeout: 25 s by default.
_TOTAL_FACTOR = 2.5


def _token(token: str | None) -> str | None:
    if token is not None:
        return token
    try:
        from huggingface_hub import get_token
    except ImportError:
        return os.environ.get("HF_TOKEN") or None
    return get_token()


def _from_hub(
    repo_id: str, revision: str | None, token: str | None, timeout_s: float
) -> ResolvedModel:
    from ._hub import HubClient, Missing, RepoNotFound, store

    endpoint = os.environ.get("HF_ENDPOINT", "").rstrip("/") or "https://huggingface.co"
    client = HubClient(endpoint, repo_id, _token(token), timeout_s, _TOTAL_FACTOR * timeout_s)
    wanted = revision or "main"
    try:
        config, commit, etag = client.file(wanted, "config.json", _MAX_CONFIG_BYTES)
    except Missing:
        raise _error(
            f"model {repo_id} on {endpoint}: the repo has no config.json. For a GGUF-only repo "
            "download the .gguf file and pass its path."
        ) from None
    except RepoNotFound:
        raise _unknown(repo_id, f"and {endpoint} answered HTTP 404 (no such repo)") from None
    files = {"config.json": (config, etag)}
    for side_file in QUANT_SIDE_FILES:
        try:
            data, _, side_etag = client.file(commit, side_file, _MAX_CONFIG_BYTES)
        except Missing:
            continue
        files[side_file] = (data, side_etag)
    folder = store(hub_cache_dir(), repo_id, wanted, commit, files)
    spec, _ = _load_path(folder)
    exact = client.safetensors_bytes(commit, int(spec.checkpoint_bytes()))
    if exact > 0:
        _store_header_bytes(repo_id, commit, exact)
        spec = _core.with_checkpoint_bytes(spec, exact)
    return ResolvedModel(spec, "hub", f"{endpoint}/{repo_id}", commit, exact)


def resolve_model(
    model: str | Path,
    *,
    revision: str | None = None,
    offline: bool | None = None,
    token: str | None = None,
    timeout_s: float = 10.0,
) -> ResolvedModel:
    """Find `model` along the chain: database, path, Hugging Face cache, Hub.

    `revision` (branch, tag or commit) applies to the cache and the Hub; `offline` overrides
    HF_HUB_OFFLINE; `token` overrides HF_TOKEN / the saved token; `timeout_s` bounds each
    request. Raises vramplan.Error naming what was tried."""
    check_revision(revision)
    check_model_name(model)
    if len(str(model)) > _MAX_NAME_CHARS:
        msg = f"model: a name of {len(str(model))} characters (at most {_MAX_NAME_CHARS})"
        raise _core.ConfigError(msg)
    if isinstance(model, Path) or _exists(local_path(model)):
        path = local_path(model)
        spec, exact = _load_path(path)
        return ResolvedModel(spec, "path", str(path), None, exact)
    name = str(model)
    db = spec_database()
    if revision is None and db.has_model(name):
        spec = db.model(name)
        return ResolvedModel(spec, "database", spec.source)
    if not _REPO_ID.match(name):
        db.model(name)  # raises ConfigError listing near names
    cached = _from_cache(name, revision)
    if cached is not None:
        return cached
    if _offline(offline):
        raise _unknown(
            name,
            f"not a path, and not in the Hugging Face cache ({hub_cache_dir()}); offline "
            "(HF_HUB_OFFLINE=1 or --offline), so the Hub was not asked",
        )
    return _from_hub(name, revision, token, timeout_s)
