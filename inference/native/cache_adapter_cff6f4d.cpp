// cache_adapter_cff6f4d.cpp — BoundCache over ExecuTorch's cache API as of
// commit cff6f4dd32e630945b7188512c1f2b4f102b05ad (August 2026):
// cache::CacheConfig / LayerConfig / LayerPolicy, CacheBuilderRegistry::build,
// make_unique_key, CacheSession and SequenceControl. This is the only file
// of the runner that names that API.
#include "cache_adapter.h"

#include <executorch/extension/llm/cache/cache.h>
#include <executorch/extension/llm/cache/cache_registry.h>
#include <executorch/runtime/core/error.h>

#include <string>
#include <utility>

namespace etchat {
namespace {

namespace cache = ::executorch::extension::llm::cache;

class SessionCache final : public BoundCache {
 public:
  explicit SessionCache(std::shared_ptr<cache::CacheBase> built)
      : session_(cache::make_unique_key(), std::move(built)) {}

  const std::string& key() const override {
    return session_.key();
  }
  bool can_extend(int n) const override {
    return session_.control()->can_extend(n);
  }
  int capacity() const override {
    return session_.control()->capacity();
  }
  bool rewind(int new_len) override {
    return session_.control()->rewind(new_len);
  }
  void clear() override {
    session_.control()->clear();
  }

 private:
  cache::CacheSession session_; // installs on construction, erases on destruction
};

} // namespace

std::unique_ptr<BoundCache> make_bound_cache(
    const char* backend_id,
    const CacheSpec& spec,
    std::string* error) {
  cache::CacheConfig cfg{};
  cfg.capacity = spec.capacity;
  cfg.n_layers = static_cast<int>(spec.layers.size());
  cfg.kv_dtype = spec.kv_dtype;
  cfg.initial_capacity = spec.initial_capacity;
  if (spec.max_write > 0) {
    cfg.max_write = spec.max_write;
  }
  cfg.layers.reserve(spec.layers.size());
  for (const LayerSpec& l : spec.layers) {
    cache::LayerConfig lc{};
    lc.n_kv_heads = l.kv_heads;
    lc.head_dim = l.head_dim;
    lc.policy = l.kind == 1
        ? cache::LayerPolicy{cache::LayerPolicy::Kind::Ring, l.window}
        : cache::LayerPolicy{cache::LayerPolicy::Kind::Flat, 0};
    cfg.layers.push_back(lc);
  }
  if (!cache::valid(cfg)) {
    *error = "cache config rejected by cache::valid";
    return nullptr;
  }
  auto built =
      cache::CacheBuilderRegistry::global().build(backend_id, "seq", cfg);
  if (!built.ok()) {
    *error = std::string("building the \"seq\" cache for ") + backend_id +
        " failed: " + ::executorch::runtime::to_string(built.error()) +
        " (is the MLX backend linked into the library?)";
    return nullptr;
  }
  std::shared_ptr<cache::CacheBase> base = built.get();
  if (!base || base->as_control() == nullptr) {
    *error = "the cache builder returned no cache with a sequence control";
    return nullptr;
  }
  return std::make_unique<SessionCache>(std::move(base));
}

} // namespace etchat
