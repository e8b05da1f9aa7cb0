// Host evaluation of the scalar expressions a launch needs (grid extents, workspace shapes), with the
// kernel's integer semantics (64-bit, C truncation; division by zero gives 0 as in the emitted code).
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/ir/expr.h"

namespace tilevm::codegen::cuda {

// The value of a scalar parameter by name, or nullopt when the caller has none.
using ScalarLookup = std::function<std::optional<double>(const std::string& name)>;

// @throws tilevm::Error when the expression uses a scalar the lookup does not have.
double eval_host(const ir::Expr& e, const ScalarLookup& lookup);
int64_t eval_host_int(const ir::Expr& e, const ScalarLookup& lookup);

// The element count of one AllocateGlobal of the workspace (its layout's, or its shape's evaluated here).
// The workspace holds them at 256-byte boundaries in program order (emit_global.cpp).
int64_t workspace_elements(const WorkspaceTensor& w, const ScalarLookup& lookup);

}  // namespace tilevm::codegen::cuda
