// backend_executorch.cpp — the runner's backend over ExecuTorch: Module,
// the MLX delegate (bound to the off-graph cache through its cache_key
// load option), MLX's memory counters and device, and the capture of
// ExecuTorch's error log (its PAL log hook) into failure messages.
//
// A session's setup follows ExecuTorch's MLX LLM runner (run_llm_hf.cpp):
// load the program but not forward; build the cache from the config Go
// passed and install it under a unique key (cache_adapter); pass that key as
// the MLX backend's cache_key load option (LoadBackendOptionsMap); only then
// load "forward", whose delegate init() looks the cache up by that key.

#include "runner_backend.h"
#include "shared_weights.h"

#include <executorch/backends/mlx/runtime/backend_options.h>
#include <executorch/extension/module/module.h>
#include <executorch/extension/tensor/tensor.h>
#include <executorch/runtime/backend/backend_options_map.h>
#include <executorch/runtime/backend/options.h>
#include <executorch/runtime/platform/platform.h>

#ifndef ETCHAT_WITH_MLX
#define ETCHAT_WITH_MLX 1
#endif
#if ETCHAT_WITH_MLX
#include <mlx/backend/metal/metal.h>
#include <mlx/device.h>
#include <mlx/memory.h>
#include <mlx/stream.h>
#endif

#include <algorithm>
#include <cstdio>
#include <cstdlib> // setenv
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace etchat {
namespace {

using ::executorch::extension::make_tensor_ptr;
using ::executorch::extension::Module;
using ::executorch::runtime::Error;
using ::executorch::runtime::EValue;
namespace mlx_opts = ::executorch::backends::mlx;

// ---- ExecuTorch's log ------------------------------------------------------

// Errors ExecuTorch logged on this thread (the library's thread) since the
// ABI layer last took them: the MLX delegate explains a refused program or
// a failed execute only there ("MLX execute failed: ...", "Missing
// operator: ..."), and the status it returns says little. Bounded.
thread_local std::string t_logged;

// ExecuTorch's log hook: errors are kept for the failing call's message
// and still printed; info and debug lines are dropped (a chat app's stderr
// is no place for them).
void emit_log(
    et_timestamp_t /*timestamp*/,
    et_pal_log_level_t level,
    const char* filename,
    const char* /*function*/,
    size_t line,
    const char* message,
    size_t length) {
  if (level != kError && level != kFatal) {
    return;
  }
  while (length > 0 &&
         (message[length - 1] == '\n' || message[length - 1] == '\r')) {
    --length;
  }
  std::fprintf(
      stderr,
      "executorch %c %s:%zu] %.*s\n",
      static_cast<char>(level),
      filename != nullptr ? filename : "?",
      line,
      static_cast<int>(length),
      message);
  try {
    constexpr size_t kMax = 2048;
    if (t_logged.size() < kMax) {
      if (!t_logged.empty()) {
        t_logged += "; ";
      }
      t_logged.append(message, std::min(length, kMax - t_logged.size()));
    }
  } catch (...) {
  }
}

void install_log_hook() {
  static std::once_flag once;
  std::call_once(once, [] {
    ::executorch::runtime::register_pal(
        ::executorch::runtime::PalImpl::create(&emit_log, __FILE__));
  });
}

// "Error::DelegateInvalidCompatibility (0x30)".
std::string et_error(Error e) {
  char code[16];
  std::snprintf(code, sizeof code, " (0x%x)", static_cast<unsigned>(e));
  return std::string(::executorch::runtime::to_string(e)) + code;
}

std::unique_ptr<Module> load_module(const std::string& path) {
  install_log_hook();
  // Constants come from the model's shared, 16 KiB-aligned copies
  // (shared_weights.h) unless ETCHAT_SHARED_WEIGHTS=0; everything else as
  // Module's own Mmap mode loads it.
  auto m = shared_weights_enabled()
      ? std::make_unique<Module>(make_sharing_loader(path))
      : std::make_unique<Module>(path, Module::LoadMode::Mmap);
  // InternalConsistency runs the flatbuffer verifier: Minimal (the
  // default) checks only the header, so a damaged file would be parsed
  // without bounds checks.
  const Error err =
      m->load(::executorch::runtime::Program::Verification::InternalConsistency);
  if (err != Error::Ok) {
    fail(ETCHAT_ERR_LOAD, "loading program " + path + " failed: " + et_error(err));
  }
  return m;
}

// A constant method's int, if the program has it. Constant methods carry
// no delegate, so they run with only the program loaded.
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

// A constant method's Int tensor, as the export publishes the per-cache
// lists (get_kv_heads, get_head_dims, get_windows).
std::optional<std::vector<int>> const_ints(Module& m, const char* name) {
  auto names = m.method_names();
  if (!names.ok() || names->count(name) == 0) {
    return std::nullopt;
  }
  auto r = m.execute(name);
  if (!r.ok() || r->empty() || !r->at(0).isTensor()) {
    return std::nullopt;
  }
  const auto& t = r->at(0).toTensor();
  if (t.scalar_type() != ::executorch::aten::ScalarType::Int) {
    return std::nullopt;
  }
  const int32_t* p = t.const_data_ptr<int32_t>();
  return std::vector<int>(p, p + t.numel());
}

// The off-graph layout, if the program publishes one. A program that has
// get_n_caches but inconsistent lists is refused: its cache cannot be
// built to match.
std::optional<ProgramLayout> read_layout(Module& m) {
  const auto n = const_int(m, "get_n_caches");
  if (!n) {
    return std::nullopt;
  }
  ProgramLayout l;
  const char* names[] = {"get_kv_heads", "get_head_dims", "get_windows"};
  std::vector<int>* dst[] = {&l.kv_heads, &l.head_dims, &l.windows};
  for (int i = 0; i < 3; ++i) {
    auto xs = const_ints(m, names[i]);
    if (!xs || static_cast<int64_t>(xs->size()) != *n) {
      fail(
          ETCHAT_ERR_LOAD,
          std::string("the program publishes get_n_caches = ") +
              std::to_string(*n) + " but " + names[i] +
              (xs ? " has " + std::to_string(xs->size()) + " entries"
                  : " is missing or not an Int tensor"));
    }
    *dst[i] = std::move(*xs);
  }
  return l;
}

// Why loading "forward" failed, for the user: the status alone is often
// Error::InvalidProgram whatever the cause; the delegate's own reason is in
// the runtime log the ABI layer appends.
[[noreturn]] void fail_forward_load(Error err, bool off_graph) {
  std::string why = "loading \"forward\" failed: " + et_error(err);
  etchat_status status = ETCHAT_ERR_LOAD;
  switch (err) {
    case Error::OperatorMissing:
      why +=
          " (the program calls an operator this library was built without: "
          "the runtime log names it; in-graph exports need ExecuTorch's "
          "kernel library, e.g. the optimized kernels, linked in)";
      break;
    case Error::NotFound:
      if (t_logged.find("not available") != std::string::npos) {
        status = ETCHAT_ERR_DEVICE;
        why +=
            " (the MLX backend is not available here: no Metal device, or a "
            "library built without MLX's CPU backend)";
      }
      break;
    case Error::InvalidProgram:
    case Error::DelegateInvalidCompatibility:
      if (t_logged.find("metallib") != std::string::npos) {
        status = ETCHAT_ERR_DEVICE;
        why += " (MLX could not load mlx.metallib: see the runtime log)";
      } else {
        why += off_graph
            ? " (the MLX backend refused the program or its cache binding)"
            : " (the MLX backend refused the program)";
      }
      break;
    default:
      break;
  }
  fail(status, why);
}

int64_t forward_vocab(Module& m) {
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
        "\"forward\"'s first output is not a tensor: " + et_error(out.error()));
  }
  auto sizes = out->sizes();
  if (sizes.size() == 0 || sizes[sizes.size() - 1] <= 0) {
    fail(ETCHAT_ERR_LOAD, "\"forward\"'s logits have no vocabulary dimension");
  }
  return sizes[sizes.size() - 1];
}

