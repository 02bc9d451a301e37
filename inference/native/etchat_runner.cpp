// etchat_runner.cpp — libetchat_runner: the C ABI of etchat_runner.h over
// ExecuTorch's Module, the MLX delegate and the off-graph KV cache.
//
// The order of a session's setup follows ExecuTorch's MLX LLM runner: load
// the program (not forward), build the cache from the config Go passed,
// install it under a unique key, hand that key to the MLX backend as its
// cache_key load option, and only then load "forward" (the delegate binds
// the cache in its init()).
//
// No C++ exception leaves this file: every entry point runs inside guard(),
// which turns exceptions into a status code and a thread-local message.

#include "etchat_runner.h"

#include "cache_adapter.h"

#include <executorch/backends/mlx/runtime/backend_options.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/backend_options_map.h>
#include <executorch/runtime/backend/options.h>

#ifndef ETCHAT_WITH_MLX
#define ETCHAT_WITH_MLX 1
#endif
#if ETCHAT_WITH_MLX
#include <mlx/memory.h>
#endif

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

using ::executorch::extension::make_tensor_ptr;
using ::executorch::extension::Module;
using ::executorch::runtime::Error;
using ::executorch::runtime::EValue;

// The opaque handle types of the header.
struct etchat_program {
  std::string path;
  std::unique_ptr<Module> module; // program loaded; forward not loaded
  int64_t vocab = 0;
  int32_t max_ctx = 0; // get_max_ctx_len (or _context_ / _seq_); 0 = none
};

struct etchat_session {
  // Declared before module: members are destroyed in reverse order, so the
  // method bound to the cache goes first and the cache outlives it.
  std::unique_ptr<etchat::BoundCache> cache; // null for in-graph programs
  std::unique_ptr<Module> module;
  int64_t vocab = 0;
  int32_t capacity = 0;
  int32_t length = 0;
};

namespace {

// ---- errors ---------------------------------------------------------------

thread_local std::string t_last_error;

// Failure is thrown inside the library only; guard() catches it.
struct Failure : std::runtime_error {
  Failure(etchat_status s, const std::string& msg)
      : std::runtime_error(msg), status(s) {}
  etchat_status status;
};

[[noreturn]] void fail(etchat_status s, const std::string& msg) {
  throw Failure(s, msg);
}

std::string et_error(Error e) {
  char code[16];
  std::snprintf(code, sizeof code, " (0x%x)", static_cast<unsigned>(e));
  return std::string(::executorch::runtime::to_string(e)) + code;
}

template <class F>
etchat_status guard(const char* op, F&& f) noexcept {
  t_last_error.clear();
  try {
    f();
    return ETCHAT_OK;
  } catch (const Failure& e) {
    try {
      t_last_error = std::string(op) + ": " + e.what();
    } catch (...) {
    }
    return e.status;
  } catch (const std::bad_alloc&) {
    try {
      t_last_error = std::string(op) + ": out of memory";
    } catch (...) {
    }
    return ETCHAT_ERR_INTERNAL;
  } catch (const std::exception& e) {
    try {
      t_last_error = std::string(op) + ": " + e.what();
    } catch (...) {
    }
    return ETCHAT_ERR_INTERNAL;
  } catch (...) {
    try {
      t_last_error = std::string(op) + ": unknown C++ exception";
    } catch (...) {
    }
    return ETCHAT_ERR_INTERNAL;
  }
}

// ---- execution lock and handle registries -----------------------------------

// MLX's default stream and ExecuTorch's backend init are process-wide, so
// everything that loads, runs or frees a method is serialised.
std::mutex& exec_mu() {
  static std::mutex mu;
  return mu;
}

// Live handles. A handle is not a pointer: it is a never-reused number
// (cast to the opaque pointer type), so a stale handle cannot alias a newer
// object. Entry points look a handle up and hold a shared_ptr for the
// duration of the call, so a close on another thread cannot free it under
// them, and a stale or foreign handle is reported instead of dereferenced.
template <class T>
class Registry {
 public:
  T* add(std::unique_ptr<T> obj) {
    // Deleting takes the execution lock: tearing down a method frees MLX
    // buffers. Callers never hold that lock when the last reference drops.
    std::shared_ptr<T> sp(obj.release(), [](T* p) {
      std::lock_guard<std::mutex> lk(exec_mu());
      delete p;
    });
    std::lock_guard<std::mutex> lk(mu_);
    next_ += 16;
    live_.emplace(next_, std::move(sp));
    return reinterpret_cast<T*>(next_);
  }
  std::shared_ptr<T> get(const T* h, const char* what) const {
    if (h == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, std::string(what) + " handle is NULL");
    }
    std::lock_guard<std::mutex> lk(mu_);
    auto it = live_.find(reinterpret_cast<uintptr_t>(h));
    if (it == live_.end()) {
      fail(ETCHAT_ERR_CLOSED, std::string(what) + " is closed or unknown");
    }
    return it->second;
  }
  std::shared_ptr<T> take(const T* h) {
    std::lock_guard<std::mutex> lk(mu_);
    auto it = live_.find(reinterpret_cast<uintptr_t>(h));
    if (it == live_.end()) {
      return nullptr;
    }
    std::shared_ptr<T> sp = std::move(it->second);
    live_.erase(it);
    return sp;
  }

