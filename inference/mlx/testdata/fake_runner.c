/*
 * fake_runner.c — a test-only implementation of inference/native/etchat_runner.h.
 *
 * The Go tests compile it with the system C compiler (cc -shared -fPIC) into
 * a temporary directory and load it through the same binding as the real
 * library. It runs no model: a "program" is a small text file
 *
 *     ETCHAT-FAKE vocab=16 [maxctx=64] [ingraph] [reject] [lastonly] [poison=7]
 *
 * (other tokens, e.g. fake_backend.cpp's caches=, are ignored)
 *
 * and forward produces deterministic logits from ids and positions:
 *
 *     logits[row][v] = (float)(id * 100 + position) + (float)v / 1000
 *
 * The cache is control state only, with the sequence cache's semantics
 * (one length, capacity admission, rewind refused above the length or below
 * what a ring layer retains). The session validates the cache config it
 * receives and records it; etchat_fake_last_config (not part of the ABI)
 * echoes it back so tests can check the marshalling. Handles live in a
 * registry, so stale handles are reported, never dereferenced.
 *
 * -DABI=N builds a library that reports ABI version N.
 */
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../native/etchat_runner.h"

#ifndef ABI
#define ABI ETCHAT_RUNNER_ABI_VERSION
#endif

#define MAX_HANDLES 4096
#define MAX_LAYERS 256

struct etchat_program {
  int vocab, maxctx, ingraph, reject, lastonly;
  long poison;
};

struct etchat_session {
  struct etchat_program prog; /* a copy: sessions outlive their program */
  int has_cache;
  etchat_cache_config cfg;
  etchat_cache_layer layers[MAX_LAYERS];
  int n_layers;
  int capacity, length;
};

static __thread char t_err[512];
static etchat_cache_config last_cfg;
static etchat_cache_layer last_layers[MAX_LAYERS];
static int last_n;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
/* Live handles: a handle is a never-reused number, mapped to its object. */
static struct {
  uintptr_t id;
  void* obj;
} live[MAX_HANDLES];
static uintptr_t next_id = 0x10000;

static int seterr(int status, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(t_err, sizeof t_err, fmt, ap);
  va_end(ap);
  return status;
}

/* Registers obj; returns its handle, or 0 when the table is full. */
static uintptr_t track(void* obj) {
  for (int i = 0; i < MAX_HANDLES; i++) {
    if (live[i].id == 0) {
      next_id += 16;
      live[i].id = next_id;
      live[i].obj = obj;
      return next_id;
    }
  }
  return 0;
}

static void* find(const void* h) {
  if (h == NULL) return NULL;
  for (int i = 0; i < MAX_HANDLES; i++)
    if (live[i].id == (uintptr_t)h) return live[i].obj;
  return NULL;
}

/* Forgets h; returns its object (to free) or NULL. */
static void* untrack(const void* h) {
  for (int i = 0; i < MAX_HANDLES; i++) {
    if (h != NULL && live[i].id == (uintptr_t)h) {
      void* obj = live[i].obj;
      live[i].id = 0;
      live[i].obj = NULL;
      return obj;
    }
  }
  return NULL;
}

/* ---- 1. version and errors ---------------------------------------------- */

int32_t etchat_abi_version(void) { return ABI; }

const char* etchat_last_error(void) { return t_err; }

const char* etchat_status_name(etchat_status s) {
  switch (s) {
    case ETCHAT_OK: return "ok";
    case ETCHAT_ERR_INVALID_ARGUMENT: return "invalid argument";
    case ETCHAT_ERR_UNSUPPORTED: return "unsupported";
    case ETCHAT_ERR_REWIND_REFUSED: return "rewind refused";
    case ETCHAT_ERR_CACHE_FULL: return "cache full";
    case ETCHAT_ERR_CLOSED: return "closed";
    case ETCHAT_ERR_LOAD: return "load failed";
    case ETCHAT_ERR_EXECUTE: return "execution failed";
    case ETCHAT_ERR_INTERNAL: return "internal error";
    case ETCHAT_ERR_DEVICE: return "no usable device";
  }
  return "unknown status";
}

