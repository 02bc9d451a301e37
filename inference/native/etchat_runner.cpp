// etchat_runner.cpp — the C ABI of etchat_runner.h: handle registry,
// argument checks, error mapping, length tracking and logits conversion,
// over a runner backend (runner_backend.h; backend_executorch.cpp in the
// real library).
//
// No C++ exception leaves this file: every entry point runs inside guard(),
// which turns exceptions into a status code and a thread-local message.

#include "etchat_runner.h"

#include "runner_backend.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

// The opaque handle types of the header.
struct etchat_program {
  std::unique_ptr<etchat::ProgramBackend> backend;
};

struct etchat_session {
  std::unique_ptr<etchat::SessionBackend> backend;
  int64_t vocab = 0;
  int32_t capacity = 0; // 0 = no limit known (in-graph without metadata)
  int32_t length = 0;
};

namespace {

using etchat::fail;
using etchat::Failure;

// ---- errors ---------------------------------------------------------------

thread_local std::string t_last_error;

void set_error(const char* op, const char* msg) noexcept {
  try {
    t_last_error = std::string(op) + ": " + msg;
  } catch (...) {
    t_last_error.clear(); // out of memory: the status still says what failed
  }
}

template <class F>
etchat_status guard(const char* op, F&& f) noexcept {
  t_last_error.clear();
  try {
    f();
    return ETCHAT_OK;
  } catch (const Failure& e) {
    set_error(op, e.what());
    return e.status;
  } catch (const std::bad_alloc&) {
    set_error(op, "out of memory");
    return ETCHAT_ERR_INTERNAL;
  } catch (const std::exception& e) {
    set_error(op, e.what());
    return ETCHAT_ERR_INTERNAL;
  } catch (...) {
    set_error(op, "unknown C++ exception");
    return ETCHAT_ERR_INTERNAL;
  }
}

// ---- execution lock and handle registries -----------------------------------

// The runtime (MLX's default stream, ExecuTorch's backend init) is
// process-wide, so everything that loads, runs or frees a method is
// serialised.
// Like the registries below it is never destroyed: handles still open at
// exit are left to the OS rather than torn down during static destruction,
// after the runtime's own statics may be gone.
std::mutex& exec_mu() {
  static std::mutex* mu = new std::mutex;
  return *mu;
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
    // Deleting takes the execution lock: tearing down a method frees
    // runtime buffers. No caller holds that lock when the last reference
    // drops (locks are always taken after the reference).
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
  static auto* r = new Registry<etchat_program>;
  return *r;
}
Registry<etchat_session>& sessions() {
  static auto* r = new Registry<etchat_session>;
  return *r;
}

// ---- config and logits ------------------------------------------------------

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

float bf16_to_float(uint16_t h) {
  const uint32_t bits = static_cast<uint32_t>(h) << 16;
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

float fp16_to_float(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1fu) { // inf / nan
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) { // normal
    bits = sign | ((exp + 112u) << 23) | (mant << 13);
  } else if (mant == 0) { // zero
    bits = sign;
  } else { // subnormal: normalise
    exp = 113u;
    while ((mant & 0x400u) == 0) {
      mant <<= 1;
      --exp;
    }
    bits = sign | (exp << 23) | ((mant & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

void copy_logits(
    const etchat::LogitsView& v,
    int64_t first_row,
    int64_t rows,
    float* dst) {
  const size_t offset = static_cast<size_t>(first_row * v.vocab);
  const size_t count = static_cast<size_t>(rows * v.vocab);
  switch (v.type) {
    case etchat::LogitsType::kFloat32:
      std::memcpy(
          dst, static_cast<const float*>(v.data) + offset, count * sizeof(float));
      return;
    case etchat::LogitsType::kFloat16: {
      const auto* src = static_cast<const uint16_t*>(v.data) + offset;
      for (size_t i = 0; i < count; ++i) {
        dst[i] = fp16_to_float(src[i]);
      }
      return;
    }
    case etchat::LogitsType::kBFloat16: {
      const auto* src = static_cast<const uint16_t*>(v.data) + offset;
      for (size_t i = 0; i < count; ++i) {
        dst[i] = bf16_to_float(src[i]);
      }
      return;
    }
  }
  fail(ETCHAT_ERR_INTERNAL, "unknown logits type");
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
    {
      std::lock_guard<std::mutex> lk(exec_mu());
      p->backend = etchat::open_program(path);
    }
    if (p->backend->vocab() <= 0) {
      fail(ETCHAT_ERR_LOAD, "the program's logits have no vocabulary size");
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
    *out = p->backend->vocab();
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
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "layers given without a cache config");
    }
    std::optional<etchat::CacheSpec> spec;
    if (cfg != nullptr) {
      spec = spec_from(cfg, layers, n_layers);
    }
    auto s = std::make_unique<etchat_session>();
    s->vocab = p->backend->vocab();
    {
      std::lock_guard<std::mutex> lk(exec_mu());
      s->backend = p->backend->open_session(spec ? &*spec : nullptr);
    }
    if (!s->backend) {
      fail(ETCHAT_ERR_INTERNAL, "the backend opened no session");
    }
    s->capacity =
        s->backend->has_cache() ? s->backend->capacity() : p->backend->max_ctx();
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
      if (ids[i] < 0 || ids[i] >= s->vocab) {
        fail(
            ETCHAT_ERR_INVALID_ARGUMENT,
            "token id " + std::to_string(ids[i]) +
                " is outside the vocabulary");
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
    const etchat::LogitsView v = s->backend->forward(ids, positions, n);
    if (v.data == nullptr || v.vocab != s->vocab) {
      fail(
          ETCHAT_ERR_EXECUTE,
          "forward returned rows of " + std::to_string(v.vocab) +
              " logits, the method declares " + std::to_string(s->vocab));
    }
    if (v.rows < 1) {
      fail(ETCHAT_ERR_EXECUTE, "forward returned no logits rows");
    }
    // The step ran, so the cache holds it whatever the copy below does.
    s->length = std::max(s->length, static_cast<int32_t>(last + 1));
    if (all_rows && v.rows != n) {
      fail(
          ETCHAT_ERR_UNSUPPORTED,
          "the program returns " + std::to_string(v.rows) +
              " logits rows for " + std::to_string(n) +
              " tokens; all rows are not available");
    }
    const int64_t rows = all_rows ? v.rows : 1;
    copy_logits(v, v.rows - rows, rows, logits);
    *written = rows * v.vocab;
  });
}

extern "C" ETCHAT_API etchat_status
etchat_session_rewind(etchat_session* session, int32_t new_len) {
  return guard("rewind", [&] {
    auto s = sessions().get(session, "session");
    if (!s->backend->has_cache()) {
      fail(ETCHAT_ERR_UNSUPPORTED, "an in-graph program cannot rewind");
    }
    if (new_len < 0 || new_len > s->length) {
      fail(
          ETCHAT_ERR_REWIND_REFUSED,
          "cannot rewind from " + std::to_string(s->length) + " to " +
              std::to_string(new_len));
    }
    std::lock_guard<std::mutex> lk(exec_mu());
    if (!s->backend->rewind(new_len)) {
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
    if (!s->backend->has_cache()) {
      fail(ETCHAT_ERR_UNSUPPORTED, "an in-graph program cannot clear its cache");
    }
    std::lock_guard<std::mutex> lk(exec_mu());
    s->backend->clear();
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
    if (s->backend->has_cache()) {
      std::lock_guard<std::mutex> lk(exec_mu());
      *out = s->backend->can_extend(n) ? 1 : 0;
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

extern "C" ETCHAT_API etchat_status
etchat_memory(int64_t* active, int64_t* peak) {
  return guard("memory", [&] {
    int64_t a = 0;
    int64_t p = 0;
    etchat::runtime_memory(&a, &p);
    if (active != nullptr) {
      *active = a;
    }
    if (peak != nullptr) {
      *peak = p;
    }
  });
}

extern "C" ETCHAT_API etchat_status etchat_memory_reset_peak(void) {
  return guard("memory_reset_peak", [&] { etchat::runtime_reset_peak(); });
}