class ETSession final : public SessionBackend {
 public:
  // Declared before module_: members are destroyed in reverse order, so
  // the method bound to the cache goes first and the cache outlives it.
  std::unique_ptr<BoundCache> cache;
  std::unique_ptr<Module> module_;
  std::vector<EValue> outputs; // keeps the last logits alive

  LogitsView forward(const int64_t* ids, const int64_t* positions, int32_t n)
      override {
    const bool timed = timing_on();
    const int64_t t0 = timed ? now_ns() : 0;
    auto in = make_tensor_ptr({1, n}, std::vector<int64_t>(ids, ids + n));
    auto pos =
        make_tensor_ptr({n}, std::vector<int64_t>(positions, positions + n));
    outputs.clear();
    const int64_t t1 = timed ? now_ns() : 0;
    auto result = module_->execute("forward", {in, pos});
    const int64_t t2 = timed ? now_ns() : 0;
    if (!result.ok()) {
      fail(ETCHAT_ERR_EXECUTE, "forward failed: " + et_error(result.error()));
    }
    outputs = std::move(*result);
    if (outputs.empty() || !outputs[0].isTensor()) {
      fail(ETCHAT_ERR_EXECUTE, "forward returned no logits tensor");
    }
    const auto& t = outputs[0].toTensor();
    LogitsView v;
    v.vocab = t.dim() > 0 ? t.size(t.dim() - 1) : 0;
    v.rows = v.vocab > 0 ? static_cast<int64_t>(t.numel()) / v.vocab : 0;
    using ST = ::executorch::aten::ScalarType;
    switch (t.scalar_type()) {
      case ST::Float:
        v.type = LogitsType::kFloat32;
        break;
      case ST::Half:
        v.type = LogitsType::kFloat16;
        break;
      case ST::BFloat16:
        v.type = LogitsType::kBFloat16;
        break;
      default:
        fail(
            ETCHAT_ERR_EXECUTE,
            std::string("logits of dtype ") +
                ::executorch::runtime::toString(t.scalar_type()) +
                " are not supported (float, half, bfloat16)");
    }
    v.data = t.const_data_ptr();
    if (timed) {
      v.inputs_ns = t1 - t0;
      v.execute_ns = t2 - t1;
      v.outputs_ns = now_ns() - t2;
    }
    return v;
  }
  bool has_cache() const override {
    return cache != nullptr;
  }
  int capacity() const override {
    return cache->capacity();
  }
  bool can_extend(int n) const override {
    return cache->can_extend(n);
  }
  bool rewind(int new_len) override {
    return cache->rewind(new_len);
  }
  void clear() override {
    cache->clear();
  }
};