 private:
  mutable std::mutex mu_;
  uintptr_t next_ = 0x10000;
  std::unordered_map<uintptr_t, std::shared_ptr<T>> live_;
};

Registry<etchat_program>& programs() {
  static Registry<etchat_program> r;
  return r;
}
Registry<etchat_session>& sessions() {
  static Registry<etchat_session> r;
  return r;
}

// ---- helpers ----------------------------------------------------------------

std::unique_ptr<Module> load_program(const std::string& path) {
  auto m = std::make_unique<Module>(path, Module::LoadMode::Mmap);
  const Error err = m->load();
  if (err != Error::Ok) {
    fail(
        ETCHAT_ERR_LOAD,
        "loading program " + path + " failed: " + et_error(err));
  }
  return m;
}

std::optional<int64_t> const_int(Module& m, const char* name) {
  auto names = m.method_names();
  if (!names.ok() || names->count(name) == 0) {
    return std::nullopt;
  }
  auto r = m.execute(name);
  if (!r.ok() || r->empty() || !r->at(0).isInt()) {
    return std::nullopt;
  }
  return r->at(0).toInt();
}

int64_t vocab_of(Module& m) {
  auto meta = m.method_meta("forward");
  if (!meta.ok()) {
    fail(
        ETCHAT_ERR_LOAD,
        "the program has no usable \"forward\" method: " +
            et_error(meta.error()));
  }
  if (meta->num_outputs() < 1) {
    fail(ETCHAT_ERR_LOAD, "\"forward\" has no outputs");
  }
  auto out = meta->output_tensor_meta(0);
  if (!out.ok()) {
    fail(
        ETCHAT_ERR_LOAD,
        "\"forward\"'s first output is not a tensor: " +
            et_error(out.error()));
  }
  auto sizes = out->sizes();
  if (sizes.size() == 0 || sizes[sizes.size() - 1] <= 0) {
    fail(ETCHAT_ERR_LOAD, "\"forward\"'s logits have no vocabulary dimension");
  }
  return sizes[sizes.size() - 1];
}

etchat::CacheSpec spec_from(
    const etchat_cache_config* cfg,
    const etchat_cache_layer* layers,
    int32_t n_layers) {
  if (n_layers <= 0 || layers == nullptr) {
    fail(ETCHAT_ERR_INVALID_ARGUMENT, "cache config has no layers");
  }
  if (cfg->capacity <= 0) {
    fail(
        ETCHAT_ERR_INVALID_ARGUMENT,
        "capacity " + std::to_string(cfg->capacity) + " is not positive");
  }
  if (cfg->initial_capacity < 0) {
    fail(
        ETCHAT_ERR_INVALID_ARGUMENT,
        "initial capacity " + std::to_string(cfg->initial_capacity) +
            " is negative");
  }
  if (cfg->max_write < 0) {
    fail(
        ETCHAT_ERR_INVALID_ARGUMENT,
        "max_write " + std::to_string(cfg->max_write) + " is negative");
  }
  if (cfg->kv_dtype != 5 && cfg->kv_dtype != 6 && cfg->kv_dtype != 15) {
    fail(
        ETCHAT_ERR_INVALID_ARGUMENT,
        "kv dtype " + std::to_string(cfg->kv_dtype) +
            " is not Half (5), Float (6) or BFloat16 (15)");
  }
  etchat::CacheSpec spec;
  spec.capacity = cfg->capacity;
  spec.initial_capacity = cfg->initial_capacity;
  spec.kv_dtype = cfg->kv_dtype;
  spec.max_write = cfg->max_write;
  spec.layers.reserve(static_cast<size_t>(n_layers));
  for (int32_t i = 0; i < n_layers; ++i) {
    const etchat_cache_layer& l = layers[i];
    const bool ring = l.kind == ETCHAT_LAYER_RING;
    if (l.kv_heads <= 0 || l.head_dim <= 0 ||
        (l.kind != ETCHAT_LAYER_FLAT && !ring) || (ring != (l.window > 0))) {
      fail(
          ETCHAT_ERR_INVALID_ARGUMENT,
          "layer " + std::to_string(i) + ": kind " + std::to_string(l.kind) +
              ", window " + std::to_string(l.window) + ", kv_heads " +
              std::to_string(l.kv_heads) + ", head_dim " +
              std::to_string(l.head_dim) + " is not a valid layer");
    }
    spec.layers.push_back(
        etchat::LayerSpec{l.kind, l.window, l.kv_heads, l.head_dim});
  }
  return spec;
}

