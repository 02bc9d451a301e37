// runner_backend.h — what the C ABI layer (etchat_runner.cpp) needs from a
// model runtime. backend_executorch.cpp implements it over ExecuTorch's
// Module and the MLX delegate; the Go tests implement it with a fake
// (inference/mlx/testdata/fake_backend.cpp), so the ABI layer itself —
// handle registry, argument checks, error mapping, length tracking, logits
// conversion — runs under the same tests as the Go binding. Nothing here
// includes an ExecuTorch header.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "cache_adapter.h"
#include "etchat_runner.h"

namespace etchat {

// Failure carries a status code and message from anywhere in the library
// to the entry point's guard, which turns it into the C ABI's status and
// thread-local last error. It never leaves the library.
struct Failure : std::runtime_error {
  Failure(etchat_status s, const std::string& msg)
      : std::runtime_error(msg), status(s) {}
  etchat_status status;
};

[[noreturn]] inline void fail(etchat_status s, const std::string& msg) {
  throw Failure(s, msg);
}

// The element type of a logits buffer.
enum class LogitsType { kFloat32, kFloat16, kBFloat16 };

// A backend's logits: rows x vocab elements, row-major, valid until the
// next call on the session.
struct LogitsView {
  const void* data = nullptr;
  LogitsType type = LogitsType::kFloat32;
  int64_t rows = 0;
  int64_t vocab = 0;
  // The backend's parts of the step, in ns, filled only while timing_on()
  // (etchat_set_timing); a backend that does not time them leaves zeros.
  int64_t inputs_ns = 0;
  int64_t execute_ns = 0;
  int64_t outputs_ns = 0;
};

// Whether per-forward timing is on (etchat_set_timing). One relaxed
// atomic load: with it off a backend reads no clock.
bool timing_on() noexcept;

// The clock of the step timing: monotonic, in ns.
inline int64_t now_ns() noexcept {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// The off-graph cache layout a program publishes (get_n_caches and its
// per-cache lists); one entry per cache.
struct ProgramLayout {
  std::vector<int> kv_heads;
  std::vector<int> head_dims;
  std::vector<int> windows; // 0 = flat
};

// Where the runtime computes (etchat_device_info).
struct DeviceInfo {
  std::string kind; // "metal", "cuda" or "cpu"
  std::string name;
  int64_t memory_bytes = 0;
};

// One session's method and (for off-graph programs) cache. The ABI layer
// calls every backend function on its one library thread.
class SessionBackend {
 public:
  virtual ~SessionBackend() = default;
  // Runs n tokens; throws Failure on error.
  virtual LogitsView forward(
      const int64_t* ids,
      const int64_t* positions,
      int32_t n) = 0;
  // The cache's control face; only called when has_cache().
  virtual bool has_cache() const = 0;
  virtual int capacity() const = 0;
  virtual bool can_extend(int n) const = 0;
  virtual bool rewind(int new_len) = 0;
  virtual void clear() = 0;
};

// A loaded program.
class ProgramBackend {
 public:
  virtual ~ProgramBackend() = default;
  // The size of a logits row.
  virtual int64_t vocab() const = 0;
  // The exported context limit, 0 if none (used by in-graph sessions).
  virtual int32_t max_ctx() const = 0;
  // The off-graph cache layout the program publishes; nullptr when it
  // publishes none (an in-graph program).
  virtual const ProgramLayout* layout() const = 0;
  // Opens a session: spec null for in-graph programs.
  virtual std::unique_ptr<SessionBackend> open_session(const CacheSpec* spec) = 0;
};

// Loads the program at path; throws Failure on error.
std::unique_ptr<ProgramBackend> open_program(const std::string& path);

// The runtime's process-wide active and peak memory in bytes.
void runtime_memory(int64_t* active, int64_t* peak);
void runtime_reset_peak();

// The device the runtime computes on.
DeviceInfo runtime_device();

// The memory a model may use on the device (etchat_memory_limits): on
// Metal max_recommended_working_set_size (the GPU's budget, ~65-75% of
// RAM), elsewhere MLX's own memory limit (CPU: 80% of RAM, CUDA: 95% of the
// card's memory). source names which; 0 and "" where nothing is known.
struct MemoryLimits {
  int64_t working_set = 0;
  std::string source;
};
MemoryLimits runtime_memory_limits();

// Empties MLX's buffer cache (freed buffers MLX keeps for reuse).
void runtime_clear_cache();

// Sets MLX's wired limit (Metal's residency set, macOS 15+; a no-op on
// macOS 14, CPU and CUDA) and returns the previous one.
int64_t runtime_set_wired_limit(int64_t bytes);

// Sets MLX_PTX_CACHE_DIR (CUDA's kernel cache, read once at the first JIT)
// unless the user set it; a no-op where MLX has no disk kernel cache.
void runtime_set_kernel_cache_dir(const std::string& dir);

// The shared weight copies alive (shared_weights.h): models with a map,
// buffers and bytes held (each buffer rounded up to 16 KiB).
struct SharedWeightsStats {
  int64_t models = 0;
  int64_t buffers = 0;
  int64_t bytes = 0;
};
SharedWeightsStats shared_weights_stats();

// Points the runtime at mlx.metallib (a no-op without Metal).
void runtime_set_metallib_path(const std::string& path);

// The errors the runtime logged on the calling thread since the last call
// ("; "-separated, bounded), and forgets them. The ABI layer takes them
// before each call (dropping stale ones) and appends them to a failure's
// message.
std::string take_runtime_errors();

} // namespace etchat
