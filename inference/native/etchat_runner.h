/*
 * etchat_runner.h — the C ABI of libetchat_runner, etchat's native runner
 * for ExecuTorch programs delegated to the MLX backend (Metal on macOS).
 *
 * etchat (Go) loads the library at run time with purego and calls only the
 * functions declared here. Nothing C++ crosses this boundary: every entry
 * point catches every exception and reports it as a status code plus a
 * message.
 *
 * Conventions
 *   - Every function except etchat_abi_version, etchat_last_error and
 *     etchat_status_name returns an etchat_status; ETCHAT_OK is 0.
 *   - ONE THREAD: the library runs every call that touches ExecuTorch or
 *     MLX on one OS thread of its own, started at the first such call and
 *     kept for the life of the process. MLX streams and command encoders
 *     belong to the thread that created them (MLX >= 0.32), so a session
 *     opened on one thread and run from another would fail ("There is no
 *     Stream(gpu, N) in current thread"); callers may call from any thread,
 *     and each call blocks until the library's thread has run it.
 *   - On failure the message is available from etchat_last_error() on the
 *     CALLING thread (it is thread_local there). Callers that may migrate
 *     between threads (Go goroutines) must pin the thread across the call
 *     and the read of the message.
 *   - Handles are opaque and never reused (they are registry numbers, not
 *     addresses). The library keeps a registry of live handles, so a
 *     stale or foreign handle (use after close) is reported as
 *     ETCHAT_ERR_CLOSED, never dereferenced. Closing NULL or a closed handle
 *     returns ETCHAT_OK (idempotent).
 *   - Sessions may be used from any threads; calls are serialised on the
 *     library's thread, in the order they arrive.
 *   - Out-parameters are written only on success.
 *
 * Sections (the Go binding in inference/mlx has one file per section):
 *   1. version and errors   2. program   3. session   4. memory   5. device
 *   6. step timing (optional: a binding must work without it)
 */
#ifndef ETCHAT_RUNNER_H
#define ETCHAT_RUNNER_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(_WIN32)
#define ETCHAT_API __declspec(dllexport)
#else
#define ETCHAT_API __attribute__((visibility("default")))
#endif

/* ===== 1. Version and errors ============================================ */

/* Bumped on any incompatible change to a signature, struct or semantics. */
/* 2: one library thread; forward checks its step; rewind enforces the ring
 *    rule; ETCHAT_ERR_DEVICE; section 5 (device, metallib path). */
#define ETCHAT_RUNNER_ABI_VERSION 2

typedef int32_t etchat_status;

enum {
  ETCHAT_OK = 0,
  ETCHAT_ERR_INVALID_ARGUMENT = 1, /* bad pointer, size, config, position */
  ETCHAT_ERR_UNSUPPORTED = 2,      /* e.g. rewind on an in-graph model */
  ETCHAT_ERR_REWIND_REFUSED = 3,   /* grows, or a ring evicted the cells */
  ETCHAT_ERR_CACHE_FULL = 4,       /* the step exceeds the capacity */
  ETCHAT_ERR_CLOSED = 5,           /* stale, closed or unknown handle */
  ETCHAT_ERR_LOAD = 6,             /* program/method load or cache build */
  ETCHAT_ERR_EXECUTE = 7,          /* ExecuTorch/MLX failed while running */
  ETCHAT_ERR_INTERNAL = 8,         /* anything else (caught exception) */
  ETCHAT_ERR_DEVICE = 9            /* no usable device: the backend is not
                                      available, or Metal's mlx.metallib is
                                      missing */
};

/* The ABI version the library was built with (ETCHAT_RUNNER_ABI_VERSION).
 * The caller refuses a library whose version differs from its own. */
ETCHAT_API int32_t etchat_abi_version(void);

/* The message of the last failed call on this thread; "" if none. The
 * pointer stays valid until the next call into the library on this thread.
 * Where ExecuTorch logged errors during the failed call (its PAL log hook;
 * e.g. the MLX delegate's reason for refusing a program), they are appended
 * after " | runtime log: ". */
ETCHAT_API const char* etchat_last_error(void);

/* A static name for a status code ("ok", "invalid argument", ...). */
ETCHAT_API const char* etchat_status_name(etchat_status status);

/* ===== 2. Program ======================================================= */

/* A loaded .pte: the program is loaded and verified, its "forward" method
 * is not (each session loads its own, bound to its own cache). */
typedef struct etchat_program etchat_program;

/* Loads the program at path (UTF-8, NUL-terminated) and checks that it has
 * a "forward" method. */
