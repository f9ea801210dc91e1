// The profile run's activation coefficients per stage: the forward and the fused-MoE workspace
// per batched token. Engine-neutral; the peak at a point is in compiled_evaluate.cpp.
#include <algorithm>

#include "launch_internal.hpp"
#include "vramplan/compiled.hpp"

namespace vramplan {

// Peak torch allocation of the profile run per token: one eager forward over the stage's layers
// (widest dense MLP intermediate, hidden-size buffers) and the fused-MoE workspace.
ActivationModel activation_model(const ModelSpec& spec, const QuantSpec& quant,
                                 std::int64_t act_bytes, std::int64_t tp, std::int64_t expert_tp,
                                 const LayerRange& layers, bool last_stage,
                                 double forward_hidden_buffers) {
  const std::int64_t gate_factor = spec.gated_mlp ? 2 : 1;
  std::int64_t dense_width = 0;
  std::int64_t moe_width = 0;
  for (std::int32_t i = layers.begin; i < layers.end; ++i) {
    const LayerSpec& layer = spec.layers[static_cast<std::size_t>(i)];
    if (!layer.mlp) continue;
    if (layer.moe) {
      const std::int64_t inter = ceil_div(spec.moe.moe_intermediate_size, expert_tp);
      // fused-MoE workspaces: [T, topk, 2I] + [T*topk, I] + [T, topk, h].
      moe_width = spec.moe.num_experts_per_tok * ((gate_factor + 1) * inter + spec.hidden_size);
    } else {
      dense_width = std::max(dense_width, (gate_factor + 1) * ceil_div(spec.intermediate_size, tp));
    }
  }
  const std::int64_t hidden_buffers =
      static_cast<std::int64_t>(forward_hidden_buffers * static_cast<double>(spec.hidden_size));
  ActivationModel model;
  model.forward_bytes_per_token = act_bytes * (dense_width + hidden_buffers);
  // MXFP4 experts run through kernels that do not use the fused-MoE workspace.
  const bool moe_workspace = moe_width > 0 && quant.method != QuantMethod::Mxfp4;
  model.moe_bytes_per_token = moe_workspace ? act_bytes * moe_width : 0;
  model.sampler = last_stage;
  return model;
}

}  // namespace vramplan
