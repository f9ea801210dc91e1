// llama.cpp's own memory arithmetic, run without allocating (llama_model_params::no_alloc, the
// path --fit uses). Two modes:
//   llamacpp_dryrun tensors META.gguf
//     builds the model llama.cpp would build from a metadata-only GGUF (llama_model_init_from_user)
//     and prints one JSON line per tensor it creates: name and shape. make_gguf.py writes the
//     sparse model file from these, so the tensor set is llama.cpp's, not a guess.
//   llamacpp_dryrun measure MODEL.gguf N_CTX N_SEQ TYPE_K TYPE_V streams|unified
//     loads MODEL.gguf through the ordinary file loader (no mmap, every layer on the CPU), creates
//     a context (flash attention on, one KV stream per sequence or --kv-unified, -ub 512, -b 2048)
//     and prints one
//     JSON line with the bytes llama_get_memory_breakdown reports per buffer type.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ggml-backend.h"
#include "ggml.h"
#include "gguf.h"
#include "llama-ext.h"
#include "llama-model.h"
#include "llama.h"

namespace {

void quiet_log(ggml_log_level level, const char* text, void* /*user_data*/) {
  if (level == GGML_LOG_LEVEL_ERROR || level == GGML_LOG_LEVEL_WARN) std::fputs(text, stderr);
}

void nothing_to_set(ggml_tensor* /*tensor*/, void* /*user_data*/) {}

llama_model_params dry_model_params() {
  llama_model_params params = llama_model_default_params();
  params.no_alloc = true;
  params.load_mode = LLAMA_LOAD_MODE_NONE;  // --no-mmap: the fit pass maps nothing
  params.lazy_mode = LLAMA_LAZY_MODE_OFF;
  params.use_extra_bufts = false;  // no CPU repack buffers: one CPU buffer type
  params.n_gpu_layers = 0;
  return params;
}

int list_tensors(const char* path) {
  gguf_init_params init{/*no_alloc=*/true, /*ctx=*/nullptr};
  gguf_context* meta = gguf_init_from_file(path, init);
  if (meta == nullptr) {
    std::fprintf(stderr, "cannot read %s\n", path);
    return 1;
  }
  llama_model* model =
      llama_model_init_from_user(meta, &nothing_to_set, nullptr, dry_model_params());
  if (model == nullptr) {
    std::fprintf(stderr, "llama.cpp builds no model from %s\n", path);
    gguf_free(meta);
    return 1;
  }
  for (const auto& [name, tensor] : model->tensors_by_name) {
    std::printf("{\"name\": \"%s\", \"type\": \"%s\", \"shape\": [", name.c_str(),
                ggml_type_name(tensor->type));
    const int n_dims = ggml_n_dims(tensor);
    for (int d = 0; d < n_dims; ++d) {
      std::printf("%s%lld", d == 0 ? "" : ", ", static_cast<long long>(tensor->ne[d]));
    }
    std::printf("]}\n");
  }
  llama_model_free(model);
  gguf_free(meta);
  return 0;
}

ggml_type cache_type(const char* name) {
  for (int t = 0; t < GGML_TYPE_COUNT; ++t) {
    const char* type_name = ggml_type_name(static_cast<ggml_type>(t));
    if (type_name != nullptr && std::strcmp(type_name, name) == 0) return static_cast<ggml_type>(t);
  }
  std::fprintf(stderr, "unknown cache type %s\n", name);
  std::exit(2);
}

int measure(const char* path, unsigned n_ctx, unsigned n_seq, const char* type_k,
            const char* type_v, bool kv_unified) {
  llama_model* model = llama_model_load_from_file(path, dry_model_params());
  if (model == nullptr) {
    std::fprintf(stderr, "llama.cpp cannot load %s\n", path);
    return 1;
  }
  llama_context_params cparams = llama_context_default_params();
  cparams.n_ctx = n_ctx;
  cparams.n_seq_max = n_seq;
  cparams.n_batch = 2048;
  cparams.n_ubatch = 512;
  cparams.flash_attn_type = LLAMA_FLASH_ATTN_TYPE_ENABLED;
  cparams.kv_unified = kv_unified;
  cparams.swa_full = false;
  cparams.type_k = cache_type(type_k);
  cparams.type_v = cache_type(type_v);
  llama_context* ctx = llama_init_from_model(model, cparams);
  if (ctx == nullptr) {
    std::fprintf(stderr, "llama.cpp creates no context for %s\n", path);
    llama_model_free(model);
    return 1;
  }
  std::printf("{\"n_ctx\": %u, \"n_ctx_seq\": %u, \"buffers\": {", llama_n_ctx(ctx),
              llama_n_ctx_seq(ctx));
  bool first = true;
  for (const auto& [buft, data] : llama_get_memory_breakdown(ctx)) {
    std::printf("%s\"%s\": {\"model\": %zu, \"context\": %zu, \"compute\": %zu}", first ? "" : ", ",
                ggml_backend_buft_name(buft), data.model, data.context, data.compute);
    first = false;
  }
  std::printf("}}\n");
  llama_free(ctx);
  llama_model_free(model);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  llama_log_set(quiet_log, nullptr);
  llama_backend_init();
  int rc = 2;
  if (argc == 3 && std::strcmp(argv[1], "tensors") == 0) {
    rc = list_tensors(argv[2]);
  } else if (argc == 8 && std::strcmp(argv[1], "measure") == 0) {
    rc = measure(argv[2], static_cast<unsigned>(std::atoi(argv[3])),
                 static_cast<unsigned>(std::atoi(argv[4])), argv[5], argv[6],
                 std::strcmp(argv[7], "unified") == 0);
  } else {
    std::fprintf(stderr,
                 "usage: %s tensors META.gguf | "
                 "measure MODEL.gguf N_CTX N_SEQ TYPE_K TYPE_V streams|unified\n",
                 argv[0]);
  }
  llama_backend_free();
  return rc;
}