ETCHAT_API etchat_status etchat_program_open(const char* path,
                                             etchat_program** out);

/* The size of a logits row (the last dimension of forward's first output),
 * from the method's metadata. */
ETCHAT_API etchat_status etchat_program_vocab(etchat_program* program,
                                              int64_t* out);

/* Releases the program. Sessions opened from it stay valid. */
ETCHAT_API etchat_status etchat_program_close(etchat_program* program);

/* ===== 3. Session ======================================================= */

/* Layer kinds, as ExecuTorch's cache::LayerPolicy::Kind. */
enum { ETCHAT_LAYER_FLAT = 0, ETCHAT_LAYER_RING = 1 };

/* One cache (layer): geometry from the file, policy from the user. */
typedef struct etchat_cache_layer {
  int32_t kind;     /* ETCHAT_LAYER_FLAT or ETCHAT_LAYER_RING */
  int32_t window;   /* ring: sliding-window size (> 0); flat: 0 */
  int32_t kv_heads; /* > 0 */
  int32_t head_dim; /* > 0 */
} etchat_cache_layer;

/* The cache configuration, passed in full: the library does not re-derive
 * anything from the program. Layers travel in a separate array. */
typedef struct etchat_cache_config {
  int32_t capacity;         /* most tokens the cache admits (> 0) */
  int32_t initial_capacity; /* starting pool rows (>= 0); pools double */
  int32_t kv_dtype;         /* ExecuTorch ScalarType: 5 Half, 6 Float,
                               15 BFloat16 */
  int32_t max_write;        /* largest step; 0 = unset */
} etchat_cache_config;

/* A conversation: its own "forward" method and, for off-graph programs,
 * its own KV cache. */
typedef struct etchat_session etchat_session;

/* Opens a session. For an off-graph program pass cfg and n_layers layers:
 * the library builds the cache through ExecuTorch's cache builder registry
 * (MLX backend, kind "seq"), installs it under a fresh key and loads
 * "forward" with that key as the MLX backend's cache_key option. For an
 * in-graph program pass cfg = NULL, layers = NULL, n_layers = 0.
 * The layers must match the layout the program publishes (get_n_caches,
 * get_kv_heads, get_head_dims): a different count, kv_heads or head_dim is
 * ETCHAT_ERR_INVALID_ARGUMENT naming the layer (windows are policy and may
 * differ). A config for a program that publishes no layout, or none for
 * one that does, is ETCHAT_ERR_INVALID_ARGUMENT too. */
ETCHAT_API etchat_status etchat_session_open(etchat_program* program,
                                             const etchat_cache_config* cfg,
                                             const etchat_cache_layer* layers,
                                             int32_t n_layers,
                                             etchat_session** out);

/* Runs n tokens (ids[i] at cache position positions[i]) and copies logits,
 * converted to float32, into the caller's buffer of logits_cap floats:
 * the last position's row (vocab floats) when all_rows is 0, or every
 * row, row-major n*vocab, when all_rows is non-zero. *written receives the
 * number of floats written. Fails with ETCHAT_ERR_CACHE_FULL (nothing run)
 * when a position reaches the capacity, and with ETCHAT_ERR_UNSUPPORTED
 * when all rows are asked of a program that returns only the last one (the
 * step has then run and is in the cache; nothing is copied).
 * On an off-graph session the step is checked before anything runs
 * (ETCHAT_ERR_INVALID_ARGUMENT, nothing run): positions must be length,
 * length+1, ... (contiguous from the cache's length), and with a ring
 * layer n must not exceed max_write (or, unset, the narrowest window). */
ETCHAT_API etchat_status etchat_session_forward(etchat_session* session,
                                                const int64_t* ids,
                                                const int64_t* positions,
                                                int32_t n, float* logits,
                                                int64_t logits_cap,
                                                int32_t all_rows,
                                                int64_t* written);

/* etchat_session_forward without the copy where none is needed. When the
 * program's logits are float32, *out points at the rows asked for (the
 * last, or all of them) inside the library's own output tensor and the
 * caller's buffer is not touched; logits of another dtype are converted
 * into the caller's buffer, as etchat_session_forward does, and *out is
 * logits. Either way *written floats are readable at *out. Memory inside
 * the library is READ-ONLY and stays valid until this session's next
 * forward (etchat_session_forward or _view, whether it succeeds or not) or
 * its close; the other calls on the session (rewind, clear, length, ...)
 * and other sessions' calls leave it. logits and logits_cap are checked as
 * for etchat_session_forward (the dtype is known only once the step has
 * run). Added without an ABI version bump: optional, a binding that finds
 * it missing calls etchat_session_forward. */
