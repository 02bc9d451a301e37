// etchat_runner.cpp — the C ABI of etchat_runner.h: the library's thread,
// handle registry, argument and step checks, the ring rule, error mapping,
// length tracking and logits conversion, over a runner backend
// (runner_backend.h; backend_executorch.cpp in the real library).
//
// No C++ exception leaves this file: every entry point runs inside guard(),
// which runs its body on the library's thread and turns exceptions into a
// status code and the calling thread's last-error message.

#include "etchat_runner.h"

#include "runner_backend.h"

#include <pthread.h>
#ifdef __APPLE__
#include <pthread/qos.h>
// The Objective-C runtime's pool functions (libobjc, linked through the
// Foundation framework MLX needs); declared here to keep this file C++.
extern "C" void* objc_autoreleasePoolPush(void);
extern "C" void objc_autoreleasePoolPop(void* pool);
#endif

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <deque>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

// The opaque handle types of the header.
struct etchat_program {
  std::unique_ptr<etchat::ProgramBackend> backend;
};

struct etchat_session {
  std::unique_ptr<etchat::SessionBackend> backend;
  int64_t vocab = 0;
  int32_t capacity = 0; // 0 = no limit known (in-graph without metadata)
  int32_t length = 0;
  // Off-graph sessions: the largest step a ring admits (0 = no ring), and
  // per layer the ring's rows (0 = flat), window and oldest position it
  // still holds (the ring rule; see etchat_session_rewind).
  int32_t max_step = 0;
  std::vector<int32_t> ring_rows;
  std::vector<int32_t> ring_window;
  std::vector<int32_t> oldest;
};

namespace {

using etchat::fail;
using etchat::Failure;

// ---- the library's thread ---------------------------------------------------

// Every call that touches ExecuTorch or MLX runs on this one thread. MLX
// (>= 0.32) keeps streams and command encoders per thread, and ExecuTorch's
// MLX delegate creates its stream when "forward" is loaded: a session
// driven from any other thread than the one that loaded it fails. Owning
// the thread here makes that true for every caller (Go goroutines migrate
// between OS threads). Like the registries below it is never destroyed:
// it outlives every handle, and the OS ends it with the process.
class LibraryThread {
 public:
  LibraryThread() {
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    // macOS gives secondary threads 512 KiB; MLX and ExecuTorch get the
    // 8 MiB a main thread has.
    pthread_attr_setstacksize(&attr, 8u << 20);
#ifdef __APPLE__
    // A reply someone waits for: user-initiated, not the default class the
    // scheduler may put on efficiency cores.
    pthread_attr_set_qos_class_np(&attr, QOS_CLASS_USER_INITIATED, 0);
#endif
    const int rc = pthread_create(&thread_, &attr, &LibraryThread::main, this);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
      fail(ETCHAT_ERR_INTERNAL, "cannot start the library's thread");
    }
    pthread_detach(thread_);
  }

  // Runs f on the library's thread and waits for it. f must not throw.
  void run(const std::function<void()>& f) {
    if (pthread_equal(pthread_self(), thread_)) {
      f(); // a nested call (none today) must not wait on itself
      return;
    }
    Task t{&f};
    {
      std::lock_guard<std::mutex> lk(mu_);
      queue_.push_back(&t);
    }
    cv_.notify_one();
    std::unique_lock<std::mutex> lk(mu_);
    done_cv_.wait(lk, [&] { return t.done; });
  }

 private:
  struct Task {
    const std::function<void()>* f;
    bool done = false;
  };

  static void* main(void* self) {
    static_cast<LibraryThread*>(self)->loop();
    return nullptr;
  }

  void loop() {
    for (;;) {
      Task* t;
      {
        std::unique_lock<std::mutex> lk(mu_);
        cv_.wait(lk, [&] { return !queue_.empty(); });
        t = queue_.front();
        queue_.pop_front();
      }
#ifdef __APPLE__
      // Metal objects MLX autoreleases (command buffers, descriptors) are
      // freed after each task, not kept until a pool this thread never
      // drains: a thread of ours has none of its own.
      void* pool = objc_autoreleasePoolPush();
      (*t->f)();
      objc_autoreleasePoolPop(pool);
#else
      (*t->f)();
#endif
      {
        std::lock_guard<std::mutex> lk(mu_);
        t->done = true;
      }
      done_cv_.notify_all();
    }
  }

