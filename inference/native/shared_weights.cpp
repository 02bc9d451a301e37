// shared_weights.cpp — the per-model, reference-counted map of constant
// segments behind make_sharing_loader (see shared_weights.h).

#include "shared_weights.h"

#include <executorch/extension/data_loader/mmap_data_loader.h>

#include <sys/mman.h>
#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <tuple>
#include <utility>

namespace etchat {
namespace {

using ::executorch::extension::MmapDataLoader;
using ::executorch::runtime::DataLoader;
using ::executorch::runtime::Error;
using ::executorch::runtime::FreeableBuffer;
using ::executorch::runtime::Result;

// Guards the registry, every model's chunk map and the counters. Loads come
// from the library's one thread, but DataLoader::load must be thread-safe.
std::mutex& mu() {
  static std::mutex m;
  return m;
}

// What a file is: device, inode, size and modification time, so a file
// rewritten in place (a re-export) is another model.
using FileKey = std::tuple<uint64_t, uint64_t, int64_t, int64_t, int64_t>;

struct ModelWeights;

// One constant segment's shared copy. Freed when the last FreeableBuffer
// handed out for it is freed.
struct Chunk {
  void* data = nullptr;
  size_t size = 0; // the segment's bytes
  size_t held = 0; // allocated: size rounded up to kWeightPage
  std::shared_ptr<ModelWeights> model; // keeps the model's map alive
  ~Chunk();
};

// A model's chunks by (offset, size) in its file. Kept alive by its chunks
// and its loaders; the registry holds it weakly.
struct ModelWeights {
  FileKey key;
  std::map<std::pair<size_t, size_t>, std::weak_ptr<Chunk>> chunks;
  ~ModelWeights();
};

// The registry and the counters (etchat_shared_weights).
std::map<FileKey, std::weak_ptr<ModelWeights>>& registry() {
  static auto* r = new std::map<FileKey, std::weak_ptr<ModelWeights>>();
  return *r;
}
SharedWeightsStats g_stats; // under mu()

// A zeroed, kWeightPage-aligned anonymous mapping of held bytes (held a
// multiple of kWeightPage), or nullptr. Mapped, not malloc'ed: the copies
// are large and come and go with models, and malloc kept the freed ones
// (glibc raises its mmap threshold after a free), so RSS grew by hundreds
// of KiB per model switch; a mapping goes back to the system at the last
// close. mmap aligns to the system page (16 KiB on Apple silicon, 4 KiB on
// x86 Linux): map one page more and trim.
void* map_aligned(size_t held) {
  const size_t len = held + kWeightPage;
  void* p = ::mmap(nullptr, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    return nullptr;
  }
  const uintptr_t a = reinterpret_cast<uintptr_t>(p);
  const uintptr_t b = (a + kWeightPage - 1) & ~(uintptr_t{kWeightPage} - 1);
  if (b > a) {
    ::munmap(p, b - a);
  }
  if (const size_t tail = (a + len) - (b + held); tail > 0) {
    ::munmap(reinterpret_cast<void*>(b + held), tail);
  }
  return reinterpret_cast<void*>(b);
}

Chunk::~Chunk() {
  ::munmap(data, held);
  std::lock_guard<std::mutex> lk(mu());
  g_stats.buffers--;
  g_stats.bytes -= static_cast<int64_t>(held);
}

ModelWeights::~ModelWeights() {
  std::lock_guard<std::mutex> lk(mu());
  g_stats.models--;
  auto it = registry().find(key);
  if (it != registry().end() && it->second.expired()) {
    registry().erase(it);
  }
}

std::shared_ptr<ModelWeights> model_for(const FileKey& key) {
  std::lock_guard<std::mutex> lk(mu());
  auto& slot = registry()[key];
  if (auto m = slot.lock()) {
    return m;
  }
  auto m = std::make_shared<ModelWeights>();
  m->key = key;
  slot = m;
  g_stats.models++;
  return m;
}

// A FreeableBuffer's free function: drops the buffer's reference.
void release_chunk(void* context, void* /*data*/, size_t /*size*/) {
  delete static_cast<std::shared_ptr<Chunk>*>(context);
}

class SharingLoader final : public DataLoader {
 public:
  SharingLoader(std::unique_ptr<MmapDataLoader> inner, std::shared_ptr<ModelWeights> model)
      : inner_(std::move(inner)), model_(std::move(model)) {}

