// The types of a program's values: scalars, pointers to global memory, and tensors.
//
// A tensor has a dtype, a shape, a memory scope and a layout (docs/language.md section 1). Register and
// shared tensors have constant shapes fixed by their layouts; a global tensor's shape (and strides) may
// depend on scalar parameters, so shapes are expressions.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "tilevm/ir/expr.h"
#include "tilevm/layout/layout.h"

namespace tilevm::ir {

enum class Scope { Global, Shared, Register };
const char* to_string(Scope scope);

struct TensorType {
  DataType dtype = DataType::f32();
  Scope scope = Scope::Register;
  std::vector<Expr> shape;
  // Register: the register layout (always set). Shared: the T = 1 storage layout (always set; row-major
  // local(shape) unless given). Global: set when given by layout=, else the tensor is strided.
  std::optional<layout::Layout> layout;
  std::vector<Expr> strides;  // global only; empty means row-major (or `layout`)

  int rank() const { return static_cast<int>(shape.size()); }
  // The shape when every extent is a constant (always for register and shared tensors).
  std::optional<layout::Index> static_shape() const;
};

enum class ValueKind { Scalar, Pointer, Tensor };

struct ValueType {
  ValueKind kind = ValueKind::Scalar;
  DataType dtype = DataType::i32();          // scalar type, pointee type or element type
  std::shared_ptr<const TensorType> tensor;  // set iff kind == Tensor

  static ValueType scalar(DataType t) { return {ValueKind::Scalar, t, nullptr}; }
  static ValueType pointer(DataType t) { return {ValueKind::Pointer, t, nullptr}; }
  static ValueType tensor_of(TensorType t) {
    DataType d = t.dtype;
    return {ValueKind::Tensor, d, std::make_shared<const TensorType>(std::move(t))};
  }
  bool is_scalar() const { return kind == ValueKind::Scalar; }
  bool is_pointer() const { return kind == ValueKind::Pointer; }
  bool is_tensor() const { return kind == ValueKind::Tensor; }
};

// A named value. Every definition (a parameter, an assignment that introduces a name, an instruction's
// result) creates a VarNode; a later definition of the same name creates another one (names are rebound as
// in Python), while assigning a scalar to an existing scalar name updates that variable.
struct VarNode {
  std::string name;
  ValueType type;
  SourceLoc loc;  // where it was defined
};

Var make_var(std::string name, ValueType type, SourceLoc loc = {});

// `f16`, `u4*`, `register f32[16, 8]`, `shared f16[3, 16, 256]`, `global i6[K, N]`.
std::string to_string(const ValueType& type);

}  // namespace tilevm::ir