  pthread_t thread_{};
  std::mutex mu_;
  std::condition_variable cv_;
  std::condition_variable done_cv_;
  std::deque<Task*> queue_;
};

LibraryThread& library_thread() {
  static auto* t = new LibraryThread;
  return *t;
}

// ---- errors ---------------------------------------------------------------

thread_local std::string t_last_error;

struct Outcome {
  etchat_status status = ETCHAT_OK;
  std::string message;
};

// Runs f (on the library's thread) and turns what it throws into an
// outcome, with the runtime's logged errors appended to a failure.
template <class F>
Outcome run_guarded(const char* op, F& f) noexcept {
  Outcome out;
  try {
    (void)etchat::take_runtime_errors(); // stale ones belong to no call
    try {
      f();
      return out;
    } catch (const Failure& e) {
      out.status = e.status;
      out.message = e.what();
    } catch (const std::bad_alloc&) {
      out.status = ETCHAT_ERR_INTERNAL;
      out.message = "out of memory";
    } catch (const std::exception& e) {
      out.status = ETCHAT_ERR_INTERNAL;
      out.message = e.what();
    } catch (...) {
      out.status = ETCHAT_ERR_INTERNAL;
      out.message = "unknown C++ exception";
    }
    out.message = std::string(op) + ": " + out.message;
    const std::string logged = etchat::take_runtime_errors();
    if (!logged.empty()) {
      out.message += " | runtime log: " + logged;
    }
  } catch (...) {
    // Out of memory while building the message: the status still says
    // what failed.
    if (out.status == ETCHAT_OK) {
      out.status = ETCHAT_ERR_INTERNAL;
    }
  }
  return out;
}

// Per-forward timing (etchat_set_timing), and the calling thread's last
// forward's (etchat_last_timing).
std::atomic<bool> g_timing{false};
thread_local etchat_step_timing t_timing{};

// Runs f on the library's thread as guard() does; with tm, also records
// the hand-over to the library's thread and back and the call's total.
template <class F>
etchat_status guard(
    const char* op,
    F&& f,
    etchat_step_timing* tm = nullptr) noexcept {
  const int64_t t0 = tm != nullptr ? etchat::now_ns() : 0;
  int64_t t_done = 0;
  t_last_error.clear();
  Outcome out;
  try {
    library_thread().run([&] {
      if (tm != nullptr) {
        tm->to_thread_ns = etchat::now_ns() - t0;
      }
      out = run_guarded(op, f);
      if (tm != nullptr) {
        t_done = etchat::now_ns();
      }
    });
  } catch (const Failure& e) {
    out.status = e.status;
    out.message = std::string(op) + ": " + e.what();
  } catch (...) {
    out.status = ETCHAT_ERR_INTERNAL;
    out.message = std::string(op) + ": cannot reach the library's thread";
  }
  if (tm != nullptr && t_done != 0) {
    const int64_t t1 = etchat::now_ns();
    tm->from_thread_ns = t1 - t_done;
    tm->total_ns = t1 - t0;
  }
  if (out.status != ETCHAT_OK) {
    try {
      t_last_error = std::move(out.message);
    } catch (...) {
      t_last_error.clear();
    }
  }
  return out.status;
}

// Set once the first program is opened: MLX has then read (or will read)
// its metallib path, so a later etchat_set_metallib_path is too late.
bool g_runtime_used = false;

// Set once the first program is opened: MLX may JIT from then on, after
// which MLX_PTX_CACHE_DIR is read (etchat_set_kernel_cache_dir).
bool g_program_opened = false;

// ---- handle registries ------------------------------------------------------