template <class Src>
void convert_rows(const Src* src, float* dst, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    dst[i] = static_cast<float>(src[i]);
  }
}

} // namespace

// ===== 1. Version and errors ===============================================

extern "C" ETCHAT_API int32_t etchat_abi_version(void) {
  return ETCHAT_RUNNER_ABI_VERSION;
}

extern "C" ETCHAT_API const char* etchat_last_error(void) {
  return t_last_error.c_str();
}

extern "C" ETCHAT_API const char* etchat_status_name(etchat_status s) {
  switch (s) {
    case ETCHAT_OK:
      return "ok";
    case ETCHAT_ERR_INVALID_ARGUMENT:
      return "invalid argument";
    case ETCHAT_ERR_UNSUPPORTED:
      return "unsupported";
    case ETCHAT_ERR_REWIND_REFUSED:
      return "rewind refused";
    case ETCHAT_ERR_CACHE_FULL:
      return "cache full";
    case ETCHAT_ERR_CLOSED:
      return "closed";
    case ETCHAT_ERR_LOAD:
      return "load failed";
    case ETCHAT_ERR_EXECUTE:
      return "execution failed";
    case ETCHAT_ERR_INTERNAL:
      return "internal error";
    default:
      return "unknown status";
  }
}

// ===== 2. Program ==========================================================

extern "C" ETCHAT_API etchat_status
etchat_program_open(const char* path, etchat_program** out) {
  return guard("program_open", [&] {
    if (path == nullptr || *path == '\0' || out == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "path and out must be given");
    }
    auto p = std::make_unique<etchat_program>();
    p->path = path;
    {
      std::lock_guard<std::mutex> lk(exec_mu());
      p->module = load_program(p->path);
      p->vocab = vocab_of(*p->module);
      std::optional<int64_t> ctx = const_int(*p->module, "get_max_ctx_len");
      for (const char* name : {"get_max_context_len", "get_max_seq_len"}) {
        if (!ctx) {
          ctx = const_int(*p->module, name);
        }
      }
      if (ctx && *ctx > 0 && *ctx <= INT32_MAX) {
        p->max_ctx = static_cast<int32_t>(*ctx);
      }
    }
    *out = programs().add(std::move(p));
  });
}

extern "C" ETCHAT_API etchat_status
etchat_program_vocab(etchat_program* program, int64_t* out) {
  return guard("program_vocab", [&] {
    auto p = programs().get(program, "program");
    if (out == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "out is NULL");
    }
    *out = p->vocab;
  });
}

extern "C" ETCHAT_API etchat_status
etchat_program_close(etchat_program* program) {
  return guard("program_close", [&] {
    auto p = programs().take(program);
    p.reset(); // frees now unless a call on another thread still holds it
  });
}

// ===== 3. Session ==========================================================

