// Package kvcache owns the off-graph KV cache's semantics, engine-neutral:
// the configuration built from a .pte's published layout plus the user's
// policy (capacity, storage dtype, initial pool size, window overrides), its
// validation, summary and memory estimate, and the sequence cache's per-step
// plans (which physical rows a step writes and reads in flat and ring
// layers), admission, commit and rewind. It follows ExecuTorch's
// extension/llm/cache/{cache.h,sequence_cache.h} and run_llm_hf.cpp.
// Engines own the storage; this package owns the index math.
package kvcache