// Live handles. A handle is not a pointer: it is a never-reused number
// (cast to the opaque pointer type), so a stale handle cannot alias a newer
// object, and a stale or foreign handle is reported instead of
// dereferenced. Only the library's thread touches the registries, so the
// objects are created, used and freed there. Never destroyed: handles still
// open at exit are left to the OS rather than torn down during static
// destruction, after the runtime's own statics may be gone.
template <class T>
class Registry {
 public:
  T* add(std::unique_ptr<T> obj) {
    next_ += 16;
    live_.emplace(next_, std::move(obj));
    return reinterpret_cast<T*>(next_);
  }
  T* get(const T* h, const char* what) const {
    if (h == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, std::string(what) + " handle is NULL");
    }
    auto it = live_.find(reinterpret_cast<uintptr_t>(h));
    if (it == live_.end()) {
      fail(ETCHAT_ERR_CLOSED, std::string(what) + " is closed or unknown");
    }
    return it->second.get();
  }
  std::unique_ptr<T> take(const T* h) {
    auto it = live_.find(reinterpret_cast<uintptr_t>(h));
    if (it == live_.end()) {
      return nullptr;
    }
    std::unique_ptr<T> p = std::move(it->second);
    live_.erase(it);
    return p;
  }

 private:
  uintptr_t next_ = 0x10000;
  std::unordered_map<uintptr_t, std::unique_ptr<T>> live_;
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

// Checks the config's layers against the layout the program publishes:
// the geometry is the file's (windows are policy and may differ).
void check_layout(const etchat::CacheSpec& spec, const etchat::ProgramLayout& l) {
  const size_t n = l.kv_heads.size();
  if (spec.layers.size() != n) {
    fail(
        ETCHAT_ERR_INVALID_ARGUMENT,
        "the cache config has " + std::to_string(spec.layers.size()) +
            " layers but the program publishes " + std::to_string(n) +
            " caches (get_n_caches)");
  }
  for (size_t i = 0; i < n; ++i) {
    const etchat::LayerSpec& g = spec.layers[i];
    if (g.kv_heads != l.kv_heads[i] || g.head_dim != l.head_dims[i]) {
      fail(
          ETCHAT_ERR_INVALID_ARGUMENT,
          "layer " + std::to_string(i) + ": the cache config says kv_heads " +
              std::to_string(g.kv_heads) + ", head_dim " +
              std::to_string(g.head_dim) + " but the program publishes " +
              std::to_string(l.kv_heads[i]) + ", " +
              std::to_string(l.head_dims[i]) +
              " (get_kv_heads, get_head_dims)");
    }
  }
}

// The ring bookkeeping of an off-graph session (see etchat_session_rewind).
void init_rings(etchat_session& s, const etchat::CacheSpec& spec) {
  const size_t n = spec.layers.size();
  s.ring_rows.assign(n, 0);
  s.ring_window.assign(n, 0);
  s.oldest.assign(n, 0);
  for (size_t i = 0; i < n; ++i) {
    const etchat::LayerSpec& l = spec.layers[i];
    if (l.kind != ETCHAT_LAYER_RING) {
      continue;
    }
    const int32_t step = spec.max_write > 0 ? spec.max_write : l.window;
    s.ring_window[i] = l.window;
    s.ring_rows[i] = l.window + step - 1;
    s.max_step = s.max_step == 0 ? step : std::min(s.max_step, step);
  }
}

// The shortest non-zero length a rewind may reach: a ring of window w
// holding positions from oldest on serves a next step at n only if its
// window n-w+1 ... n-1 is still there.
int32_t ring_floor(const etchat_session& s) {
  int32_t floor = 0;
  for (size_t i = 0; i < s.oldest.size(); ++i) {
    if (s.ring_rows[i] > 0 && s.ring_window[i] > 1 && s.oldest[i] > 0) {
      floor = std::max(floor, s.oldest[i] + s.ring_window[i] - 1);
    }
  }
  return floor;
}

// Checks an off-graph step before anything runs: a step the cache cannot
// take would otherwise fail inside the graph after some layers committed
// their writes (Error::Internal, the cache left inconsistent).
void check_step(const etchat_session& s, const int64_t* positions, int32_t n) {
  for (int32_t i = 0; i < n; ++i) {
    if (positions[i] != static_cast<int64_t>(s.length) + i) {
      fail(
          ETCHAT_ERR_INVALID_ARGUMENT,
          "position " + std::to_string(positions[i]) + " at index " +
              std::to_string(i) + ": a step must continue the cache, at " +
              std::to_string(s.length) + ", " + std::to_string(s.length + 1) +
              ", ... (the cache holds " + std::to_string(s.length) +
              " tokens; rewind first to go back)");
    }
  }
  if (s.max_step > 0 && n > s.max_step) {
    fail(
        ETCHAT_ERR_INVALID_ARGUMENT,
        "a step of " + std::to_string(n) +
            " tokens exceeds max_write " + std::to_string(s.max_step) +
            " of the sliding-window caches (split it into steps of at most " +
            std::to_string(s.max_step) + ")");
  }
}

