// shared_weights.h — one copy of a model's weights for all its sessions.
//
// Every session loads its own Module (its forward is bound to its own
// cache), and the MLX delegate asks the program's named-data map for each
// constant. Through ExecuTorch's mmap loader each session got its own
// mapping of the file, at the file's offsets (none of the fixtures' large
// weights is 16 KiB-aligned), so Metal could not wrap them without a copy
// and every session held a copy of the model. The loader made here hands
// every Module of one file the same copy of each constant segment instead:
// allocated 16 KiB-aligned (Apple silicon's page), its length rounded up to
// pages, made once per model and freed when the last buffer handed out is
// freed (the last session's delegate goes). Where MLX wraps a pointer
// (Metal's newBufferWithBytesNoCopy) the sessions then share the weights;
// where its allocator copies regardless (MLX's CPU and CUDA allocators have
// no make_buffer) each session still holds its own MLX copy, and the shared
// copy replaces the per-session file mappings (docs/native-engine.md has
// what Linux measures).
//
// This lives in our library, over ExecuTorch's public DataLoader interface:
// the named-data map loads constants through the program's loader (segment
// type Constant), so no patch of ExecuTorch is needed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include <executorch/runtime/core/data_loader.h>

#include "runner_backend.h"

namespace etchat {

// The alignment and page of the shared copies: Apple silicon's page size,
// which Metal needs to wrap memory without a copy.
constexpr size_t kWeightPage = 16384;

// ETCHAT_SHARED_WEIGHTS=0 turns the sharing off (each Module's own mmap
// loader, as before): read at each program or session open, so a test or a
// measurement can compare both in one process.
bool shared_weights_enabled();

// A loader over the file at path: the program, its delegates' payloads and
// everything else load through ExecuTorch's mmap loader; constant segments
// come from the file's shared copies. Throws Failure when the file cannot
// be opened.
std::unique_ptr<::executorch::runtime::DataLoader> make_sharing_loader(
    const std::string& path);

} // namespace etchat