class ETProgram final : public ProgramBackend {
 public:
  explicit ETProgram(std::string path) : path_(std::move(path)) {
    module_ = load_module(path_);
    vocab_ = forward_vocab(*module_);
    read_metadata();
    layout_ = read_layout(*module_);
  }

  // The model metadata of both generations, by the table Go's modelinfo
  // reads (metadata.go; docs/inspect.md's compatibility table): the
  // capacity is get_max_ctx_len or #22655's get_max_context_len (two that
  // disagree are refused); get_max_seq_len is the capacity only where
  // neither is published (ExecuTorch's older llama exports) — beside one
  // it is the largest step, which Go passes as the cache's max_write.
  void read_metadata() {
    const auto older = const_int(*module_, "get_max_ctx_len");
    const auto newer = const_int(*module_, "get_max_context_len");
    if (older && newer && *older != *newer) {
      fail(
          ETCHAT_ERR_LOAD,
          "get_max_ctx_len = " + std::to_string(*older) +
              " and get_max_context_len = " + std::to_string(*newer) +
              " disagree: both name the KV-cache capacity; re-export the "
              "model, or publish one of them");
    }
    std::optional<int64_t> ctx = older ? older : newer;
    if (!ctx) {
      ctx = const_int(*module_, "get_max_seq_len");
    }
    if (ctx && *ctx > 0 && *ctx <= INT32_MAX) {
      max_ctx_ = static_cast<int32_t>(*ctx);
    }
    // The runner of #22655 checks the vocabulary against forward's output.
    const auto vocab = const_int(*module_, "get_vocab_size");
    if (vocab && *vocab != vocab_) {
      fail(
          ETCHAT_ERR_LOAD,
          "get_vocab_size = " + std::to_string(*vocab) +
              " but forward's logits are " + std::to_string(vocab_) +
              " wide: the file disagrees with itself; re-export it");
    }
    // Mode 1 (the last row only) needs nothing here: forward's rows are
    // read from its output. Mode 2 takes a third input this library does
    // not feed.
    const auto mode = const_int(*module_, "get_logits_to_keep_mode");
    if (mode && *mode == 2) {
      fail(
          ETCHAT_ERR_UNSUPPORTED,
          "the program selects its logits rows through a third forward "
          "input (get_logits_to_keep_mode 2), which this library does not "
          "feed");
    }
  }

  int64_t vocab() const override {
    return vocab_;
  }
  int32_t max_ctx() const override {
    return max_ctx_;
  }
  const ProgramLayout* layout() const override {
    return layout_ ? &*layout_ : nullptr;
  }

  std::unique_ptr<SessionBackend> open_session(const CacheSpec* spec) override {
    auto s = std::make_unique<ETSession>();
    // 1. The program, without forward: the cache must exist before
    //    forward's backend init reads its key. Each session has its own
    //    Module, so its forward is bound to its own cache.
    s->module_ = load_module(path_);
    ::executorch::runtime::BackendOptions<1> opts;
    ::executorch::runtime::LoadBackendOptionsMap options_map;
    if (spec != nullptr) {
      // 2. Build the cache from the config Go passed and install it under
      //    a unique key (both inside the adapter).
      std::string why;
      s->cache = make_bound_cache(mlx_opts::kMLXBackendId, *spec, &why);
      if (!s->cache) {
        fail(ETCHAT_ERR_LOAD, why);
      }
      // 3. The key becomes the MLX backend's cache_key load option.
      if (opts.set_option(mlx_opts::kCacheKeyKey, s->cache->key().c_str()) !=
              Error::Ok ||
          options_map.set_options(mlx_opts::kMLXBackendId, opts.view()) !=
              Error::Ok) {
        fail(ETCHAT_ERR_LOAD, "setting the MLX backend's cache_key failed");
      }
    }
    // 4. Now forward: the delegate's init() looks the cache up by its key.
    const Error err = s->module_->load_method(
        "forward",
        /*planned_memory=*/nullptr,
        /*event_tracer=*/nullptr,
        spec != nullptr ? &options_map : nullptr);
    if (err != Error::Ok) {
      fail_forward_load(err, spec != nullptr);
    }
    return s;
  }