// After a step that failed inside the runtime: ExecuTorch may have run
// some layers, whose ring writes then overwrote cells, while the length
// stays where it was. Count those writes (oldest moves as if the step had
// run to last), so the ring rule refuses rewinds into overwritten cells,
// and bring the runtime's cache back to the known length; if it will not
// go there, empty it (length 0 is always consistent).
void resync_after_failed_step(etchat_session& s, int64_t last) noexcept {
  if (!s.backend->has_cache()) {
    return;
  }
  const int32_t end = static_cast<int32_t>(last + 1);
  for (size_t i = 0; i < s.oldest.size(); ++i) {
    if (s.ring_rows[i] > 0) {
      s.oldest[i] = std::max(s.oldest[i], end - s.ring_rows[i]);
    }
  }
  try {
    if (s.length > 0 && s.length >= ring_floor(s) && s.backend->rewind(s.length)) {
      return;
    }
  } catch (...) {
  }
  try {
    s.backend->clear();
  } catch (...) {
  }
  s.length = 0;
  std::fill(s.oldest.begin(), s.oldest.end(), 0);
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
    case ETCHAT_ERR_DEVICE:
      return "no usable device";
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
    g_runtime_used = true;
    g_program_opened = true;
    p->backend = etchat::open_program(path);
    if (p->backend->vocab() <= 0) {
      fail(ETCHAT_ERR_LOAD, "the program's logits have no vocabulary size");
    }
    *out = programs().add(std::move(p));
  });
}

extern "C" ETCHAT_API etchat_status
etchat_program_vocab(etchat_program* program, int64_t* out) {
  return guard("program_vocab", [&] {
    auto* p = programs().get(program, "program");
    if (out == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "out is NULL");
    }
    *out = p->backend->vocab();
  });
}

extern "C" ETCHAT_API etchat_status
etchat_program_close(etchat_program* program) {
  return guard("program_close", [&] { programs().take(program).reset(); });
}

// ===== 3. Session ==========================================================

extern "C" ETCHAT_API etchat_status etchat_session_open(
    etchat_program* program,
    const etchat_cache_config* cfg,
    const etchat_cache_layer* layers,
    int32_t n_layers,
    etchat_session** out) {
  return guard("session_open", [&] {
    auto* p = programs().get(program, "program");
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
    const etchat::ProgramLayout* layout = p->backend->layout();
    if (spec && layout == nullptr) {
      fail(
          ETCHAT_ERR_INVALID_ARGUMENT,
          "the program publishes no off-graph cache layout (get_n_caches): "
          "it keeps its KV cache in the graph; open it without a cache config");
    }
    if (!spec && layout != nullptr) {
      fail(
          ETCHAT_ERR_INVALID_ARGUMENT,
          "the program is off-graph (get_n_caches = " +
              std::to_string(layout->kv_heads.size()) +
              "): the runtime owns its KV cache; open it with a cache config");
    }
    if (spec) {
      check_layout(*spec, *layout);
    }
    auto s = std::make_unique<etchat_session>();
    s->vocab = p->backend->vocab();
    s->backend = p->backend->open_session(spec ? &*spec : nullptr);
    if (!s->backend) {
      fail(ETCHAT_ERR_INTERNAL, "the backend opened no session");
    }
    s->capacity =
        s->backend->has_cache() ? s->backend->capacity() : p->backend->max_ctx();
    if (spec) {
      init_rings(*s, *spec);
    }
    *out = sessions().add(std::move(s));
  });
}

