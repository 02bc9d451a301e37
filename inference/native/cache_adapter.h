// cache_adapter.h — the runner's view of ExecuTorch's off-graph KV cache.
//
// ExecuTorch's cache API (extension/llm/cache) changes between commits: the
// pinned commit cff6f4dd32e6 has CacheBuilderRegistry / CacheSession /
// SequenceControl; later commits renamed them (CacheFactory,
// cache::kind::kSingle, InstallGuard, Cache::as<SequenceControl>()). Every
// call into that API lives in ONE implementation file of this interface
// (cache_adapter_cff6f4d.cpp for the pinned commit). CMake picks the file
// from the ExecuTorch headers (cache_api.cmake: CacheBuilderRegistry or
// CacheFactory in cache_registry.h) and stops naming the file to write
// when it has none; ETCHAT_CACHE_ADAPTER overrides the choice. Nothing
// here includes an ExecuTorch header.
#pragma once

#include <memory>
#include <string>
#include <vector>

namespace etchat {

// One layer's geometry and policy (kind 0 = flat, 1 = ring with window).
struct LayerSpec {
  int kind = 0;
  int window = 0;
  int kv_heads = 0;
  int head_dim = 0;
};

// The complete cache configuration, as Go passed it.
struct CacheSpec {
  int capacity = 0;
  int initial_capacity = 0;
  int kv_dtype = 0;  // ExecuTorch ScalarType number
  int max_write = 0; // 0 = unset
  std::vector<LayerSpec> layers;
};

// A cache built for a backend and installed in the process-wide registry
// under key(), which the runner passes to the backend as its cache_key load
// option. Destroying it uninstalls it; it must outlive the method bound to
// it.
class BoundCache {
 public:
  virtual ~BoundCache() = default;
  virtual const std::string& key() const = 0;
  virtual bool can_extend(int n) const = 0;
  virtual int capacity() const = 0;
  // false: new_len grows the sequence or is older than a ring still holds.
  virtual bool rewind(int new_len) = 0;
  virtual void clear() = 0;
};

// Builds the sequence cache ("seq") for backend_id from spec and installs it
// under a fresh unique key. On failure returns nullptr and sets *error.
std::unique_ptr<BoundCache> make_bound_cache(
    const char* backend_id,
    const CacheSpec& spec,
    std::string* error);

} // namespace etchat
