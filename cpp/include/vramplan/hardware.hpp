// GPUs as CUDA reports them, and the host.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace vramplan {

struct GpuSpec {
  std::string id;                    // database id, e.g. "H100-80GB"
  std::vector<std::string> aliases;  // other names ("NVIDIA H100 80GB HBM3", "h100")
  // Names several memory sizes share ("NVIDIA A100": 40 or 80 GB). The lookup assumes the first
  // GPU in gpus.yaml that lists the name, and says so (SpecDatabase::gpu_name_note).
  std::vector<std::string> shared_aliases;
  std::string name;    // marketing name
  std::string vendor;  // nvidia / amd
  // The error band's GPU family (gpus.yaml `family`): "H100/H200", "A100", ...; empty: none
  // (no measured band).
  std::string family;
  std::int64_t total_memory_bytes = 0;  // cudaMemGetInfo total, not the marketing figure
  std::string total_memory_source;      // provenance of the total
  // True when no log of this GPU's total was found: the total is derived from the published
  // capacity (gpus.yaml's header gives the rule), not measured.
  bool total_memory_derived = false;
  double compute_capability = 0.0;  // 9.0 for Hopper; 0 for non-CUDA
  std::int32_t num_sms = 0;
  bool unified_memory = false;  // GH200/GB200-class: free comes from host RAM
  // A card with no NVLink between the GPUs of a node: NCCL talks over PCIe with few channels
  // and small buffers at TP>=2 (engines.yaml non_torch_tensor_parallel_pcie_bytes). False
  // (the larger NVLink charge) wherever NVLink may be present or the card is unknown.
  bool pcie_only = false;
  // nvidia-smi's memory total (MiB), a few hundred MiB above the CUDA total; 0 where gpus.yaml
  // records none. SGLang computes its defaults from it (sglang.hpp).
  std::int64_t nvidia_smi_memory_mib = 0;
  // A MIG slice (gpus.yaml `mig:` of its parent): the parent's id and the profile NVML names
  // ("3g.40gb"); both empty for a whole GPU. A slice has no P2P/NCCL path to another slice.
  std::string mig_parent;
  std::string mig_profile;
};

}  // namespace vramplan