namespace {

// etchat_session_forward's body; with view (etchat_session_forward_view)
// float32 logits are not copied: *view points at them in the backend's
// output, which stays alive until the session's next forward or close.
etchat_status forward_impl(
    etchat_session* session,
    const int64_t* ids,
    const int64_t* positions,
    int32_t n,
    float* logits,
    int64_t logits_cap,
    int32_t all_rows,
    const float** view,
    int64_t* written) {
  const bool timed = etchat::timing_on();
  etchat_step_timing tm{};
  const etchat_status status = guard("forward", [&] {
    const int64_t b0 = timed ? etchat::now_ns() : 0;
    auto* s = sessions().get(session, "session");
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
    if (s->backend->has_cache()) {
      check_step(*s, positions, n);
    }
    const int64_t need = (all_rows ? static_cast<int64_t>(n) : 1) * s->vocab;
    if (logits_cap < need) {
      fail(
          ETCHAT_ERR_INVALID_ARGUMENT,
          "logits buffer holds " + std::to_string(logits_cap) +
              " floats, need " + std::to_string(need));
    }

    etchat::LogitsView v;
    const int64_t b1 = timed ? etchat::now_ns() : 0;
    try {
      v = s->backend->forward(ids, positions, n);
    } catch (...) {
      resync_after_failed_step(*s, last);
      throw;
    }
    if (v.data == nullptr || v.vocab != s->vocab) {
      fail(
          ETCHAT_ERR_EXECUTE,
          "forward returned rows of " + std::to_string(v.vocab) +
              " logits, the method declares " + std::to_string(s->vocab));
    }
    if (v.rows < 1) {
      fail(ETCHAT_ERR_EXECUTE, "forward returned no logits rows");
    }
    const int64_t b2 = timed ? etchat::now_ns() : 0;
    // The step ran, so the cache holds it whatever the copy below does;
    // its writes overwrote, in each ring, the cells ring_rows before them.
    s->length = std::max(s->length, static_cast<int32_t>(last + 1));
    for (size_t i = 0; i < s->oldest.size(); ++i) {
      if (s->ring_rows[i] > 0) {
        s->oldest[i] = std::max(s->oldest[i], s->length - s->ring_rows[i]);
      }
    }
    if (all_rows && v.rows != n) {
      fail(
          ETCHAT_ERR_UNSUPPORTED,
          "the program returns " + std::to_string(v.rows) +
              " logits rows for " + std::to_string(n) +
              " tokens; all rows are not available");
    }
    const int64_t rows = all_rows ? v.rows : 1;
    const int64_t b3 = timed ? etchat::now_ns() : 0;
    if (view != nullptr && v.type == etchat::LogitsType::kFloat32) {
      *view = static_cast<const float*>(v.data) + (v.rows - rows) * v.vocab;
    } else {
      copy_logits(v, v.rows - rows, rows, logits);
      if (view != nullptr) {
        *view = logits;
      }
    }
    *written = rows * v.vocab;
    if (timed) {
      tm.checks_ns = b1 - b0;
      tm.inputs_ns = v.inputs_ns;
      tm.execute_ns = v.execute_ns;
      tm.outputs_ns = v.outputs_ns;
      tm.cache_ns = b3 - b2;
      tm.logits_ns = etchat::now_ns() - b3;
      tm.tokens = n;
    }
  }, timed ? &tm : nullptr);
  if (timed && status == ETCHAT_OK) {
    t_timing = tm;
  }
  return status;
}

} // namespace

extern "C" ETCHAT_API etchat_status etchat_session_forward(
    etchat_session* session,
    const int64_t* ids,
    const int64_t* positions,
    int32_t n,
    float* logits,
    int64_t logits_cap,
    int32_t all_rows,
    int64_t* written) {
  return forward_impl(
      session, ids, positions, n, logits, logits_cap, all_rows, nullptr, written);
}

extern "C" ETCHAT_API etchat_status etchat_session_forward_view(
    etchat_session* session,
    const int64_t* ids,
    const int64_t* positions,
    int32_t n,
    float* logits,
    int64_t logits_cap,
    int32_t all_rows,
    const float** out,
    int64_t* written) {
  if (out == nullptr) {
    t_last_error = "forward: out is NULL";
    return ETCHAT_ERR_INVALID_ARGUMENT;
  }
  return forward_impl(
      session, ids, positions, n, logits, logits_cap, all_rows, out, written);
}

