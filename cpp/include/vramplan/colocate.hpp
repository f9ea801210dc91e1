// Several vLLM instances sharing the same GPUs. Each instance's startup check counts the memory
// the instances started before it hold (vLLM's "memory used by other processes"), so what a
// started instance holds is the input the next one's check needs.
#pragma once

#include <cstdint>

#include "vramplan/engine.hpp"

namespace vramplan {

// What a started instance holds on its fullest GPU while it serves, as the startup check of an
// instance started after it sees it: the CUDA context (+ NCCL), the weights, non-torch memory,
// the KV cache, and the larger of the profile run's activation peak (freed after profiling but
// allocated again by the first full batch, so counted) plus the in-budget graph estimate and
// what graph capture and the sampler warm-up need beyond them, and the captured graphs alone.
// With --kv-cache-memory-bytes this is far below total x gpu_memory_utilization, which the
// instance's own startup check still demands. Throws ConfigError when the instance does not
// start (it holds nothing that can be counted).
std::int64_t resident_bytes(const Breakdown& started);

}  // namespace vramplan
