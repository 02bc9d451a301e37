// kernel_copy.cpp — registers ExecuTorch's portable aten::copy_ kernel.
//
// In-graph programs (the KV cache inside the graph) write their cache with
// aten::copy_, which runs outside the MLX delegate. ExecuTorch registers its
// portable kernels through generated code whose generator (torchgen) is not
// available where Linux builds run, so this file does by hand what that
// generated wrapper does for this one operator: unbox the arguments and
// call the portable implementation (kernels/portable/cpu/op_copy.cpp,
// compiled into this library from the ExecuTorch sources). A build that
// links ExecuTorch's optimized or portable kernel library does not need it
// (CMakeLists.txt leaves it out then).
#include <executorch/runtime/kernel/kernel_includes.h>
#include <executorch/runtime/kernel/operator_registry.h>

namespace torch::executor::native {
Tensor& copy_(KernelRuntimeContext& ctx, Tensor& in, const Tensor& src,
              bool non_blocking);
}  // namespace torch::executor::native

namespace {

using executorch::runtime::EValue;
using executorch::runtime::Kernel;
using executorch::runtime::KernelRuntimeContext;
using executorch::runtime::Span;

// aten::copy_(Tensor(a!) self, Tensor src, bool non_blocking=False) -> Tensor(a!)
// The stack holds the three arguments, then the slot for the result.
void copy_boxed(KernelRuntimeContext& ctx, Span<EValue*> stack) {
  if (stack.size() != 4) {
    ctx.fail(executorch::runtime::Error::InvalidProgram);
    return;
  }
  auto& self = stack[0]->toTensor();
  const auto& src = stack[1]->toTensor();
  bool non_blocking = stack[2]->toBool();
  auto& result = torch::executor::native::copy_(ctx, self, src, non_blocking);
  *stack[3] = EValue(result);
}

const auto registered = executorch::runtime::register_kernel(
    Kernel("aten::copy_", copy_boxed));

}  // namespace