/* ---- 2. program ------------------------------------------------------------ */

etchat_status etchat_program_open(const char* path, etchat_program** out) {
  t_err[0] = 0;
  if (path == NULL || out == NULL)
    return seterr(ETCHAT_ERR_INVALID_ARGUMENT, "program_open: path and out must be given");
  FILE* f = fopen(path, "r");
  if (f == NULL)
    return seterr(ETCHAT_ERR_LOAD, "program_open: loading program %s failed: Error::AccessFailed (0x22)", path);
  char buf[512] = {0};
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  if (strncmp(buf, "ETCHAT-FAKE", 11) != 0)
    return seterr(ETCHAT_ERR_LOAD, "program_open: loading program %s failed: Error::InvalidProgram (0x23)", path);
  struct etchat_program* p = calloc(1, sizeof *p);
  if (p == NULL) return seterr(ETCHAT_ERR_INTERNAL, "program_open: out of memory");
  p->poison = -1;
  for (char* tok = strtok(buf + 11, " \t\r\n"); tok != NULL; tok = strtok(NULL, " \t\r\n")) {
    if (sscanf(tok, "vocab=%d", &p->vocab) == 1) continue;
    if (sscanf(tok, "maxctx=%d", &p->maxctx) == 1) continue;
    if (sscanf(tok, "poison=%ld", &p->poison) == 1) continue;
    if (strcmp(tok, "ingraph") == 0) p->ingraph = 1;
    else if (strcmp(tok, "reject") == 0) p->reject = 1;
    else if (strcmp(tok, "lastonly") == 0) p->lastonly = 1;
  }
  if (p->vocab <= 0) {
    free(p);
    return seterr(ETCHAT_ERR_LOAD, "program_open: the program has no usable \"forward\" method: Error::InvalidProgram (0x23)");
  }
  pthread_mutex_lock(&mu);
  uintptr_t id = track(p);
  pthread_mutex_unlock(&mu);
  if (!id) {
    free(p);
    return seterr(ETCHAT_ERR_INTERNAL, "program_open: too many handles");
  }
  *out = (etchat_program*)id;
  return ETCHAT_OK;
}

etchat_status etchat_program_vocab(etchat_program* h, int64_t* out) {
  t_err[0] = 0;
  int st = ETCHAT_OK;
  pthread_mutex_lock(&mu);
  struct etchat_program* p = find(h);
  if (h == NULL) st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "program_vocab: program handle is NULL");
  else if (p == NULL) st = seterr(ETCHAT_ERR_CLOSED, "program_vocab: program is closed or unknown");
  else if (out == NULL) st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "program_vocab: out is NULL");
  else *out = p->vocab;
  pthread_mutex_unlock(&mu);
  return st;
}

etchat_status etchat_program_close(etchat_program* h) {
  t_err[0] = 0;
  pthread_mutex_lock(&mu);
  free(untrack(h));
  pthread_mutex_unlock(&mu);
  return ETCHAT_OK;
}

/* ---- 3. session ------------------------------------------------------------ */

