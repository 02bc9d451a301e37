// fake_backend.cpp — a test-only runner backend (inference/native/
// runner_backend.h). The Go tests compile it together with the real C ABI
// layer (inference/native/etchat_runner.cpp) into a shared library, so the
// layer etchat ships runs under the same tests as the C fake
// (fake_runner.c), with the same program format and logits:
//
//     ETCHAT-FAKE vocab=16 [maxctx=64] [ingraph] [reject] [lastonly]
//                 [poison=7] [dtype=fp16|bf16] [throw=N] [throwint=N]
//                 [caches=2/8,1/16] [sleep=MS]
//
// sleep=MS makes every forward take MS milliseconds (a long native step).
// Built with -DFAKE_DEVICE_ERROR, bringing the device up throws what MLX's
// Metal device throws for a metallib that will not load, and every program
// load fails the way it did before the device was brought up first: the
// runtime log says only libc++'s "vector".
//
// caches= is the off-graph layout the program publishes (kv_heads/head_dim
// per cache); a program without it publishes none (in-graph). reject and
// poison also "log" an error the way ExecuTorch's ET_LOG would, so the ABI
// layer's capture of runtime errors is tested. The cache's rewind follows
// ExecuTorch's SequenceCache (refused only below length - window), so the
// ABI layer's own ring rule is what the tests see.
//
// Every backend call records its thread and appends to a call log
// (etchat_fake_* below, not part of the ABI): the tests check that the ABI
// layer runs everything on one thread and how often programs and sessions
// are opened.
// float32 logits: (float)(id*100 + position) + (float)v/1000.
// fp16/bf16 logits: values exactly representable in both (see logit16),
// stored as 16-bit patterns, with +inf in the last column and 2^-20 (an
// fp16 subnormal) in the one before; the ABI layer converts them.
// A token id equal to throw=N makes forward throw std::runtime_error, and
// throwint=N throws an int: the ABI layer must turn both into errors.

#include "runner_backend.h"

#include <pthread.h>

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

namespace {

std::atomic<int> g_live{0};
std::mutex g_cfg_mu;
etchat::CacheSpec g_last_spec;

// Threads that ran backend calls, and the call log (under g_cfg_mu).
std::vector<pthread_t> g_threads;
std::string g_log;
std::string g_metallib;
thread_local std::string t_runtime_errors;

void note(const std::string& call) {
  std::lock_guard<std::mutex> lk(g_cfg_mu);
  const pthread_t self = pthread_self();
  bool seen = false;
  for (const pthread_t& t : g_threads) {
    seen = seen || pthread_equal(t, self);
  }
  if (!seen) {
    g_threads.push_back(self);
  }
  g_log += call + "\n";
}

// What ExecuTorch's ET_LOG(Error, ...) would emit on this thread.
void log_error(const std::string& msg) {
  if (!t_runtime_errors.empty()) {
    t_runtime_errors += "; ";
  }
  t_runtime_errors += msg;
}

struct Spec {
  std::string name; // the file's base name, for the call log
  std::unique_ptr<etchat::ProgramLayout> layout;
  int vocab = 0, maxctx = 0;
  bool ingraph = false, reject = false, lastonly = false;
  long poison = -1, throw_id = -1, throwint_id = -1;
  int sleep_ms = 0;
  int dtype = 6; // 6 float32, 5 fp16, 15 bf16
};

uint16_t to_bf16(float f) { // exact for the values used
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  return static_cast<uint16_t>(b >> 16);
}

uint16_t to_fp16(float f) { // exact for the values used (normal, subnormal, inf, 0)
  uint32_t b;
  std::memcpy(&b, &f, sizeof b);
  const uint16_t sign = static_cast<uint16_t>((b >> 16) & 0x8000u);
  if (std::isinf(f)) {
    return sign | 0x7c00u;
  }
  if (f == 0) {
    return sign;
  }
  int e = static_cast<int>((b >> 23) & 0xffu) - 127;
  uint32_t mant = (b & 0x7fffffu) | 0x800000u; // 24 bits with the implicit 1
  if (e >= -14) {
    return sign | static_cast<uint16_t>(((e + 15) << 10) | ((mant >> 13) & 0x3ffu));
  }
  return sign | static_cast<uint16_t>(mant >> (13 + (-14 - e)));
}

// Exactly representable in fp16 and bf16 (at most 8 significant bits).
float logit16(int64_t id, int64_t pos, int v, int vocab) {
  if (v == vocab - 1) {
    return INFINITY;
  }
  if (v == vocab - 2) {
    return std::ldexp(1.0f, -20);
  }
  const float mag = static_cast<float>(id % 16) + static_cast<float>(pos % 16) / 16.0f;
  return (v % 2 ? -1.0f : 1.0f) * std::ldexp(mag, (v % 8) - 4);
}

class FakeSession final : public etchat::SessionBackend {
 public:
  FakeSession(const Spec& p, const etchat::CacheSpec* spec)
      : name_(p.name), vocab_(p.vocab), dtype_(p.dtype), lastonly_(p.lastonly), poison_(p.poison),
        throw_id_(p.throw_id), throwint_id_(p.throwint_id), sleep_ms_(p.sleep_ms) {
    ++g_live;
    if (spec != nullptr) {
      cache_ = true;
      spec_ = *spec;
    }
  }
  ~FakeSession() override {
    note("session_close " + name_);
    --g_live;
  }