extern "C" ETCHAT_API etchat_status
etchat_session_rewind(etchat_session* session, int32_t new_len) {
  return guard("rewind", [&] {
    auto* s = sessions().get(session, "session");
    if (!s->backend->has_cache()) {
      fail(ETCHAT_ERR_UNSUPPORTED, "an in-graph program cannot rewind");
    }
    if (new_len < 0 || new_len > s->length) {
      fail(
          ETCHAT_ERR_REWIND_REFUSED,
          "cannot rewind from " + std::to_string(s->length) + " to " +
              std::to_string(new_len));
    }
    // ExecuTorch's SequenceCache checks only length - window, which accepts
    // rewinds into cells a ring has overwritten (max_write < window, or a
    // second rewind): its next step would attend to other tokens' keys.
    const int32_t floor = ring_floor(*s);
    if (new_len != 0 && new_len < floor) {
      fail(
          ETCHAT_ERR_REWIND_REFUSED,
          "a sliding-window cache has overwritten cells that length " +
              std::to_string(new_len) + " needs (shortest rewind now " +
              std::to_string(floor) + ", or 0)");
    }
    if (new_len == 0) {
      // SequenceCache refuses 0 once a ring has evicted; emptying is a
      // clear, and always possible.
      s->backend->clear();
    } else if (!s->backend->rewind(new_len)) {
      fail(
          ETCHAT_ERR_REWIND_REFUSED,
          "a sliding-window cache no longer holds the cells for length " +
              std::to_string(new_len) + " (the runtime's cache refused it)");
    }
    s->length = new_len;
    for (int32_t& o : s->oldest) {
      o = std::min(o, new_len);
    }
  });
}

extern "C" ETCHAT_API etchat_status
etchat_session_clear(etchat_session* session) {
  return guard("clear", [&] {
    auto* s = sessions().get(session, "session");
    if (!s->backend->has_cache()) {
      fail(ETCHAT_ERR_UNSUPPORTED, "an in-graph program cannot clear its cache");
    }
    s->backend->clear();
    s->length = 0;
    std::fill(s->oldest.begin(), s->oldest.end(), 0);
  });
}

extern "C" ETCHAT_API etchat_status
etchat_session_length(etchat_session* session, int32_t* out) {
  return guard("length", [&] {
    auto* s = sessions().get(session, "session");
    if (out == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "out is NULL");
    }
    *out = s->length;
  });
}

extern "C" ETCHAT_API etchat_status
etchat_session_capacity(etchat_session* session, int32_t* out) {
  return guard("capacity", [&] {
    auto* s = sessions().get(session, "session");
    if (out == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "out is NULL");
    }
    *out = s->capacity;
  });
}

extern "C" ETCHAT_API etchat_status
etchat_session_can_extend(etchat_session* session, int32_t n, int32_t* out) {
  return guard("can_extend", [&] {
    auto* s = sessions().get(session, "session");
    if (out == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "out is NULL");
    }
    if (n < 0) {
      *out = 0;
      return;
    }
    if (s->backend->has_cache()) {
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
  return guard("session_close", [&] { sessions().take(session).reset(); });
}

// ===== 6. Step timing (before 4: guard's callers above use it) ===========

bool etchat::timing_on() noexcept {
  return g_timing.load(std::memory_order_relaxed);
}

extern "C" ETCHAT_API etchat_status etchat_set_timing(int32_t on) {
  g_timing.store(on != 0, std::memory_order_relaxed);
  return ETCHAT_OK;
}

extern "C" ETCHAT_API etchat_status
etchat_last_timing(etchat_step_timing* out) {
  if (out == nullptr) {
    t_last_error = "last_timing: out is NULL";
    return ETCHAT_ERR_INVALID_ARGUMENT;
  }
  *out = t_timing;
  return ETCHAT_OK;
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

extern "C" ETCHAT_API etchat_status
etchat_memory_limits_get(etchat_memory_limits* out) {
  return guard("memory_limits", [&] {
    if (out == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "out is NULL");
    }
    const etchat::MemoryLimits m = etchat::runtime_memory_limits();
    g_runtime_used = true; // the device is up: a metallib path is too late
    etchat_memory_limits r{};
    r.working_set_bytes = m.working_set;
    const size_t n = std::min(sizeof r.source - 1, m.source.size());
    std::memcpy(r.source, m.source.data(), n);
    *out = r;
  });
}

extern "C" ETCHAT_API etchat_status etchat_clear_cache(void) {
  return guard("clear_cache", [&] { etchat::runtime_clear_cache(); });
}

extern "C" ETCHAT_API etchat_status
etchat_set_wired_limit(int64_t bytes, int64_t* previous) {
  return guard("set_wired_limit", [&] {
    if (bytes < 0) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "the wired limit must not be negative");
    }
    const etchat::MemoryLimits m = etchat::runtime_memory_limits();
    if (m.working_set > 0 && bytes > m.working_set) {
      fail(
          ETCHAT_ERR_INVALID_ARGUMENT,
          "a wired limit of " + std::to_string(bytes) +
              " bytes is above the working set (" +
              std::to_string(m.working_set) + ")");
    }
    const int64_t prev = etchat::runtime_set_wired_limit(bytes);
    if (previous != nullptr) {
      *previous = prev;
    }
  });
}

