// Host evaluation of the scalar expressions a launch needs (grid extents, workspace shapes and initial
// values), through the interpreter's evaluator (interp/scalar_eval.h), so host and interpreter agree.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>

#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/interp/scalar_eval.h"
#include "tilevm/ir/expr.h"

namespace tilevm::exec {

using codegen::cuda::WorkspaceTensor;

// The value of a scalar parameter by name, or nullopt when the caller has none.
using ScalarLookup = std::function<std::optional<interp::ScalarValue>(const std::string& name)>;

// @throws tilevm::Error when the expression uses a scalar the lookup does not have, or has no value.
interp::ScalarValue eval_host(const ir::Expr& e, const ScalarLookup& lookup);
int64_t eval_host_int(const ir::Expr& e, const ScalarLookup& lookup);

// The element count of one AllocateGlobal of the workspace (its layout's, or its shape's evaluated here).
// The workspace holds them at 256-byte boundaries in program order (emit_global.cpp).
int64_t workspace_elements(const WorkspaceTensor& w, const ScalarLookup& lookup);

}  // namespace tilevm::exec