  etchat::LogitsView forward(const int64_t* ids, const int64_t* positions, int32_t n) override {
    note("forward " + std::to_string(n));
    if (sleep_ms_ > 0) {
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms_));
    }
    for (int32_t i = 0; i < n; ++i) {
      if (ids[i] == poison_) {
        log_error("MLX execute failed: fake poison token " + std::to_string(poison_));
        etchat::fail(ETCHAT_ERR_EXECUTE, "forward failed: Error::DelegateInvalidHandle (0x32)");
      }
      if (ids[i] == throw_id_) {
        throw std::runtime_error("fake backend threw");
      }
      if (ids[i] == throwint_id_) {
        throw 42;
      }
    }
    const int rows = lastonly_ ? 1 : n;
    const int first = n - rows;
    const int V = vocab_;
    f32_.assign(static_cast<size_t>(rows) * V, 0);
    h16_.assign(static_cast<size_t>(rows) * V, 0);
    int64_t last = 0;
    for (int r = 0; r < rows; ++r) {
      const int64_t id = ids[first + r], pos = positions[first + r];
      for (int v = 0; v < V; ++v) {
        const size_t k = static_cast<size_t>(r) * V + v;
        if (dtype_ == 6) {
          f32_[k] = static_cast<float>(id * 100 + pos) + static_cast<float>(v) / 1000.0f;
        } else {
          const float x = logit16(id, pos, v, V);
          h16_[k] = dtype_ == 5 ? to_fp16(x) : to_bf16(x);
        }
      }
    }
    for (int32_t i = 0; i < n; ++i) {
      last = std::max(last, positions[i]);
    }
    length_ = std::max(length_, static_cast<int>(last + 1));
    etchat::LogitsView view;
    view.rows = rows;
    view.vocab = V;
    if (dtype_ == 6) {
      view.data = f32_.data();
      view.type = etchat::LogitsType::kFloat32;
    } else {
      view.data = h16_.data();
      view.type = dtype_ == 5 ? etchat::LogitsType::kFloat16 : etchat::LogitsType::kBFloat16;
    }
    return view;
  }
  bool has_cache() const override { return cache_; }
  int capacity() const override {
    note("capacity");
    return spec_.capacity;
  }
  bool can_extend(int n) const override {
    note("can_extend");
    return length_ + n <= spec_.capacity;
  }
  // ExecuTorch's SequenceCache::rewind: refused above the length or below
  // length - window of a ring, nothing else.
  bool rewind(int new_len) override {
    note("rewind");
    if (new_len > length_) {
      return false;
    }
    for (const auto& l : spec_.layers) {
      if (l.kind == 1 && length_ > l.window && new_len < length_ - l.window) {
        return false;
      }
    }
    length_ = new_len;
    return true;
  }
  void clear() override {
    note("clear");
    length_ = 0;
  }

 private:
  std::string name_;
  int vocab_, dtype_;
  bool lastonly_;
  long poison_, throw_id_, throwint_id_;
  int sleep_ms_;
  bool cache_ = false;
  etchat::CacheSpec spec_;
  int length_ = 0;
  std::vector<float> f32_;
  std::vector<uint16_t> h16_;
};