  Result<FreeableBuffer> load(size_t offset, size_t size, const SegmentInfo& info)
      const override {
    if (info.segment_type != SegmentInfo::Type::Constant || size == 0) {
      return inner_->load(offset, size, info);
    }
    std::shared_ptr<Chunk> c;
    {
      std::lock_guard<std::mutex> lk(mu());
      auto it = model_->chunks.find({offset, size});
      if (it != model_->chunks.end()) {
        c = it->second.lock();
      }
    }
    if (!c) {
      auto made = make_chunk(offset, size, info);
      if (!made.ok()) {
        return made.error();
      }
      c = std::move(*made);
    }
    auto* ref = new std::shared_ptr<Chunk>(c);
    return FreeableBuffer(c->data, c->size, release_chunk, ref);
  }

  Error load_into(size_t offset, size_t size, const SegmentInfo& info, void* buffer)
      const override {
    return inner_->load_into(offset, size, info, buffer);
  }

  Result<size_t> size() const override {
    return inner_->size();
  }

 private:
  // Reads the segment into a new 16 KiB-aligned copy and enters it in the
  // model's map (a copy another thread entered first wins).
  Result<std::shared_ptr<Chunk>> make_chunk(
      size_t offset, size_t size, const SegmentInfo& info) const {
    const size_t held = (size + kWeightPage - 1) / kWeightPage * kWeightPage;
    void* p = map_aligned(held);
    if (p == nullptr) {
      return Error::MemoryAllocationFailed;
    }
    const Error err = inner_->load_into(offset, size, info, p);
    if (err != Error::Ok) {
      ::munmap(p, held);
      return err;
    }
    // The rest of the last page is zero (a fresh mapping).
    auto c = std::make_shared<Chunk>();
    c->data = p;
    c->size = size;
    c->held = held;
    c->model = model_;
    std::shared_ptr<Chunk> first;
    {
      std::lock_guard<std::mutex> lk(mu());
      g_stats.buffers++;
      g_stats.bytes += static_cast<int64_t>(held);
      auto& slot = model_->chunks[{offset, size}];
      first = slot.lock();
      if (!first) {
        slot = c;
      }
    }
    if (first) {
      return first; // c is freed on return (outside the lock), its counts undone
    }
    return c;
  }

  std::unique_ptr<MmapDataLoader> inner_;
  std::shared_ptr<ModelWeights> model_;
};

} // namespace

bool shared_weights_enabled() {
  const char* v = std::getenv("ETCHAT_SHARED_WEIGHTS");
  return v == nullptr || std::strcmp(v, "0") != 0;
}

std::unique_ptr<DataLoader> make_sharing_loader(const std::string& path) {
  auto inner = MmapDataLoader::from(path.c_str(), MmapDataLoader::MlockConfig::NoMlock);
  if (!inner.ok()) {
    fail(ETCHAT_ERR_LOAD, "opening " + path + " failed (error 0x" +
        std::to_string(static_cast<unsigned>(inner.error())) + ")");
  }
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    fail(ETCHAT_ERR_LOAD, "cannot stat " + path);
  }
#ifdef __APPLE__
  const int64_t mtime_ns = static_cast<int64_t>(st.st_mtimespec.tv_nsec);
#else
  const int64_t mtime_ns = static_cast<int64_t>(st.st_mtim.tv_nsec);
#endif
  const FileKey key{static_cast<uint64_t>(st.st_dev), static_cast<uint64_t>(st.st_ino),
                    static_cast<int64_t>(st.st_size), static_cast<int64_t>(st.st_mtime), mtime_ns};
  return std::make_unique<SharingLoader>(
      std::make_unique<MmapDataLoader>(std::move(*inner)), model_for(key));
}

SharedWeightsStats shared_weights_stats() {
  std::lock_guard<std::mutex> lk(mu());
  return g_stats;
}

} // namespace etchat