etchat_status etchat_session_open(etchat_program* h, const etchat_cache_config* cfg,
                                  const etchat_cache_layer* layers, int32_t n_layers,
                                  etchat_session** out) {
  t_err[0] = 0;
  int st = ETCHAT_OK;
  struct etchat_session* s = NULL;
  pthread_mutex_lock(&mu);
  struct etchat_program* p = find(h);
  if (h == NULL) { st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "session_open: program handle is NULL"); goto done; }
  if (p == NULL) { st = seterr(ETCHAT_ERR_CLOSED, "session_open: program is closed or unknown"); goto done; }
  if (out == NULL) { st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "session_open: out is NULL"); goto done; }
  if (cfg == NULL && (layers != NULL || n_layers != 0)) {
    st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "session_open: layers given without a cache config");
    goto done;
  }
  if (cfg != NULL) {
    if (n_layers <= 0 || n_layers > MAX_LAYERS || layers == NULL) {
      st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "session_open: cache config has %d layers", n_layers);
      goto done;
    }
    if (cfg->capacity <= 0) {
      st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "session_open: capacity %d is not positive", cfg->capacity);
      goto done;
    }
    if (cfg->initial_capacity < 0) {
      st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "session_open: initial capacity %d is negative", cfg->initial_capacity);
      goto done;
    }
    if (cfg->max_write < 0) {
      st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "session_open: max_write %d is negative", cfg->max_write);
      goto done;
    }
    if (cfg->kv_dtype != 5 && cfg->kv_dtype != 6 && cfg->kv_dtype != 15) {
      st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "session_open: kv dtype %d is not Half (5), Float (6) or BFloat16 (15)",
                  cfg->kv_dtype);
      goto done;
    }
    for (int i = 0; i < n_layers; i++) {
      const etchat_cache_layer* l = &layers[i];
      int ring = l->kind == ETCHAT_LAYER_RING;
      if (l->kv_heads <= 0 || l->head_dim <= 0 || (l->kind != ETCHAT_LAYER_FLAT && !ring) || ring != (l->window > 0)) {
        st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "session_open: layer %d: kind %d, window %d, kv_heads %d, head_dim %d is not a valid layer",
                    i, l->kind, l->window, l->kv_heads, l->head_dim);
        goto done;
      }
    }
  } else if (!p->ingraph) {
    st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "session_open: the program is off-graph: the runtime owns its KV cache; open it with a cache config");
    goto done;
  }
  if (p->reject) {
    st = seterr(ETCHAT_ERR_LOAD, "session_open: loading \"forward\" failed: Error::DelegateInvalidCompatibility (0x30) (the MLX backend may reject this program, or the cache config does not match it)");
    goto done;
  }
  s = calloc(1, sizeof *s);
  if (s == NULL) { st = seterr(ETCHAT_ERR_INTERNAL, "session_open: out of memory"); goto done; }
  s->prog = *p;
  if (cfg != NULL) {
    s->has_cache = 1;
    s->cfg = *cfg;
    memcpy(s->layers, layers, sizeof(etchat_cache_layer) * (size_t)n_layers);
    s->n_layers = n_layers;
    last_cfg = *cfg;
    memcpy(last_layers, layers, sizeof(etchat_cache_layer) * (size_t)n_layers);
    last_n = n_layers;
    s->capacity = cfg->capacity;
  } else {
    s->capacity = p->maxctx;
  }
  uintptr_t id = track(s);
  if (!id) {
    free(s);
    st = seterr(ETCHAT_ERR_INTERNAL, "session_open: too many handles");
    goto done;
  }
  *out = (etchat_session*)id;
done:
  pthread_mutex_unlock(&mu);
  return st;
}

/* Looks the session up (under the lock); on failure sets the error and
 * *st and returns NULL. */
static struct etchat_session* lookup(etchat_session* h, const char* op, int* st) {
  struct etchat_session* s = find(h);
  if (h == NULL) *st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "%s: session handle is NULL", op);
  else if (s == NULL) *st = seterr(ETCHAT_ERR_CLOSED, "%s: session is closed or unknown", op);
  else *st = ETCHAT_OK;
  return s;
}