extern "C" ETCHAT_API etchat_status etchat_session_open(
    etchat_program* program,
    const etchat_cache_config* cfg,
    const etchat_cache_layer* layers,
    int32_t n_layers,
    etchat_session** out) {
  return guard("session_open", [&] {
    auto p = programs().get(program, "program");
    if (out == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "out is NULL");
    }
    if (cfg == nullptr && (layers != nullptr || n_layers != 0)) {
      fail(
          ETCHAT_ERR_INVALID_ARGUMENT,
          "layers given without a cache config");
    }
    std::optional<etchat::CacheSpec> spec;
    if (cfg != nullptr) {
      spec = spec_from(cfg, layers, n_layers);
    }

    auto s = std::make_unique<etchat_session>();
    s->vocab = p->vocab;
    std::lock_guard<std::mutex> lk(exec_mu());
    // 1. The program, without forward: the cache must exist before
    //    forward's backend init reads its key.
    s->module = load_program(p->path);

    ::executorch::runtime::BackendOptions<1> mlx_opts;
    ::executorch::runtime::LoadBackendOptionsMap options_map;
    if (spec) {
      // 2. Build the cache from the config Go passed, and install it under a
      //    unique key (the adapter does both).
      std::string why;
      s->cache = etchat::make_bound_cache(
          ::executorch::backends::mlx::kMLXBackendId, *spec, &why);
      if (!s->cache) {
        fail(ETCHAT_ERR_LOAD, why);
      }
      s->capacity = static_cast<int32_t>(s->cache->capacity());
      // 3. The key becomes the MLX backend's cache_key load option.
      if (mlx_opts.set_option(
              ::executorch::backends::mlx::kCacheKeyKey,
              s->cache->key().c_str()) != Error::Ok ||
          options_map.set_options(
              ::executorch::backends::mlx::kMLXBackendId, mlx_opts.view()) !=
              Error::Ok) {
        fail(ETCHAT_ERR_LOAD, "setting the MLX backend's cache_key failed");
      }
    } else {
      s->capacity = p->max_ctx;
    }
    // 4. Now forward: the delegate's init() looks the cache up by its key.
    const Error err = s->module->load_method(
        "forward",
        /*planned_memory=*/nullptr,
        /*event_tracer=*/nullptr,
        spec ? &options_map : nullptr);
    if (err != Error::Ok) {
      fail(
          ETCHAT_ERR_LOAD,
          "loading \"forward\" failed: " + et_error(err) +
              (spec ? " (the MLX backend may reject this program, or the "
                      "cache config does not match it)"
                    : " (an off-graph program needs a cache config)"));
    }
    *out = sessions().add(std::move(s));
  });
}

extern "C" ETCHAT_API etchat_status etchat_session_forward(
    etchat_session* session,
    const int64_t* ids,
    const int64_t* positions,
    int32_t n,
    float* logits,
    int64_t logits_cap,
    int32_t all_rows,
    int64_t* written) {
  return guard("forward", [&] {
    auto s = sessions().get(session, "session");
    if (n <= 0 || ids == nullptr || positions == nullptr ||
        logits == nullptr || written == nullptr) {
      fail(
          ETCHAT_ERR_INVALID_ARGUMENT,
          "ids, positions, logits and written must be given, n > 0");
    }
    int64_t last = -1;
    for (int32_t i = 0; i < n; ++i) {
      if (positions[i] < 0) {
        fail(
            ETCHAT_ERR_INVALID_ARGUMENT,
            "position " + std::to_string(positions[i]) + " is negative");
      }
      if (ids[i] < 0 || (s->vocab > 0 && ids[i] >= s->vocab)) {
        fail(
            ETCHAT_ERR_INVALID_ARGUMENT,
            "token id " + std::to_string(ids[i]) + " is outside the vocabulary");
      }
      last = std::max(last, positions[i]);
    }
    if (s->capacity > 0 && last >= s->capacity) {
      fail(
          ETCHAT_ERR_CACHE_FULL,
          "position " + std::to_string(last) + " is beyond capacity " +
              std::to_string(s->capacity));
    }
    const int64_t need = (all_rows ? static_cast<int64_t>(n) : 1) * s->vocab;
    if (logits_cap < need) {
      fail(
          ETCHAT_ERR_INVALID_ARGUMENT,
          "logits buffer holds " + std::to_string(logits_cap) +
              " floats, need " + std::to_string(need));
    }

    std::lock_guard<std::mutex> lk(exec_mu());
    auto in = make_tensor_ptr({1, n}, std::vector<int64_t>(ids, ids + n));
    auto pos = make_tensor_ptr({n}, std::vector<int64_t>(positions, positions + n));
    auto result = s->module->execute("forward", {in, pos});
    if (!result.ok()) {
      fail(ETCHAT_ERR_EXECUTE, "forward failed: " + et_error(result.error()));
    }
    if (result->empty() || !result->at(0).isTensor()) {
      fail(ETCHAT_ERR_EXECUTE, "forward returned no logits tensor");
    }
    const auto& t = result->at(0).toTensor();
    const int64_t vocab = t.dim() > 0 ? t.size(t.dim() - 1) : 0;
    if (vocab != s->vocab || vocab <= 0) {
      fail(
          ETCHAT_ERR_EXECUTE,
          "forward returned rows of " + std::to_string(vocab) +
              " logits, the method declares " + std::to_string(s->vocab));
    }
    const int64_t rows = static_cast<int64_t>(t.numel()) / vocab;
    if (rows < 1) {
      fail(ETCHAT_ERR_EXECUTE, "forward returned no logits rows");
    }
    if (all_rows && rows != n) {
      fail(
          ETCHAT_ERR_UNSUPPORTED,
          "the program returns " + std::to_string(rows) + " logits rows for " +
              std::to_string(n) + " tokens; all rows are not available");
    }
    const int64_t first = all_rows ? 0 : rows - 1;
    const size_t count = static_cast<size_t>((rows - first) * vocab);
    const size_t offset = static_cast<size_t>(first * vocab);
    using ST = ::executorch::aten::ScalarType;
    switch (t.scalar_type()) {
      case ST::Float:
        std::memcpy(
            logits, t.const_data_ptr<float>() + offset, count * sizeof(float));
        break;
      case ST::Half:
        convert_rows(
            t.const_data_ptr<::executorch::aten::Half>() + offset, logits, count);
        break;
      case ST::BFloat16:
        convert_rows(
            t.const_data_ptr<::executorch::aten::BFloat16>() + offset,
            logits,
            count);
        break;
      default:
        fail(
            ETCHAT_ERR_EXECUTE,
            std::string("logits of dtype ") +
                ::executorch::runtime::toString(t.scalar_type()) +
                " are not supported (float, half, bfloat16)");
    }
    s->length = std::max(s->length, static_cast<int32_t>(last + 1));
    *written = static_cast<int64_t>(count);
  });
}