extern "C" ETCHAT_API etchat_status
etchat_shared_weights_get(etchat_shared_weights* out) {
  return guard("shared_weights", [&] {
    if (out == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "out is NULL");
    }
    const etchat::SharedWeightsStats st = etchat::shared_weights_stats();
    *out = etchat_shared_weights{st.models, st.buffers, st.bytes};
  });
}

// ===== 5. Device ===========================================================

namespace {
void copy_str(char* dst, size_t cap, const std::string& src) {
  const size_t n = std::min(cap - 1, src.size());
  std::memcpy(dst, src.data(), n);
  dst[n] = '\0';
}
} // namespace

extern "C" ETCHAT_API etchat_status etchat_device(etchat_device_info* out) {
  return guard("device", [&] {
    if (out == nullptr) {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "out is NULL");
    }
    // Bringing the device up is what this call is for (the binding makes
    // it right after setting the metallib path, before any program): MLX
    // builds its Metal device (and loads mlx.metallib) or its CUDA context
    // here, so its own reason ("Can not load metallib ...", "No Metal
    // device available") reaches the caller. Left to the first program,
    // MLX's stream table would be sized by a device count that swallowed
    // that reason, and the load would fail with libc++'s bare "vector".
    etchat::DeviceInfo d;
    try {
      d = etchat::runtime_device();
    } catch (const Failure&) {
      throw;
    } catch (const std::exception& e) {
      fail(ETCHAT_ERR_DEVICE, std::string("MLX could not start its device: ") + e.what());
    } catch (...) {
      fail(ETCHAT_ERR_DEVICE, "MLX could not start its device (unknown exception)");
    }
    // The device has read its metallib path: a later one would be ignored.
    g_runtime_used = true;
    etchat_device_info info{};
    copy_str(info.kind, sizeof info.kind, d.kind);
    copy_str(info.name, sizeof info.name, d.name);
    info.memory_bytes = d.memory_bytes;
    *out = info;
  });
}

#ifndef ETCHAT_BUILD_STAMP
#define ETCHAT_BUILD_STAMP ""
#endif

extern "C" ETCHAT_API const char* etchat_build_stamp(void) {
  return ETCHAT_BUILD_STAMP;
}

extern "C" ETCHAT_API etchat_status
etchat_set_metallib_path(const char* path) {
  return guard("set_metallib_path", [&] {
    if (path == nullptr || *path == '\0') {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "path must be given");
    }
    if (g_runtime_used) {
      fail(
          ETCHAT_ERR_INVALID_ARGUMENT,
          "the metallib path must be set before the device is brought up "
          "(etchat_device) or the first program is opened");
    }
    std::FILE* f = std::fopen(path, "rb");
    if (f == nullptr) {
      fail(
          ETCHAT_ERR_DEVICE,
          std::string("mlx.metallib not readable at ") + path);
    }
    std::fclose(f);
    etchat::runtime_set_metallib_path(path);
  });
}

extern "C" ETCHAT_API etchat_status
etchat_set_kernel_cache_dir(const char* dir) {
  return guard("set_kernel_cache_dir", [&] {
    if (dir == nullptr || *dir == '\0') {
      fail(ETCHAT_ERR_INVALID_ARGUMENT, "dir must be given");
    }
    if (g_program_opened) {
      fail(
          ETCHAT_ERR_INVALID_ARGUMENT,
          "the kernel cache folder must be set before the first program is "
          "opened (MLX reads it once, at its first JIT)");
    }
    etchat::runtime_set_kernel_cache_dir(dir);
  });
}