etchat_status etchat_session_forward(etchat_session* h, const int64_t* ids, const int64_t* positions,
                                     int32_t n, float* logits, int64_t logits_cap, int32_t all_rows,
                                     int64_t* written) {
  t_err[0] = 0;
  pthread_mutex_lock(&mu);
  int st;
  struct etchat_session* s = lookup(h, "forward", &st);
  if (st != ETCHAT_OK) goto done;
  if (n <= 0 || ids == NULL || positions == NULL || logits == NULL || written == NULL) {
    st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "forward: ids, positions, logits and written must be given, n > 0");
    goto done;
  }
  int vocab = s->prog.vocab;
  int64_t last = -1;
  for (int i = 0; i < n; i++) {
    if (positions[i] < 0) { st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "forward: position %lld is negative", (long long)positions[i]); goto done; }
    if (ids[i] < 0 || ids[i] >= vocab) { st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "forward: token id %lld is outside the vocabulary", (long long)ids[i]); goto done; }
    if (ids[i] == s->prog.poison) { st = seterr(ETCHAT_ERR_EXECUTE, "forward: forward failed: Error::DelegateInvalidHandle (0x32)"); goto done; }
    if (positions[i] > last) last = positions[i];
  }
  if (s->capacity > 0 && last >= s->capacity) {
    st = seterr(ETCHAT_ERR_CACHE_FULL, "forward: position %lld is beyond capacity %d", (long long)last, s->capacity);
    goto done;
  }
  if (all_rows && s->prog.lastonly && n > 1) {
    if (last + 1 > s->length) s->length = (int)(last + 1); /* the step ran */
    st = seterr(ETCHAT_ERR_UNSUPPORTED, "forward: the program returns 1 logits rows for %d tokens; all rows are not available", n);
    goto done;
  }
  int64_t rows = all_rows ? n : 1;
  if (logits_cap < rows * vocab) {
    st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "forward: logits buffer holds %lld floats, need %lld", (long long)logits_cap, (long long)(rows * vocab));
    goto done;
  }
  for (int64_t r = 0; r < rows; r++) {
    int64_t i = all_rows ? r : n - 1;
    for (int v = 0; v < vocab; v++)
      logits[r * vocab + v] = (float)(ids[i] * 100 + positions[i]) + (float)v / 1000.0f;
  }
  if (last + 1 > s->length) s->length = (int)(last + 1);
  *written = rows * vocab;
done:
  pthread_mutex_unlock(&mu);
  return st;
}

#ifndef NO_VIEW
/* The optional in-place forward: this fake always "converts", so *out is
 * the caller's buffer (the ABI layer over fake_backend.cpp reads float32
 * logits in place). -DNO_VIEW leaves it out: the binding then copies. */
etchat_status etchat_session_forward_view(etchat_session* h, const int64_t* ids, const int64_t* positions,
                                          int32_t n, float* logits, int64_t logits_cap, int32_t all_rows,
                                          const float** out, int64_t* written) {
  if (out == NULL) {
    t_err[0] = 0;
    return seterr(ETCHAT_ERR_INVALID_ARGUMENT, "forward: out is NULL");
  }
  etchat_status st = etchat_session_forward(h, ids, positions, n, logits, logits_cap, all_rows, written);
  if (st == ETCHAT_OK) *out = logits;
  return st;
}
#endif

etchat_status etchat_session_rewind(etchat_session* h, int32_t new_len) {
  t_err[0] = 0;
  pthread_mutex_lock(&mu);
  int st;
  struct etchat_session* s = lookup(h, "rewind", &st);
  if (st != ETCHAT_OK) goto done;
  if (!s->has_cache) { st = seterr(ETCHAT_ERR_UNSUPPORTED, "rewind: an in-graph program cannot rewind"); goto done; }
  if (new_len < 0 || new_len > s->length) {
    st = seterr(ETCHAT_ERR_REWIND_REFUSED, "rewind: cannot rewind from %d to %d", s->length, new_len);
    goto done;
  }
  for (int i = 0; i < s->n_layers; i++) {
    int w = s->layers[i].window;
    if (s->layers[i].kind == ETCHAT_LAYER_RING && s->length > w && new_len < s->length - w) {
      st = seterr(ETCHAT_ERR_REWIND_REFUSED, "rewind: a sliding-window cache no longer holds the cells for length %d", new_len);
      goto done;
    }
  }
  s->length = new_len;
done:
  pthread_mutex_unlock(&mu);
  return st;
}

