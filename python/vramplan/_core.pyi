"""
vramplan C++ core (stubs: generated with pybind11-stubgen, then the error attributes, which the
bindings set on each raised error, and KNOBS's element type added by hand; checked against the
module by `python -m mypy.stubtest vramplan._core` in scripts/test.sh)
"""
import collections.abc
import typing

class Error(ValueError):
    ...
class SpecError(Error):
    file: str
    field_path: str
    value: str
class ParseError(Error):
    file: str
    offset: int
class ConfigError(Error):
    field: str
    value: str
    allowed: str
class ModelSpec:
    def checkpoint_bytes(self, include_mtp: bool = True) -> int:
        ...
    def parameter_count(self, include_mtp: bool = False) -> int:
        ...
    def to_dict(self) -> typing.Any:
        ...
    @property
    def aliases(self) -> list[str]:
        ...
    @property
    def id(self) -> str:
        ...
    @property
    def max_position_embeddings(self) -> int:
        ...
    @property
    def model_type(self) -> str:
        ...
    @property
    def num_hidden_layers(self) -> int:
        ...
    @property
    def source(self) -> str:
        ...
    @property
    def vocab_size(self) -> int:
        ...
class GpuSpec:
    def __init__(self, id: str, total_memory_bytes: typing.SupportsInt | typing.SupportsIndex, name: str = '', compute_capability: typing.SupportsFloat | typing.SupportsIndex = 9.0) -> None:
        ...
    def to_dict(self) -> typing.Any:
        ...
    @property
    def id(self) -> str:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def total_memory_bytes(self) -> int:
        ...
class SpecDatabase:
    @staticmethod
    def load_directory(path: str) -> SpecDatabase:
        ...
    def add_model(self, spec: ModelSpec) -> None:
        ...
    def gpu(self, name: str) -> GpuSpec:
        ...
    def gpu_ids(self) -> list[str]:
        ...
    def has_gpu(self, name: str) -> bool:
        ...
    def has_model(self, name: str) -> bool:
        ...
    def model(self, name: str) -> ModelSpec:
        ...
    def model_ids(self) -> list[str]:
        ...
class Term:
    """
    One term of a breakdown: bytes and how we know them.
    """
    @property
    def bytes(self) -> int:
        ...
    @property
    def name(self) -> str:
        ...
    @property
    def provenance(self) -> str:
        ...
class RankBreakdown:
    """
    One pipeline stage (TP ranks are symmetric).
    """
    @property
    def activation_peak_bytes(self) -> int:
        ...
    @property
    def block_size(self) -> int:
        ...
    @property
    def cuda_context_bytes(self) -> int:
        ...
    @property
    def cudagraph_bytes(self) -> int:
        ...
    @property
    def headroom_bytes(self) -> int:
        ...
    @property
    def kv_bytes_per_token(self) -> int:
        ...
    @property
    def kv_cache_bytes(self) -> int:
        ...
    @property
    def kv_page_bytes(self) -> int:
        ...
    @property
    def lora_bytes(self) -> int:
        ...
    @property
    def non_torch_bytes(self) -> int:
        ...
    @property
    def num_blocks(self) -> int:
        ...
    @property
    def pipeline_rank(self) -> int:
        ...
    @property
    def post_allocation_bytes(self) -> int:
        ...
    @property
    def requested_memory_bytes(self) -> int:
        ...
    @property
    def terms(self) -> list[Term]:
        ...
    @property
    def total_memory_bytes(self) -> int:
        ...
    @property
    def weights_bytes(self) -> int:
        ...
class HostBreakdown:
    """
    Host RAM per node while loading and serving.
    """
    @property
    def input_batch_bytes(self) -> int:
        ...
    @property
    def loader_anonymous_bytes(self) -> int:
        ...
    @property
    def page_cache_bytes(self) -> int:
        ...
    @property
    def pinned_bytes(self) -> int:
        ...
    @property
    def process_baseline_bytes(self) -> int:
        ...
    @property
    def required_bytes(self) -> int:
        ...
    @property
    def terms(self) -> list[Term]:
        ...
class Breakdown:
    """
    What vLLM's startup profiling will find, per rank.
    """
    def to_json(self) -> str:
        ...
    @property
    def block_size(self) -> int:
        ...
    @property
    def engine_era(self) -> str:
        ...
    @property
    def engine_version(self) -> str:
        ...
    @property
    def estimated_max_model_len(self) -> int:
        ...
    @property
    def gpu_id(self) -> str:
        ...
    @property
    def gpu_memory_utilization(self) -> float:
        ...
    @property
    def host(self) -> HostBreakdown:
        ...
    @property
    def kv_bytes_per_token(self) -> int:
        ...
    @property
    def kv_cache_bytes(self) -> int:
        ...
    @property
    def kv_tokens(self) -> int:
        ...
    @property
    def max_concurrency(self) -> float:
        ...
    @property
    def max_model_len(self) -> int:
        ...
    @property
    def max_num_batched_tokens(self) -> int:
        ...
    @property
    def max_num_seqs(self) -> int:
        ...
    @property
    def messages(self) -> list[str]:
        ...
    @property
    def model_id(self) -> str:
        ...
    @property
    def num_blocks(self) -> int:
        ...
    @property
    def num_cudagraph_sizes(self) -> int:
        ...
    @property
    def outcome(self) -> str:
        ...
    @property
    def ranks(self) -> list[RankBreakdown]:
        ...
    @property
    def request_kv_bytes(self) -> int:
        ...
    @property
    def startup_free_bytes(self) -> int:
        ...
    @property
    def weights_bytes(self) -> int:
        ...
