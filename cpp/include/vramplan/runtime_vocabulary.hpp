// The phrases that are not any serving engine's own but appear in its logs: PyTorch's CUDA
// out-of-memory message, Python's traceback, the Linux kernel's OOM-killer report and the
// kill notices of the schedulers around a server. Every engine's log reader shares these; each
// phrase is written once, here. The engine's own wording is in <engine>_vocabulary.hpp.
#pragma once

#include <string_view>

namespace vramplan::runtime_vocabulary {

// --- PyTorch's CUDA allocator (c10/cuda/CUDACachingAllocator.cpp, torch 2.x) -------------
// "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total
// capacity of 22.05 GiB of which 100.00 MiB is free. Process 77 has 3.50 GiB memory in use.
// Including non-PyTorch memory, this process has 18.40 GiB memory in use."
inline constexpr std::string_view kCudaOutOfMemory = "CUDA out of memory";
inline constexpr std::string_view kOutOfMemoryError = "OutOfMemoryError";
inline constexpr std::string_view kCudaErrorOutOfMemory = "CUDA error: out of memory";
inline constexpr std::string_view kCudaErrorMemoryAllocation = "cudaErrorMemoryAllocation";
inline constexpr std::string_view kTriedToAllocate = "Tried to allocate ";
inline constexpr std::string_view kTotalCapacityOf = "total capacity of ";
inline constexpr std::string_view kOfWhich = "of which ";
inline constexpr std::string_view kProcess = "Process ";  // "Process N has X GiB memory in use"
inline constexpr std::string_view kProcessHas = " has ";
inline constexpr std::string_view kThisProcessHas = "this process has";
// torch < 2.1: "(GPU 0; 79.15 GiB total capacity; 10.81 MiB free; ...)".
inline constexpr std::string_view kOldTotalCapacity = " total capacity;";
inline constexpr std::string_view kOldFree = " free;";

// --- Python -------------------------------------------------------------------------------
inline constexpr std::string_view kTraceback = "Traceback (most recent call last)";

// --- Linux kernel OOM killer (mm/oom_kill.c) ----------------------------------------------
// "Killed process 1703792 (ray::IDLE) total-vm:68545920kB, anon-rss:37760kB, file-rss:77744kB,
// shmem-rss:0kB"
inline constexpr std::string_view kKilledProcess = "Killed process ";
inline constexpr std::string_view kAnonRss = "anon-rss:";
inline constexpr std::string_view kFileRss = "file-rss:";
inline constexpr std::string_view kShmemRss = "shmem-rss:";
inline constexpr std::string_view kAnyRss = "-rss:";  // a report wrapped over lines goes on
inline constexpr std::string_view kMemoryCgroupOom = "Memory cgroup out of memory";
inline constexpr std::string_view kConstraintMemcg = "CONSTRAINT_MEMCG";
inline constexpr std::string_view kInvokedOomKiller = "invoked oom-killer";
inline constexpr std::string_view kOomKill = "oom-kill:";

// --- kill notices around a server ---------------------------------------------------------
inline constexpr std::string_view kShellKilled = "Killed";  // the whole line: the shell's notice
inline constexpr std::string_view kRayOomKiller = "killed by SIGKILL by OOM killer";
inline constexpr std::string_view kRayLowMemory = "running low on memory";
inline constexpr std::string_view kKubernetesOomKilled = "OOMKilled";

}  // namespace vramplan::runtime_vocabulary