etchat_status etchat_session_clear(etchat_session* h) {
  t_err[0] = 0;
  pthread_mutex_lock(&mu);
  int st;
  struct etchat_session* s = lookup(h, "clear", &st);
  if (st == ETCHAT_OK && !s->has_cache) st = seterr(ETCHAT_ERR_UNSUPPORTED, "clear: an in-graph program cannot clear its cache");
  if (st == ETCHAT_OK) s->length = 0;
  pthread_mutex_unlock(&mu);
  return st;
}

etchat_status etchat_session_length(etchat_session* h, int32_t* out) {
  t_err[0] = 0;
  pthread_mutex_lock(&mu);
  int st;
  struct etchat_session* s = lookup(h, "length", &st);
  if (st == ETCHAT_OK && out == NULL) st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "length: out is NULL");
  if (st == ETCHAT_OK) *out = s->length;
  pthread_mutex_unlock(&mu);
  return st;
}

etchat_status etchat_session_capacity(etchat_session* h, int32_t* out) {
  t_err[0] = 0;
  pthread_mutex_lock(&mu);
  int st;
  struct etchat_session* s = lookup(h, "capacity", &st);
  if (st == ETCHAT_OK && out == NULL) st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "capacity: out is NULL");
  if (st == ETCHAT_OK) *out = s->capacity;
  pthread_mutex_unlock(&mu);
  return st;
}

etchat_status etchat_session_can_extend(etchat_session* h, int32_t n, int32_t* out) {
  t_err[0] = 0;
  pthread_mutex_lock(&mu);
  int st;
  struct etchat_session* s = lookup(h, "can_extend", &st);
  if (st == ETCHAT_OK && out == NULL) st = seterr(ETCHAT_ERR_INVALID_ARGUMENT, "can_extend: out is NULL");
  if (st == ETCHAT_OK) *out = n >= 0 && (s->capacity <= 0 || (int64_t)s->length + n <= s->capacity);
  pthread_mutex_unlock(&mu);
  return st;
}

etchat_status etchat_session_close(etchat_session* h) {
  t_err[0] = 0;
  pthread_mutex_lock(&mu);
  free(untrack(h));
  pthread_mutex_unlock(&mu);
  return ETCHAT_OK;
}

/* ---- 4. memory ------------------------------------------------------------ */

static int64_t fake_peak;

etchat_status etchat_memory(int64_t* active, int64_t* peak) {
  t_err[0] = 0;
  pthread_mutex_lock(&mu);
  int64_t a = 0;
  for (int i = 0; i < MAX_HANDLES; i++)
    if (live[i].id != 0) a += 1 << 20; /* 1 MiB per live handle */
  if (a > fake_peak) fake_peak = a;
  if (active) *active = a;
  if (peak) *peak = fake_peak;
  pthread_mutex_unlock(&mu);
  return ETCHAT_OK;
}

etchat_status etchat_memory_reset_peak(void) {
  t_err[0] = 0;
  pthread_mutex_lock(&mu);
  fake_peak = 0;
  pthread_mutex_unlock(&mu);
  return ETCHAT_OK;
}

/* ---- 5. device -------------------------------------------------------------- */

static char metallib[1024];

etchat_status etchat_device(etchat_device_info* out) {
  t_err[0] = 0;
  if (out == NULL) return seterr(ETCHAT_ERR_INVALID_ARGUMENT, "device: out is NULL");
  memset(out, 0, sizeof *out);
  snprintf(out->kind, sizeof out->kind, "cpu");
  snprintf(out->name, sizeof out->name, "C fake");
  return ETCHAT_OK;
}

/* -DFAKE_STAMP="...": a library that says which MLX build it links. */
#ifndef FAKE_STAMP
#define FAKE_STAMP ""
#endif
const char* etchat_build_stamp(void) { return FAKE_STAMP; }

