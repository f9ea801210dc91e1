"""Plain-words explanations of every breakdown term and launch outcome: what vLLM allocates,
why, and which flag moves it. One table; `vramplan explain TERM` and the notebook views read
it."""

from __future__ import annotations

import difflib
from typing import NamedTuple

from . import _core


class Explanation(NamedTuple):
    term: str
    kind: str  # "GPU term" (per rank), "host term" (per node) or "outcome"
    what: str  # what vLLM allocates (or what happened)
    why: str  # why it is there / why it happens
    flags: str  # what moves it


EXPLANATIONS: dict[str, Explanation] = {
    e.term: e
    for e in (
        Explanation(
            "weights",
            "GPU term",
            "The model's parameters on each GPU rank, in their stored format (16-bit, FP8, "
            "INT4 ...), plus the rotary-embedding cos/sin cache, resident LoRA slots and a "
            "speculative drafter. vLLM prints it as 'Model loading took X GiB'.",
            "Every forward pass reads all of them; they are loaded before anything else, so a "
            "model that does not fit fails at load (outcome oom_at_load).",
            "--tensor-parallel-size / --pipeline-parallel-size split them over GPUs; "
            "--quantization fp8 (or an FP8/AWQ/GPTQ checkpoint) shrinks them; --cpu-offload-gb "
            "keeps part in host RAM (slower); --max-loras / --max-lora-rank size the LoRA slots.",
        ),
        Explanation(
            "activation_peak",
            "GPU term",
            "The peak of PyTorch's allocator during the startup profile run: one forward pass "
            "of max_num_batched_tokens dummy tokens (MLP and attention intermediates, the "
            "fused-MoE workspace) and the sampler warm-up on max_num_seqs requests x vocab "
            "logits.",
            "vLLM measures it to reserve room for the largest step the scheduler may run; the "
            "KV cache gets only what is left after it.",
            "--max-num-batched-tokens (smaller: lower peak, slower prefill); --max-num-seqs "
            "(sampler logits).",
        ),
        Explanation(
            "mm_encoder",
            "GPU term",
            "Multimodal models: what the vision encoder adds to the startup profile's peak. "
            "vLLM runs the encoder on a batch of dummy images of the processor's largest size "
            "('Encoder cache will be initialized with a budget of N tokens, and profiled with K "
            "image items') and keeps their embeddings in the encoder cache (K x tokens per "
            "image x hidden size) while the text forward and the sampler run, with the pixel "
            "inputs still held. The peak is the larger of the encoder forward and cache + text "
            "peak; this term is its excess over the text peak (shown apart from "
            "activation_peak, which holds the rest).",
            "The encoder cache must hold the largest image a request may bring: N = "
            "max(max_num_batched_tokens, tokens per image), K = N // tokens per image (bounded "
            "by max_num_seqs x images per prompt).",
            '--limit-mm-per-prompt \'{"image": 0, "video": 0}\' or --language-model-only drop '
            "it (and, from vLLM 0.11, the encoder weights); a smaller --max-num-batched-tokens "
            "profiles fewer images; a limit of 1 image with few --max-num-seqs bounds K.",
        ),
        Explanation(
            "non_torch",
            "GPU term",
            "GPU memory allocated outside PyTorch's caching allocator while profiling: cuBLAS "
            "and attention-kernel workspaces, and at TP>=2 the custom all-reduce and NCCL "
            "buffers.",
            "vLLM takes it as the growth of the device's used memory that torch does not "
            "account for, and subtracts it from the budget before sizing the KV cache.",
            "--tensor-parallel-size (TP=1 has no all-reduce buffers); "
            "--disable-custom-all-reduce drops the custom all-reduce buffer.",
        ),
        Explanation(
            "mrv2_persistent_buffers",
            "GPU term",
            "Model Runner V2's sampler state, allocated once when the runner starts: per request "
            "slot an int32 count of every vocabulary entry generated (penalties) and a packed "
            "bit mask of the prompt's tokens, max_num_seqs x (vocab + vocab / 32) x 4 B.",
            "From vLLM 0.27 the budget counts all memory consumed since the init snapshot, so "
            "this state is charged before the KV cache is sized; in 0.22-0.26 it was held but "
            "counted nowhere and had to fit in the (1 - gpu_memory_utilization) headroom.",
            "--max-num-seqs (linear in it); VLLM_USE_V2_MODEL_RUNNER=0 runs the V1 runner, "
            "which keeps no such state.",
        ),
        Explanation(
            "all2all_dispatch",
            "GPU term",
            "The part of the activation peak that data parallelism adds to MoE layers with the "
            "naive or allgather_reducescatter all-to-all: each MoE layer gathers the tokens of "
            "every DP replica (hidden states and router logits of dp x max_num_batched_tokens "
            "rows), runs the fused-MoE kernel on all of them and returns the wider output.",
            "DP replicas run attention apart but share the MoE layers, so every rank computes "
            "its experts for all replicas' tokens; the profile run sizes this for a full step "
            "on every replica. Older vLLM (before early 2026) ran the kernel at most 32768 "
            "tokens at a time.",
            "--data-parallel-size (the replicas gathered); --max-num-batched-tokens (tokens per "
            "replica); --all2all-backend deepep_low_latency / deepep_high_throughput with "
            "--enable-expert-parallel exchange through fixed buffers instead.",
        ),
        Explanation(
            "all2all_buffers",
            "GPU term",
            "Part of non-torch memory: the DeepEP communication buffers an expert-parallel "
            "launch creates after loading the model - the NVLink buffer "
            "(VLLM_DEEPEP_BUFFER_SIZE_MB, 1 GiB), a 32 MiB workspace and, in low-latency mode, "
            "the RDMA buffer sized by DeepEP for T tokens per rank times the number of "
            "experts (T = 256, VLLM_MOE_DP_CHUNK_SIZE, up to vLLM 0.19; from 0.20 T = "
            "max_num_batched_tokens, whose default is then 256); with pplx, one buffer per "
            "peer rank sized for 256 "
            "fp32 tokens per local expert.",
            "DeepEP and pplx send tokens straight into peers' preallocated buffers; they are "
            "cudaMalloc or NVSHMEM memory, so vLLM's profiler counts them as non-torch growth.",
            "--all2all-backend (allgather_reducescatter has no buffer but gathers activations); "
            "VLLM_DEEPEP_BUFFER_SIZE_MB; fewer experts, a smaller hidden size or (0.20+) a "
            "smaller --max-num-batched-tokens shrink the low-latency buffer.",
        ),
        Explanation(
            "cudagraph",
            "GPU term",
            "Memory held by the captured CUDA graphs: one graph per capture batch size, each "
            "keeping its own intermediate buffers.",
            "Graphs remove the CPU launch overhead of decode steps. Newer vLLM versions "
            "estimate the capture memory and keep it inside the budget; older ones capture "
            "after the KV cache is allocated, where a tight budget fails (cudagraph_capture_oom).",
            "--enforce-eager (no graphs: saves the memory, costs decode speed); --max-num-seqs "
            "(capture sizes stop at it); --gpu-memory-utilization leaves room for them.",
        ),
        Explanation(
            "kv_cache",
            "GPU term",
            "The paged key/value cache: blocks of block_size tokens for every attention layer "
            "of the rank (Mamba/linear-attention state for hybrid models). vLLM prints it as "
            "'GPU KV cache size: N tokens'.",
            "It is what is left of total x gpu_memory_utilization after weights, activation "
            "peak, non-torch memory (and graphs); it bounds context x concurrency. One request "
            "of max_model_len tokens must fit, or startup fails "
            "(insufficient_kv_for_max_model_len).",
            "--gpu-memory-utilization (more budget); --kv-cache-dtype fp8 (half the bytes per "
            "token); --max-model-len and --max-num-seqs (what it must hold); "
            "--kv-cache-memory-bytes (a fixed size instead of the budget); more TP.",
        ),
        Explanation(
            "cuda_context",
            "GPU term",
            "The CUDA context of the worker process (driver state, kernel images) and NCCL's "
            "communicator state.",
            "Every process that touches the GPU pays it once. It sits outside PyTorch's "
            "allocator, and vLLM's startup check sees it as memory already in use.",
            "None directly; other processes on the same GPU add their own (see "
            "--used-by-others-bytes and --gpu auto).",
        ),
        Explanation(
            "process_baseline",
            "host term",
            "Host RAM of the running processes before any weights: the API server, the engine "
            "core and one worker per GPU (Python, PyTorch, CUDA libraries).",
            "Each process imports the full stack; the count grows with TP x PP.",
            "--tensor-parallel-size / --pipeline-parallel-size (workers per node).",
        ),
        Explanation(
            "loader_staging",
            "host term",
            "Anonymous host memory the weight loader holds while it copies tensors to the GPU: "
            "the largest tensor per worker for memory-mapped safetensors, a whole shard for "
            "eager loading.",
            "Tensors pass through host memory on their way to the device.",
            "--safetensors-load-strategy (lazy maps files; eager reads whole shards).",
        ),
        Explanation(
            "input_batch",
            "host term",
            "The scheduler's host-side input batch buffers: token ids and positions for "
            "max_num_seqs x max_model_len per worker.",
            "vLLM preallocates them so scheduling a step never allocates.",
            "--max-num-seqs and --max-model-len.",
        ),
        Explanation(
            "pinned",
            "host term",
            "Page-locked host memory: weights offloaded with --cpu-offload-gb, the CPU KV "
            "offload buffer, V0 swap space.",
            "Pinned pages allow fast GPU transfers but cannot be swapped or reclaimed, so they "
            "count fully against the node's RAM (the kernel OOM killer acts on them: "
            "host_oom_killed).",
            "--cpu-offload-gb, --kv-offloading-size, --swap-space.",
        ),
        Explanation(
            "sleep_backup",
            "host term",
            "Host copies vLLM keeps while asleep with --enable-sleep-mode: at level 1 every "
            "rank's weights, one pinned block per CUDA caching-allocator segment, each rounded "
            "up to a power of two; at level 2 only the model's buffers.",
            "Sleeping frees the GPU for another job and must restore the weights on wake-up, "
            "so level 1 copies them to page-locked host memory first.",
            "--enable-sleep-mode and the level the server is put to sleep at (sleep_level); "
            "level 2 keeps no weight copy (they are reloaded or sent on wake-up).",
        ),
        Explanation(
            "page_cache",
            "host term",
            "The checkpoint files in the kernel's page cache after loading.",
            "Reading the weights fills the page cache; it is file-backed and reclaimable, so "
            "it is shown but not required.",
            "None needed: the kernel drops it under pressure.",
        ),
        Explanation(
            "started",
            "outcome",
            "The engine starts: the weights load, the profile run fits, the KV cache holds at "
            "least one request of max_model_len tokens.",
            "Every term fits in the budget.",
            "-",
        ),
        Explanation(
            "startup_free_memory",
            "outcome",
            "vLLM refuses to start: the GPU's free memory at startup is below total x "
            "gpu_memory_utilization.",
            "Another process (or the CUDA context) already holds memory the budget counts on.",
            "--gpu-memory-utilization lower; stop the other process; plan with --gpu auto.",
        ),
        Explanation(
            "oom_at_load",
            "outcome",
            "CUDA out of memory while loading the weights.",
            "The weights per rank exceed the GPU's free memory.",
            "--tensor-parallel-size / --pipeline-parallel-size; --quantization fp8; "
            "--cpu-offload-gb.",
        ),
        Explanation(
            "oom_kv_alloc",
            "outcome",
            "The budget leaves no (or negative) room for the KV cache: 'No available memory "
            "for the cache blocks'.",
            "Weights + activation peak + non-torch memory (+ graphs) exceed total x "
            "gpu_memory_utilization.",
            "--gpu-memory-utilization higher; --max-num-batched-tokens lower; more TP; "
            "--quantization fp8.",
        ),
        Explanation(
            "insufficient_kv_for_max_model_len",
            "outcome",
            "Startup stops because one request of max_model_len tokens does not fit in the KV "
            "cache; vLLM prints the estimated maximum model length.",
            "The KV cache is smaller than max_model_len x bytes per token.",
            "--max-model-len (at most the estimate); --kv-cache-dtype fp8; "
            "--gpu-memory-utilization higher; more TP.",
        ),
        Explanation(
            "cudagraph_capture_oom",
            "outcome",
            "CUDA out of memory capturing CUDA graphs after the KV cache is allocated "
            "(vLLM 0.11-0.20 capture them outside the budget).",
            "The graph pool does not fit in what the budget leaves free: total - "
            "total x gpu_memory_utilization - CUDA context, plus the freed activations.",
            "--gpu-memory-utilization lower; --enforce-eager; --max-num-seqs lower.",
        ),
        Explanation(
            "sampler_warmup_oom",
            "outcome",
            "CUDA out of memory warming up the sampler on max_num_seqs dummy requests, after "
            "the KV cache and the graphs.",
            "fp32 logits of max_num_seqs x vocab (+ sort buffers) outside the budget; MXFP4 "
            "repacking leaves segments the allocator cannot reuse.",
            "--max-num-seqs lower; --gpu-memory-utilization lower.",
        ),
        Explanation(
            "cudagraph_profiling_oom",
            "outcome",
            "CUDA out of memory while vLLM (>= 0.21) profiles CUDA-graph memory on a minimal "
            "KV cache of max_cudagraph_capture_size blocks, before the budget is applied.",
            "Weights + that minimal cache + the graphs exceed the free memory; hybrid models "
            "(Mamba, Gated DeltaNet) have pages of hundreds of tokens. Lowering "
            "gpu_memory_utilization cannot help.",
            "--max-num-seqs lower (fewer capture sizes); fewer speculative tokens; "
            "--enforce-eager.",
        ),
        Explanation(
            "state_blocks_below_max_num_seqs",
            "outcome",
            "vLLM (>= 0.20) refuses to start a model with Mamba or linear-attention layers "
            "whose max_num_seqs exceeds the KV pool's blocks: 'max_num_seqs (N) exceeds "
            "available Mamba cache blocks (M)'.",
            "Each decoding sequence holds one state block, and FULL CUDA graphs are captured "
            "for up to max_num_seqs sequences. The memory is not short: the cap is.",
            "--max-num-seqs at most the block count (vramplan lowers it when it chooses); "
            "--gpu-memory-utilization higher; --enforce-eager.",
        ),
        Explanation(
            "host_oom_killed",
            "outcome",
            "The kernel's OOM killer ends a vLLM process while loading (host RAM, not GPU).",
            "Process baselines + loader staging + pinned memory exceed the node's RAM.",
            "--cpu-offload-gb / --kv-offloading-size lower; --safetensors-load-strategy lazy; "
            "fewer workers per node.",
        ),
    )
}


def explain(term: str) -> Explanation:
    """The explanation of one breakdown term or outcome; vramplan.Error naming the known ones."""
    if not isinstance(term, str):
        msg = f"term: expected a str, got {type(term).__name__} ({term!r})"
        raise _core.ConfigError(msg)
    key = term.strip().lower().replace("-", "_")
    key = key.removesuffix("_bytes")
    if key not in EXPLANATIONS:
        # A prefix of one term ("kv" for kv_cache), else the closest spellings.
        near = [name for name in EXPLANATIONS if name.startswith(key)] if key else []
        if not near:
            near = difflib.get_close_matches(key, list(EXPLANATIONS), n=3, cutoff=0.6)
        hint = f" Did you mean: {', '.join(near[:3])}?" if near else ""
        msg = f"term: unknown term {term!r} (known: {', '.join(EXPLANATIONS)}).{hint}"
        raise _core.ConfigError(msg)
    return EXPLANATIONS[key]
