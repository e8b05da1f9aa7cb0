// The quantized matmul's three programs run on the interpreter (qmatmul_interp.h).
#include "tilevm/ops/qmatmul/qmatmul_interp.h"

#include <cstring>
#include <map>
#include <string>

#include "tilevm/interp/interpreter.h"
#include "tilevm/support/error.h"
#include "tilevm/transform/lower.h"

namespace tilevm::ops {

namespace {

std::vector<uint8_t> to_bytes(std::span<const uint16_t> values) {
  std::vector<uint8_t> bytes(values.size() * 2);
  if (!values.empty()) std::memcpy(bytes.data(), values.data(), bytes.size());  // little-endian host
  return bytes;
}

// Lowers (and so verifies) and runs one program, binding its parameters by name from `buffers` and `scalars`
// (each program takes a subset of them): the programs the interpreter checks are the ones the GPU compiles.
bool run_one(const ir::Program& built, const char* what,
             std::map<std::string, std::vector<uint8_t>*>& buffers,
             const std::map<std::string, int64_t>& scalars, Diagnostics& diags) {
  if (const std::optional<ir::Program> lowered = transform::lower(built, diags)) {
    const ir::Program& program = *lowered;
    interp::Arguments args;
    for (const ir::Var& v : program.params) {
      if (v->type.is_pointer()) {
        auto it = buffers.find(v->name);
        if (it == buffers.end())
          fail("the qmatmul {} program has a pointer parameter '{}' the runner does not know", what, v->name);
        args.buffers[v->name] = it->second;
      } else {
        auto it = scalars.find(v->name);
        if (it == scalars.end())
          fail("the qmatmul {} program has a scalar parameter '{}' the runner does not know", what, v->name);
        args.scalars[v->name] = interp::ScalarValue{false, it->second, 0.0};
      }
    }
    if (interp::run_program(program, args, diags)) return true;
  }
  diags.add(Severity::Note, {}, fmt::format("in the qmatmul {} program ('{}')", what, built.name));
  return false;
}

}  // namespace

bool run_qmatmul_interp(const QMatmulProblem& p, const QMatmulConfig& config, std::span<const uint16_t> a,
                        const QuantizedWeight& w, std::vector<uint16_t>& c, Diagnostics& diags) {
  check_config(p, config);
  if (config.dequant_gemm)
    fail(
        "qmatmul: the dequant_gemm configuration multiplies with cuBLAS; the interpreter runs only the fused "
        "template");
  if (static_cast<int64_t>(a.size()) != p.m * p.k)
    fail("qmatmul: A has {} elements, the problem {} needs m*k = {}", a.size(), p.key(), p.m * p.k);
  if (w.k != p.k || w.n != p.n || w.spec.wtype != p.wtype || w.spec.group != p.group ||
      w.spec.scale_type != p.atype || w.spec.zero_point != p.zero_point) {
    fail("qmatmul: the weight ([{}, {}] {} group {}) does not match the problem {}", w.k, w.n,
         w.spec.wtype.name(), w.spec.group, p.key());
  }

  std::vector<uint8_t> a_bytes = to_bytes(a);
  std::vector<uint8_t> codes = w.codes;
  std::vector<uint8_t> scales = to_bytes(w.scales);
  std::vector<uint8_t> zeros = to_bytes(w.zeros);
  std::vector<uint8_t> transformed(static_cast<size_t>(qmatmul_transformed_bytes(p, config)), 0);
  // 0xff bytes are NaN in f32, f16 and bf16: an output or partial sum the programs skip shows. The split-K
  // ticket counters start at 0.
  const size_t counter_bytes = static_cast<size_t>(qmatmul_counter_bytes(p, config));
  std::vector<uint8_t> counters(counter_bytes, 0);
  std::vector<uint8_t> partials(static_cast<size_t>(qmatmul_workspace_bytes(p, config)), 0xff);
  std::vector<uint8_t> c_bytes(static_cast<size_t>(p.m * p.n * 2), 0xff);

  const std::map<std::string, int64_t> scalars = {{"m", p.m}, {"n", p.n}, {"k", p.k}};
  std::map<std::string, std::vector<uint8_t>*> buffers = {{"a_ptr", &a_bytes},
                                                          {"b_ptr", &codes},
                                                          {"t_ptr", &transformed},
                                                          {"scale_ptr", &scales},
                                                          {"zero_ptr", &zeros}};
  bool ok = run_one(build_qmatmul_transform(p, config), "transform", buffers, scalars, diags);
  if (ok) {
    // With split-K (or stream-K) the matmul's blocks store f32 partials [split_k (slots), m, n] in p_ptr and
    // the last block of each tile (by its ticket from count_ptr) sums them into c_ptr.
    buffers["c_ptr"] = &c_bytes;
    if (config.split_k > 1 || config.stream_k > 0) {
      buffers["p_ptr"] = &partials;
      buffers["count_ptr"] = &counters;
    }
    ok = run_one(build_qmatmul(p, config), "matmul", buffers, scalars, diags);
  }
  c.resize(static_cast<size_t>(p.m * p.n));
  std::memcpy(c.data(), c_bytes.data(), c_bytes.size());
  return ok;
}

}  // namespace tilevm::ops