#ifndef NO_MEMORY_LIMITS
/* Section 4's optional calls. -DNO_MEMORY_LIMITS leaves them out, as an
 * older library: the binding then knows no working set and clears nothing.
 * This fake knows no working set either (0: every model fits). */
etchat_status etchat_memory_limits_get(etchat_memory_limits* out) {
  t_err[0] = 0;
  if (out == NULL) return seterr(ETCHAT_ERR_INVALID_ARGUMENT, "memory_limits: out is NULL");
  memset(out, 0, sizeof *out);
  return ETCHAT_OK;
}

etchat_status etchat_clear_cache(void) {
  t_err[0] = 0;
  return ETCHAT_OK;
}

etchat_status etchat_set_wired_limit(int64_t bytes, int64_t* previous) {
  t_err[0] = 0;
  if (bytes < 0) return seterr(ETCHAT_ERR_INVALID_ARGUMENT, "set_wired_limit: negative");
  if (previous != NULL) *previous = 0;
  return ETCHAT_OK;
}

etchat_status etchat_shared_weights_get(etchat_shared_weights* out) {
  t_err[0] = 0;
  if (out == NULL) return seterr(ETCHAT_ERR_INVALID_ARGUMENT, "shared_weights: out is NULL");
  memset(out, 0, sizeof *out);
  return ETCHAT_OK;
}

etchat_status etchat_set_kernel_cache_dir(const char* dir) {
  t_err[0] = 0;
  if (dir == NULL || *dir == 0) return seterr(ETCHAT_ERR_INVALID_ARGUMENT, "set_kernel_cache_dir: dir must be given");
  return ETCHAT_OK;
}
#endif

etchat_status etchat_set_metallib_path(const char* path) {
  t_err[0] = 0;
  if (path == NULL || *path == 0) return seterr(ETCHAT_ERR_INVALID_ARGUMENT, "set_metallib_path: path must be given");
  pthread_mutex_lock(&mu);
  snprintf(metallib, sizeof metallib, "%s", path);
  pthread_mutex_unlock(&mu);
  return ETCHAT_OK;
}

/* ---- 6. step timing: the C fake times nothing (zeros), like a backend
 * that fills no parts; the ABI layer's real timing is tested over
 * fake_backend.cpp -------------------------------------------------------- */

etchat_status etchat_set_timing(int32_t on) {
  (void)on;
  return ETCHAT_OK;
}

etchat_status etchat_last_timing(etchat_step_timing* out) {
  if (out == NULL) return seterr(ETCHAT_ERR_INVALID_ARGUMENT, "last_timing: out is NULL");
  memset(out, 0, sizeof *out);
  return ETCHAT_OK;
}

/* ---- test-only extras (not part of the ABI) -------------------------------- */

/* Copies the config the last off-graph session was opened with into
 * cfg/layers (room for cap layers) and its layer count into *n. */
etchat_status etchat_fake_last_config(etchat_cache_config* cfg, etchat_cache_layer* layers, int32_t cap,
                                      int32_t* n) {
  pthread_mutex_lock(&mu);
  *cfg = last_cfg;
  *n = last_n;
  for (int i = 0; i < last_n && i < cap; i++) layers[i] = last_layers[i];
  pthread_mutex_unlock(&mu);
  return ETCHAT_OK;
}

/* The metallib path last given (etchat_set_metallib_path), into buf. */
int32_t etchat_fake_metallib(char* buf, int32_t cap) {
  pthread_mutex_lock(&mu);
  snprintf(buf, (size_t)cap, "%s", metallib);
  pthread_mutex_unlock(&mu);
  return (int32_t)strlen(buf);
}

/* The number of live program and session handles. */
int32_t etchat_fake_live(void) {
  pthread_mutex_lock(&mu);
  int32_t c = 0;
  for (int i = 0; i < MAX_HANDLES; i++)
    if (live[i].id != 0) c++;
  pthread_mutex_unlock(&mu);
  return c;
}