class Remedy:
    """
    A change that makes the launch fit, with its full flags.
    """
    @property
    def change(self) -> str:
        ...
    @property
    def detail(self) -> str:
        ...
    @property
    def fits(self) -> bool:
        ...
    @property
    def flags(self) -> str:
        ...
    @property
    def kind(self) -> str:
        ...
class Plan:
    """
    The solver's answer: the largest safe knobs and why.
    """
    def llm_kwargs(self) -> typing.Any:
        ...
    def to_json(self) -> str:
        ...
    def vllm_args(self) -> str:
        ...
    @property
    def binding(self) -> dict[str, typing.Any]:
        ...
    @property
    def breakdown(self) -> Breakdown:
        ...
    @property
    def concurrent_sequences(self) -> int:
        ...
    @property
    def fits(self) -> bool:
        ...
    @property
    def gpu_memory_utilization(self) -> float:
        ...
    @property
    def max_model_len(self) -> int:
        ...
    @property
    def max_num_batched_tokens(self) -> int:
        ...
    @property
    def max_num_seqs(self) -> int:
        ...
    @property
    def remedies(self) -> list[Remedy]:
        ...
    @property
    def safety_margin_bytes(self) -> int:
        ...
    @property
    def verdict(self) -> str:
        ...
class Launch:
    """
    A launch compiled once (model, GPU, parallelism, formats, engine version); evaluate, solve and sweep the other knobs without recompiling.
    """
    def __init__(self, spec: ModelSpec, gpu: GpuSpec, knobs: dict[str, typing.Any], num_gpus: typing.SupportsInt | typing.SupportsIndex = 1, memory_used_by_others_bytes: typing.SupportsInt | typing.SupportsIndex = 0, host_ram_bytes: typing.SupportsInt | typing.SupportsIndex = 0) -> None:
        ...
    def breakdown(self, knobs: dict[str, typing.Any]) -> Breakdown:
        ...
    def solve(self, knobs: dict[str, typing.Any], context: typing.SupportsInt | typing.SupportsIndex = 0, concurrency: typing.SupportsInt | typing.SupportsIndex = 0, safety_margin_bytes: typing.SupportsInt | typing.SupportsIndex = -1) -> Plan:
        ...
    def sweep(self, knobs: dict[str, typing.Any], gpu_memory_utilization: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], max_model_len: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], max_num_seqs: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], max_num_batched_tokens: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex]) -> dict[str, typing.Any]:
        ...
def diagnose_launch(log_text: str, kernel_text: str = '') -> typing.Any:
    """
    Name the cause of a failed vLLM launch from its log and an optional dmesg/journalctl excerpt. Returns a dict: cause (fixed vocabulary), evidence (lines), explanation, oom_phase, oom_other_processes_bytes, oom_kills, figures (parse_vllm_log's dict). Never raises for malformed text.
    """
def load_hf_config(path: str) -> ModelSpec:
    """
    ModelSpec from a config.json file or a folder holding one (hf_quant_config.json too).
    """
def load_model_path(path: str) -> dict[str, typing.Any]:
    ...
def load_model_spec_file(path: str) -> ModelSpec:
    ...
def outcome_names() -> list[str]:
    ...
def parse_model_spec_yaml(text: str, file: str = '<string>') -> ModelSpec:
    ...
def parse_vllm_log(text: str) -> typing.Any:
    """
    Read the figures a vLLM startup log prints (launch settings, weights, activation peak, non-torch memory, KV cache size, CUDA graphs, failure figures) and how the launch ended. Returns a dict with every field (None when the log does not print it); never raises for malformed text.
    """
def read_gguf_header(path: str) -> typing.Any:
    ...
def read_safetensors_folder(dir: str) -> typing.Any:
    ...
def resolve_model_folder(path: str) -> str:
    ...
def schema_markdown() -> str:
    ...
def with_checkpoint_bytes(spec: ModelSpec, checkpoint_bytes: typing.SupportsInt | typing.SupportsIndex) -> ModelSpec:
    """
    A copy of `spec` whose stored tensor bytes are `checkpoint_bytes` (exact, from safetensors headers read elsewhere, e.g. over HTTP range requests).
    """
KNOBS: list[dict[str, typing.Any]]
MAX_SWEEP_POINTS: int = 50000000
