// Scalar expressions, views and destinations of the C++ builder (builder.h).
#include <limits>

#include "tilevm/ir/builder.h"
#include "tilevm/support/error.h"

namespace tilevm::ir {

Scalar::Scalar(Expr expr) : expr_(std::move(expr)) {
  if (!expr_) fail("a builder scalar needs an expression, got a null one");
}

const Expr& Scalar::expr() const {
  if (!expr_) fail("use of an unset Scalar (declared but never given a value)");
  return expr_;
}

Scalar Scalar::boolean(bool value) {
  return Scalar(make_bool(value));
}

Expr Scalar::from_int(int64_t value) {
  // Integer literals are i32, as in the text format; wider values need i64.
  bool fits = value >= std::numeric_limits<int32_t>::min() && value <= std::numeric_limits<int32_t>::max();
  return make_int(value, {}, fits ? DataType::i32() : DataType::i64());
}

namespace {
Scalar bin(BinaryOp op, const Scalar& a, const Scalar& b) {
  return Scalar(make_binary(op, a.expr(), b.expr()));
}
}  // namespace

Scalar operator+(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Add, a, b);
}
Scalar operator-(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Sub, a, b);
}
Scalar operator*(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Mul, a, b);
}
Scalar operator/(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Div, a, b);
}
Scalar operator%(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Mod, a, b);
}
Scalar operator<<(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Shl, a, b);
}
Scalar operator>>(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Shr, a, b);
}
Scalar operator&(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::BitAnd, a, b);
}
Scalar operator|(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::BitOr, a, b);
}
Scalar operator^(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::BitXor, a, b);
}
Scalar operator<(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Lt, a, b);
}
Scalar operator<=(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Le, a, b);
}
Scalar operator>(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Gt, a, b);
}
Scalar operator>=(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Ge, a, b);
}
Scalar operator==(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Eq, a, b);
}
Scalar operator!=(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Ne, a, b);
}
Scalar operator-(const Scalar& a) {
  return Scalar(make_unary(UnaryOp::Neg, a.expr()));
}
Scalar logical_and(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::And, a, b);
}
Scalar logical_or(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Or, a, b);
}
Scalar logical_not(const Scalar& a) {
  return Scalar(make_unary(UnaryOp::Not, a.expr()));
}
Scalar min(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Min, a, b);
}
Scalar max(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::Max, a, b);
}
Scalar ceil_div(const Scalar& a, const Scalar& b) {
  return bin(BinaryOp::CeilDiv, a, b);
}

SliceArg from(const Scalar& offset) {
  return SliceArg(Slice{Slice::Kind::Offset, offset.expr()});
}

TensorRef::TensorRef(const Tensor& t) : arg_{t.var(), {}, {}} {}

TensorRef Tensor::slice(const std::vector<SliceArg>& subscripts) const {
  if (subscripts.size() > static_cast<size_t>(rank())) {
    fail("'{}' has rank {} but the view has {} subscripts", name(), rank(), subscripts.size());
  }
  if (scope() == Scope::Register)
    fail("register tensors cannot be sliced: '{}' is {}", name(), to_string(var_->type));
  TensorArg arg{var_, {}, {}};
  for (const SliceArg& s : subscripts) arg.slices.push_back(s.slice);
  return TensorRef(std::move(arg));
}

Out out(const Tensor& existing) {
  return Out{existing.var()};
}

}  // namespace tilevm::ir