ETCHAT_API etchat_status etchat_session_forward_view(
    etchat_session* session, const int64_t* ids, const int64_t* positions,
    int32_t n, float* logits, int64_t logits_cap, int32_t all_rows,
    const float** out, int64_t* written);

/* Shortens the cache to new_len tokens. ETCHAT_ERR_REWIND_REFUSED if
 * new_len is above the length or a ring layer no longer holds the cells the
 * next step would attend to: a ring of window w keeps window+max_write-1
 * rows, so after steps up to length L it holds positions from
 * oldest = L-(w+max_write-1) on, and a rewind to n > 0 needs
 * n >= oldest+w-1 (the same rule as etchat's inference/kvcache; rewinding
 * never brings overwritten cells back, so oldest only falls with n).
 * Rewinding to 0 is always allowed. ETCHAT_ERR_UNSUPPORTED on an in-graph
 * program. */
ETCHAT_API etchat_status etchat_session_rewind(etchat_session* session,
                                               int32_t new_len);

/* Empties the cache (pools keep their grown size). ETCHAT_ERR_UNSUPPORTED
 * on an in-graph program. */
ETCHAT_API etchat_status etchat_session_clear(etchat_session* session);

/* Tokens in the cache: the highest position run + 1 since the last clear,
 * lowered by rewind. */
ETCHAT_API etchat_status etchat_session_length(etchat_session* session,
                                               int32_t* out);

/* The most tokens the cache admits (the config's capacity; for an in-graph
 * program the exported get_max_ctx_len or get_max_context_len (two that
 * disagree refuse the load), else get_max_seq_len, or 0 if none; beside a
 * capacity name get_max_seq_len is the largest step, not read here). */
ETCHAT_API etchat_status etchat_session_capacity(etchat_session* session,
                                                 int32_t* out);

/* *out = 1 if n more tokens fit, else 0. */
ETCHAT_API etchat_status etchat_session_can_extend(etchat_session* session,
                                                   int32_t n, int32_t* out);

/* Releases the session, its method and its cache. */
ETCHAT_API etchat_status etchat_session_close(etchat_session* session);

/* ===== 4. Memory ======================================================== */

/* MLX's process-wide active and peak memory in bytes (0 where the library
 * was built without MLX). Either pointer may be NULL. */
ETCHAT_API etchat_status etchat_memory(int64_t* active, int64_t* peak);

/* Resets MLX's peak memory to the active memory. */
ETCHAT_API etchat_status etchat_memory_reset_peak(void);

/* The rest of section 4 was added without an ABI version bump: each
 * function is optional, and a binding that finds one missing goes without
 * it (no working set known, nothing cleared or wired, no sharing report). */

/* The memory a model may use on this device, as MLX reports it:
 * working_set_bytes is Metal's max_recommended_working_set_size (the GPU's
 * budget, about 65-75% of RAM) or, on the CPU and CUDA, MLX's memory limit
 * (CPU: 80% of RAM; CUDA: 95% of the card's memory); source names which
 * ("max_recommended_working_set_size" or "memory_limit"). Brings the device
 * up, as etchat_device does. */
typedef struct etchat_memory_limits {
  int64_t working_set_bytes;
  char source[64];
} etchat_memory_limits;
ETCHAT_API etchat_status etchat_memory_limits_get(etchat_memory_limits* out);

/* Empties MLX's buffer cache: the freed buffers MLX keeps for reuse. */
ETCHAT_API etchat_status etchat_clear_cache(void);

/* Sets MLX's wired limit in bytes (0 = none) and writes the previous one to
 * *previous (may be NULL). Only Metal on macOS 15 and later keeps memory
 * resident (a residency set); on macOS 14, the CPU and CUDA it does
 * nothing. ETCHAT_ERR_INVALID_ARGUMENT above the working set. */
ETCHAT_API etchat_status etchat_set_wired_limit(int64_t bytes, int64_t* previous);

/* The weights shared between sessions (one 16 KiB-aligned copy of each
 * constant per model, made at the first session's load and freed with the
 * last session's): models with copies alive, buffers, and bytes held
 * (each buffer's length rounded up to 16 KiB). ETCHAT_SHARED_WEIGHTS=0 in
 * the environment turns the sharing off for programs opened after it. */