class FakeProgram final : public etchat::ProgramBackend {
 public:
  explicit FakeProgram(Spec s) : s_(std::move(s)) { ++g_live; }
  ~FakeProgram() override {
    note("program_close " + s_.name);
    --g_live;
  }
  int64_t vocab() const override { return s_.vocab; }
  int32_t max_ctx() const override { return s_.maxctx; }
  const etchat::ProgramLayout* layout() const override { return s_.layout.get(); }
  std::unique_ptr<etchat::SessionBackend> open_session(const etchat::CacheSpec* spec) override {
    note("session_open " + s_.name);
    if (s_.reject) {
      log_error("Failed to load MLX program: fake: unsupported node FooNode");
      etchat::fail(ETCHAT_ERR_LOAD,
                   "loading \"forward\" failed: Error::DelegateInvalidCompatibility (0x30) (the MLX backend may "
                   "reject this program, or the cache config does not match it)");
    }
    if (spec != nullptr) {
      std::lock_guard<std::mutex> lk(g_cfg_mu);
      g_last_spec = *spec;
    }
    return std::make_unique<FakeSession>(s_, spec);
  }

 private:
  Spec s_;
};

} // namespace

namespace etchat {

std::unique_ptr<ProgramBackend> open_program(const std::string& path) {
  note("program_open " + path.substr(path.find_last_of('/') + 1));
#ifdef FAKE_DEVICE_ERROR
  log_error("Failed to load MLX program: vector");
  fail(ETCHAT_ERR_LOAD, "loading \"forward\" failed: Error::InvalidProgram (0x23)");
#endif
  std::ifstream f(path);
  if (!f) {
    fail(ETCHAT_ERR_LOAD, "loading program " + path + " failed: Error::AccessFailed (0x22)");
  }
  std::string magic;
  f >> magic;
  if (magic != "ETCHAT-FAKE") {
    fail(ETCHAT_ERR_LOAD, "loading program " + path + " failed: Error::InvalidProgram (0x23)");
  }
  Spec s;
  s.name = path.substr(path.find_last_of('/') + 1);
  std::string tok;
  while (f >> tok) {
    const auto eq = tok.find('=');
    const std::string key = tok.substr(0, eq);
    const std::string val = eq == std::string::npos ? "" : tok.substr(eq + 1);
    if (key == "vocab") s.vocab = std::stoi(val);
    else if (key == "maxctx") s.maxctx = std::stoi(val);
    else if (key == "poison") s.poison = std::stol(val);
    else if (key == "throw") s.throw_id = std::stol(val);
    else if (key == "throwint") s.throwint_id = std::stol(val);
    else if (key == "sleep") s.sleep_ms = std::stoi(val);
    else if (key == "dtype") s.dtype = val == "fp16" ? 5 : val == "bf16" ? 15 : 6;
    else if (key == "ingraph") s.ingraph = true;
    else if (key == "reject") s.reject = true;
    else if (key == "lastonly") s.lastonly = true;
    else if (key == "caches") {
      s.layout = std::make_unique<ProgramLayout>();
      std::stringstream ls(val);
      std::string one;
      while (std::getline(ls, one, ',')) {
        const auto slash = one.find('/');
        s.layout->kv_heads.push_back(std::stoi(one.substr(0, slash)));
        s.layout->head_dims.push_back(std::stoi(one.substr(slash + 1)));
        s.layout->windows.push_back(0);
      }
    }
  }
  if (s.vocab <= 0) {
    fail(ETCHAT_ERR_LOAD, "the program has no usable \"forward\" method: Error::InvalidProgram (0x23)");
  }
  return std::make_unique<FakeProgram>(std::move(s));
}

void runtime_memory(int64_t* active, int64_t* peak) {
  *active = static_cast<int64_t>(g_live.load()) << 20;
  *peak = *active;
}

void runtime_reset_peak() {}

DeviceInfo runtime_device() {
  note("device");
#ifdef FAKE_DEVICE_ERROR
  throw std::runtime_error(
      "Can not load metallib from specified location \"/fake/mlx.metallib\": "
      "Invalid library file.");
#endif
#ifdef FAKE_DEVICE_KIND
  return DeviceInfo{FAKE_DEVICE_KIND, "fake GPU", 1 << 30};
#else
  return DeviceInfo{"cpu", "fake CPU", 0};
#endif
}

// FAKE_WORKING_SET (bytes) is the working set this fake reports; 0 (the
// default) reports none, as a library that cannot say.
#ifndef FAKE_WORKING_SET
#define FAKE_WORKING_SET 0
#endif

MemoryLimits runtime_memory_limits() {
  MemoryLimits m;
  m.working_set = static_cast<int64_t>(FAKE_WORKING_SET);
  m.source = m.working_set > 0 ? "memory_limit" : "";
  return m;
}

void runtime_clear_cache() {
  note("clear_cache");
}

int64_t runtime_set_wired_limit(int64_t bytes) {
  static int64_t wired = 0;
  note("wired " + std::to_string(bytes));
  const int64_t prev = wired;
  wired = bytes;
  return prev;
}

void runtime_set_kernel_cache_dir(const std::string& dir) {
  note("kernel_cache_dir " + dir);
}

SharedWeightsStats shared_weights_stats() {
  return SharedWeightsStats{};
}

void runtime_set_metallib_path(const std::string& path) {
  note("set_metallib_path");
  std::lock_guard<std::mutex> lk(g_cfg_mu);
  g_metallib = path;
}

std::string take_runtime_errors() {
  std::string out;
  out.swap(t_runtime_errors);
  return out;
}

} // namespace etchat