 private:
  std::string path_;
  std::unique_ptr<Module> module_; // program loaded; forward not loaded
  int64_t vocab_ = 0;
  int32_t max_ctx_ = 0;
  std::optional<ProgramLayout> layout_;
};

} // namespace

std::unique_ptr<ProgramBackend> open_program(const std::string& path) {
#if defined(ETCHAT_MLX_CUDA)
  // cuDNN's SDPA builds a plan for each new query/key length (~20 ms at a
  // new depth) and decodes slower at depth than MLX's own sdpa_vector on an
  // H200 (docs/cuda-report.md, 2026-12-02 second section). MLX reads this
  // once, at the first attention; a value the user set wins.
  setenv("MLX_CUDA_USE_CUDNN_SDPA", "0", 0);
#endif
  return std::make_unique<ETProgram>(path);
}

void runtime_memory(int64_t* active, int64_t* peak) {
#if ETCHAT_WITH_MLX
  *active = static_cast<int64_t>(::mlx::core::get_active_memory());
  *peak = static_cast<int64_t>(::mlx::core::get_peak_memory());
#else
  *active = 0;
  *peak = 0;
#endif
}

void runtime_reset_peak() {
#if ETCHAT_WITH_MLX
  ::mlx::core::reset_peak_memory();
#endif
}

DeviceInfo runtime_device() {
  DeviceInfo out;
  out.kind = "cpu";
#if ETCHAT_WITH_MLX
  namespace mx = ::mlx::core;
  const mx::Device d = mx::default_device();
  if (d.type == mx::Device::gpu) {
#ifdef __APPLE__
    out.kind = "metal";
#else
    out.kind = "cuda"; // MLX's only GPU backend off Apple
#endif
  }
  // device_info builds the device (Metal: the MTL device and mlx.metallib;
  // CUDA: its context) and throws MLX's own reason when it cannot; the
  // default stream then sizes this thread's stream table with the device
  // counted, before any delegate handle asks for it.
  const auto& info = mx::device_info(d);
  (void)mx::default_stream(d);
  if (auto it = info.find("device_name"); it != info.end()) {
    if (const auto* s = std::get_if<std::string>(&it->second)) {
      out.name = *s;
    }
  }
  for (const char* key : {"memory_size", "total_memory"}) {
    auto it = info.find(key);
    if (it == info.end()) {
      continue;
    }
    if (const auto* n = std::get_if<size_t>(&it->second)) {
      out.memory_bytes = static_cast<int64_t>(*n);
      break;
    }
  }
#endif
  return out;
}

MemoryLimits runtime_memory_limits() {
  MemoryLimits out;
#if ETCHAT_WITH_MLX
  namespace mx = ::mlx::core;
  const mx::Device d = mx::default_device();
  const auto& info = mx::device_info(d);
  if (auto it = info.find("max_recommended_working_set_size");
      d.type == mx::Device::gpu && it != info.end()) {
    if (const auto* n = std::get_if<size_t>(&it->second)) {
      out.working_set = static_cast<int64_t>(*n);
      out.source = "max_recommended_working_set_size";
      return out;
    }
  }
  // CPU: 80% of RAM (MLX's CommonAllocator); CUDA: 95% of the card's.
  out.working_set = static_cast<int64_t>(mx::get_memory_limit());
  out.source = "memory_limit";
#endif
  return out;
}

void runtime_clear_cache() {
#if ETCHAT_WITH_MLX
  ::mlx::core::clear_cache();
#endif
}

int64_t runtime_set_wired_limit(int64_t bytes) {
#if ETCHAT_WITH_MLX
  return static_cast<int64_t>(
      ::mlx::core::set_wired_limit(static_cast<size_t>(bytes)));
#else
  (void)bytes;
  return 0;
#endif
}

void runtime_set_kernel_cache_dir(const std::string& dir) {
  setenv("MLX_PTX_CACHE_DIR", dir.c_str(), 0); // a value the user set wins
}

void runtime_set_metallib_path(const std::string& path) {
#if ETCHAT_WITH_MLX
  ::mlx::core::metal::set_metallib_path(path);
#else
  (void)path;
#endif
}

std::string take_runtime_errors() {
  std::string out;
  out.swap(t_logged);
  return out;
}

} // namespace etchat
