// fake_backend.cpp — a test-only runner backend (inference/native/
// runner_backend.h). The Go tests compile it together with the real C ABI
// layer (inference/native/etchat_runner.cpp) into a shared library, so the
// layer etchat ships runs under the same tests as the C fake
// (fake_runner.c), with the same program format and logits:
//
//     ETCHAT-FAKE vocab=16 [maxctx=64] [ingraph] [reject] [lastonly]
//                 [poison=7] [dtype=fp16|bf16] [throw=N] [throwint=N]
//
// float32 logits: (float)(id*100 + position) + (float)v/1000.
// fp16/bf16 logits: values exactly representable in both (see logit16),
// stored as 16-bit patterns, with +inf in the last column and 2^-20 (an
// fp16 subnormal) in the one before; the ABI layer converts them.
// A token id equal to throw=N makes forward throw std::runtime_error, and
// throwint=N throws an int: the ABI layer must turn both into errors.

#include "runner_backend.h"

#include <atomic>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <sstream>
#include <vector>

namespace {

std::atomic<int> g_live{0};
std::mutex g_cfg_mu;
etchat::CacheSpec g_last_spec;

struct Spec {
  int vocab = 0, maxctx = 0;
  bool ingraph = false, reject = false, lastonly = false;
  long poison = -1, throw_id = -1, throwint_id = -1;
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
  FakeSession(const Spec& p, const etchat::CacheSpec* spec) : prog_(p) {
    ++g_live;
    if (spec != nullptr) {
      cache_ = true;
      spec_ = *spec;
    }
  }
  ~FakeSession() override { --g_live; }

  etchat::LogitsView forward(const int64_t* ids, const int64_t* positions, int32_t n) override {
    for (int32_t i = 0; i < n; ++i) {
      if (ids[i] == prog_.poison) {
        etchat::fail(ETCHAT_ERR_EXECUTE, "forward failed: Error::DelegateInvalidHandle (0x32)");
      }
      if (ids[i] == prog_.throw_id) {
        throw std::runtime_error("fake backend threw");
      }
      if (ids[i] == prog_.throwint_id) {
        throw 42;
      }
    }
    const int rows = prog_.lastonly ? 1 : n;
    const int first = n - rows;
    const int V = prog_.vocab;
    f32_.assign(static_cast<size_t>(rows) * V, 0);
    h16_.assign(static_cast<size_t>(rows) * V, 0);
    int64_t last = 0;
    for (int r = 0; r < rows; ++r) {
      const int64_t id = ids[first + r], pos = positions[first + r];
      for (int v = 0; v < V; ++v) {
        const size_t k = static_cast<size_t>(r) * V + v;
        if (prog_.dtype == 6) {
          f32_[k] = static_cast<float>(id * 100 + pos) + static_cast<float>(v) / 1000.0f;
        } else {
          const float x = logit16(id, pos, v, V);
          h16_[k] = prog_.dtype == 5 ? to_fp16(x) : to_bf16(x);
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
    if (prog_.dtype == 6) {
      view.data = f32_.data();
      view.type = etchat::LogitsType::kFloat32;
    } else {
      view.data = h16_.data();
      view.type = prog_.dtype == 5 ? etchat::LogitsType::kFloat16 : etchat::LogitsType::kBFloat16;
    }
    return view;
  }
  bool has_cache() const override { return cache_; }
  int capacity() const override { return spec_.capacity; }
  bool can_extend(int n) const override { return length_ + n <= spec_.capacity; }
  bool rewind(int new_len) override {
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
  void clear() override { length_ = 0; }

 private:
  Spec prog_;
  bool cache_ = false;
  etchat::CacheSpec spec_;
  int length_ = 0;
  std::vector<float> f32_;
  std::vector<uint16_t> h16_;
};

class FakeProgram final : public etchat::ProgramBackend {
 public:
  explicit FakeProgram(const Spec& s) : s_(s) { ++g_live; }
  ~FakeProgram() override { --g_live; }
  int64_t vocab() const override { return s_.vocab; }
  int32_t max_ctx() const override { return s_.maxctx; }
  std::unique_ptr<etchat::SessionBackend> open_session(const etchat::CacheSpec* spec) override {
    if (spec == nullptr && !s_.ingraph) {
      etchat::fail(ETCHAT_ERR_LOAD,
                   "loading \"forward\" failed: Error::InvalidArgument (0x12) (an off-graph program needs a cache config)");
    }
    if (s_.reject) {
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
    else if (key == "dtype") s.dtype = val == "fp16" ? 5 : val == "bf16" ? 15 : 6;
    else if (key == "ingraph") s.ingraph = true;
    else if (key == "reject") s.reject = true;
    else if (key == "lastonly") s.lastonly = true;
  }
  if (s.vocab <= 0) {
    fail(ETCHAT_ERR_LOAD, "the program has no usable \"forward\" method: Error::InvalidProgram (0x23)");
  }
  return std::make_unique<FakeProgram>(s);
}

void runtime_memory(int64_t* active, int64_t* peak) {
  *active = static_cast<int64_t>(g_live.load()) << 20;
  *peak = *active;
}

void runtime_reset_peak() {}

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
