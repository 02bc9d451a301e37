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

// Points the runtime at mlx.metallib (a no-op without Metal).
void runtime_set_metallib_path(const std::string& path);

// The errors the runtime logged on the calling thread since the last call
// ("; "-separated, bounded), and forgets them. The ABI layer takes them
// before each call (dropping stale ones) and appends them to a failure's
// message.
std::string take_runtime_errors();

} // namespace etchat