// ---- test-only extras (not part of the ABI) ---------------------------------

extern "C" ETCHAT_API int32_t etchat_fake_last_config(etchat_cache_config* cfg, etchat_cache_layer* layers,
                                                      int32_t cap, int32_t* n) {
  std::lock_guard<std::mutex> lk(g_cfg_mu);
  cfg->capacity = g_last_spec.capacity;
  cfg->initial_capacity = g_last_spec.initial_capacity;
  cfg->kv_dtype = g_last_spec.kv_dtype;
  cfg->max_write = g_last_spec.max_write;
  *n = static_cast<int32_t>(g_last_spec.layers.size());
  for (int32_t i = 0; i < *n && i < cap; ++i) {
    const auto& l = g_last_spec.layers[static_cast<size_t>(i)];
    layers[i] = etchat_cache_layer{l.kind, l.window, l.kv_heads, l.head_dim};
  }
  return ETCHAT_OK;
}

extern "C" ETCHAT_API int32_t etchat_fake_live(void) { return g_live.load(); }

// The number of distinct threads that ran backend calls, and whether the
// calling thread is one of them.
extern "C" ETCHAT_API int32_t etchat_fake_threads(int32_t* caller_is_one) {
  std::lock_guard<std::mutex> lk(g_cfg_mu);
  *caller_is_one = 0;
  for (const pthread_t& t : g_threads) {
    if (pthread_equal(t, pthread_self())) {
      *caller_is_one = 1;
    }
  }
  return static_cast<int32_t>(g_threads.size());
}

// Copies the call log (one call per line) into buf (cap bytes, NUL-terminated)
// and clears it; returns its full length.
extern "C" ETCHAT_API int32_t etchat_fake_take_log(char* buf, int32_t cap) {
  std::lock_guard<std::mutex> lk(g_cfg_mu);
  const int32_t n = static_cast<int32_t>(g_log.size());
  if (cap > 0) {
    const size_t k = std::min(static_cast<size_t>(cap - 1), g_log.size());
    std::memcpy(buf, g_log.data(), k);
    buf[k] = '\0';
  }
  g_log.clear();
  return n;
}