typedef struct etchat_shared_weights {
  int64_t models;
  int64_t buffers;
  int64_t bytes;
} etchat_shared_weights;
ETCHAT_API etchat_status etchat_shared_weights_get(etchat_shared_weights* out);

/* ===== 5. Device ======================================================== */

/* Where MLX computes. kind is "metal", "cuda" or "cpu"; name is the
 * device's name as MLX reports it ("" if none); memory_bytes is the
 * device's memory as MLX reports it (Metal's memory_size, CUDA's
 * total_memory; 0 for the CPU). Strings are NUL-terminated, truncated to
 * fit. */
typedef struct etchat_device_info {
  char kind[16];
  char name[256];
  int64_t memory_bytes;
} etchat_device_info;

/* Also BRINGS THE DEVICE UP: MLX builds its Metal device (loading
 * mlx.metallib) or its CUDA context here, so a binding calls it right after
 * etchat_set_metallib_path and before any program, and a device MLX cannot
 * start fails here with ETCHAT_ERR_DEVICE and MLX's own message ("Can not
 * load metallib ...", "No Metal device available ..."), not later as a load
 * error. After it succeeds, etchat_set_metallib_path is refused. */
ETCHAT_API etchat_status etchat_device(etchat_device_info* out);

/* Tells MLX where mlx.metallib is (Metal builds; a no-op elsewhere). Must
 * come before the device is brought up (etchat_device) or the first program
 * is opened: MLX reads it once, when the Metal device is built. A later call
 * is ETCHAT_ERR_INVALID_ARGUMENT; a path that is not a readable file is
 * ETCHAT_ERR_DEVICE. */
ETCHAT_API etchat_status etchat_set_metallib_path(const char* path);

/* The MLX build this library links: scripts/build-native's key for it,
 * which it also writes into mlx.metallib.stamp beside the metallib it
 * installs; "" for a library built without one. MLX is built with
 * MLX_METAL_JIT=ON, so a metallib of another MLX build loads and then fails
 * late, for some ops only: the binding compares the two stamps before it
 * hands MLX the path. Added without an ABI version bump: optional. */
ETCHAT_API const char* etchat_build_stamp(void);

/* Where MLX's CUDA backend keeps the kernels it compiles (it sets
 * MLX_PTX_CACHE_DIR, which MLX reads once, at its first JIT; else MLX uses
 * the system's temporary folder, which a fresh machine empties). A value
 * the user set in the environment wins. Must come before the first program
 * is opened (ETCHAT_ERR_INVALID_ARGUMENT after). Set on every build (only
 * MLX's CUDA backend reads it). Added without an ABI version bump:
 * optional. */
ETCHAT_API etchat_status etchat_set_kernel_cache_dir(const char* dir);

/* ===== 6. Step timing ==================================================== */

/* Where one etchat_session_forward's time went, in nanoseconds, measured
 * on the library's clock (CLOCK_MONOTONIC). Opt-in: with timing off (the
 * default) the library reads no clock. The parts of total that are not
 * named here (the guard, the task's bookkeeping) are the rest. Added
 * without an ABI version bump: these two functions are optional, and a
 * binding that finds them missing has no timing. */
typedef struct etchat_step_timing {
  int64_t total_ns;       /* entry to return, on the calling thread */
  int64_t to_thread_ns;   /* entry until the library's thread runs the call */
  int64_t from_thread_ns; /* the library's thread done until the caller runs */
  int64_t checks_ns;      /* handle lookup, argument and step checks */
  int64_t inputs_ns;      /* the input tensors built */
  int64_t execute_ns;     /* ExecuTorch's execute of "forward" (the MLX
                             delegate, the off-graph cache's update) */
  int64_t outputs_ns;     /* the logits tensor inspected */
  int64_t cache_ns;       /* our cache bookkeeping: length, ring oldest */
  int64_t logits_ns;      /* logits copied/converted to the caller's floats */
  int64_t tokens;         /* n of the step */
} etchat_step_timing;

/* Turns the per-forward timing on (non-zero) or off. Any thread; takes
 * effect at the next forward. */
ETCHAT_API etchat_status etchat_set_timing(int32_t on);

/* The timing of the last successful forward made from the CALLING thread
 * while timing was on (zeros if none). Does not go through the library's
 * thread: call it on the thread that made the forward (Go: under the same
 * LockOSThread). */
ETCHAT_API etchat_status etchat_last_timing(etchat_step_timing* out);

#ifdef __cplusplus
} /* extern "C" */
#endif

#endif /* ETCHAT_RUNNER_H */
