// The types of the values an instruction defines, computed from its operands. The parser and the builder
// use it to type the variables of `a, b = Instr(...)`; the verifier checks the instruction itself.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "tilevm/ir/inst/all.h"

namespace tilevm::ir {

// The result types of `inst` (empty for instructions that define nothing; one i32 per grid dimension for
// BlockIndices). When the operands make a result type impossible (a View whose bits per thread differ, a
// reduce dimension out of range, a non-tensor operand), reports one error at the instruction and returns
// nullopt; the verifier reports everything else.
std::optional<std::vector<ValueType>> infer_result_types(const InstNode& inst, int grid_rank,
                                                         Diagnostics& diags);

// Every register tensor that `inst` names has a layout. A fragment (AllocateFragment) has none until the
// tile layer infers it, and only tile operators may take it before then; otherwise reports one error naming
// the instruction and the fragment, and returns false. infer_result_types checks it for every other
// instruction, and so does the verifier.
bool check_fragments_laid_out(const InstNode& inst, Diagnostics& diags);

}  // namespace tilevm::ir