extern "C" ETCHAT_API etchat_status
etchat_session_rewind(etchat_session* session, int32_t new_len) {
  return guard("rewind", [&] {
    auto s = sessions().get(session, "session");
    if (!s->cache) {
      fail(ETCHAT_ERR_UNSUPPORTED, "an in-graph program cannot rewind");
    }
    if (new_len < 0 || new_len > s->length) {
      fail(
          ETCHAT_ERR_REWIND_REFUSED,
          "cannot rewind from " + std::to_string(s->length) + " to " +
              std::to_string(new_len));
    }
    std::lock_guard<std::mutex> lk(exec_mu());
    if (!s->cache->rewind(new_len)) {
      fail(
          ETCHAT_ERR_REWIND_REFUSED,
          "a sliding-window layer no longer holds the cells for length " +
              std::to_string(new_len));
    }
    s->length = new_len;
  });
}

extern "C" ETCHAT_API etchat_status
etchat_session_clear(etchat_session* session) {
  return guard("clear", [&] {
    auto s = sessions().get(session, "session");
    if (!s->cache) {
      fail(ETCHAT_ERR_UNSUPPORTED, "an in-graph program cannot clear its cache");
    }
    std::lock_guard<std::mutex> lk(exec_mu());
    s->cache->clear();
    s->length = 0;
  });
}

extern "C" ETCHAT_API etchat_status
etchat_session_length(etchat_session* session, int32_t* out) {
  return guard("length", [&] {
    auto s = sessions().get(session, "session");
    if (out == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "out is NULL");
    }
    *out = s->length;
  });
}

extern "C" ETCHAT_API etchat_status
etchat_session_capacity(etchat_session* session, int32_t* out) {
  return guard("capacity", [&] {
    auto s = sessions().get(session, "session");
    if (out == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "out is NULL");
    }
    *out = s->capacity;
  });
}

extern "C" ETCHAT_API etchat_status
etchat_session_can_extend(etchat_session* session, int32_t n, int32_t* out) {
  return guard("can_extend", [&] {
    auto s = sessions().get(session, "session");
    if (out == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "out is NULL");
    }
    if (n < 0) {
      *out = 0;
      return;
    }
    if (s->cache) {
      std::lock_guard<std::mutex> lk(exec_mu());
      *out = s->cache->can_extend(n) ? 1 : 0;
    } else {
      *out = (s->capacity <= 0 ||
              static_cast<int64_t>(s->length) + n <= s->capacity)
          ? 1
          : 0;
    }
  });
}

extern "C" ETCHAT_API etchat_status
etchat_session_close(etchat_session* session) {
  return guard("session_close", [&] {
    auto s = sessions().take(session);
    s.reset(); // the deleter takes the execution lock
  });
}

// ===== 4. Memory ===========================================================

extern "C" ETCHAT_API etchat_status etchat_memory(int64_t* active, int64_t* peak) {
  return guard("memory", [&] {
#if ETCHAT_WITH_MLX
    if (active != nullptr) {
      *active = static_cast<int64_t>(::mlx::core::get_active_memory());
    }
    if (peak != nullptr) {
      *peak = static_cast<int64_t>(::mlx::core::get_peak_memory());
    }
#else
    if (active != nullptr) {
      *active = 0;
    }
    if (peak != nullptr) {
      *peak = 0;
    }
#endif
  });
}

extern "C" ETCHAT_API etchat_status etchat_memory_reset_peak(void) {
  return guard("memory_reset_peak", [&] {
#if ETCHAT_WITH_MLX
    ::mlx::core::reset_peak_memory();
#endif
  });
}
