// TakeTicket (docs/language.md, "Extension: tickets"): examples/split_sum_ticket.tile sums columns with the
// rows split over blocks and reduces in the same launch. On the interpreter against a double reference, on
// fresh random inputs with the partial sums and the output poisoned; twice on the same counters (the first
// launch must leave them at 0); and on the GPU against the interpreter. Atomic adds of several blocks that a
// ticket orders before a read pass the cross-block check, and the same read without the ticket fails it.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "codegen_test_util.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/parser.h"
#include "tilevm/transform/lower.h"

namespace tilevm {
namespace {

constexpr int kRows = 64;  // SPLIT * KC of the example

std::vector<uint8_t> f32_bytes(const std::vector<float>& v) {
  std::vector<uint8_t> b(v.size() * 4);
  std::memcpy(b.data(), v.data(), b.size());
  return b;
}

std::vector<float> f32_values(const std::vector<uint8_t>& b) {
  std::vector<float> v(b.size() / 4);
  std::memcpy(v.data(), b.data(), b.size());
  return v;
}

struct SplitSum {
  std::vector<uint8_t> x, partials, counters, y;
};

// x random in [-1, 1), the partial sums and y NaN, the counters 0.
SplitSum split_sum_inputs(int n, std::mt19937& rng) {
  std::uniform_real_distribution<float> real(-1.0f, 1.0f);
  std::vector<float> x(static_cast<size_t>(kRows) * n);
  for (float& e : x) e = real(rng);
  return {f32_bytes(x), f32_bytes(std::vector<float>(static_cast<size_t>(4) * n, NAN)),
          std::vector<uint8_t>(static_cast<size_t>(n / 16) * 4, 0),
          f32_bytes(std::vector<float>(static_cast<size_t>(n), NAN))};
}

interp::Arguments split_sum_args(SplitSum& s, int n) {
  interp::Arguments a;
  a.scalars["N"] = interp::ScalarValue{false, n, 0.0};
  a.buffers["x_ptr"] = &s.x;
  a.buffers["p_ptr"] = &s.partials;
  a.buffers["c_ptr"] = &s.counters;
  a.buffers["y_ptr"] = &s.y;
  return a;
}

// y must be the column sums of x (in double, to f32 rounding of 64 terms), and the counters back at 0.
void expect_column_sums(const SplitSum& s, int n) {
  const std::vector<float> x = f32_values(s.x), y = f32_values(s.y);
  for (int j = 0; j < n; ++j) {
    double want = 0;
    for (int k = 0; k < kRows; ++k) want += x[static_cast<size_t>(k) * n + j];
    ASSERT_NEAR(y[static_cast<size_t>(j)], want, 1e-5 * kRows) << "column " << j;
  }
  EXPECT_EQ(s.counters, std::vector<uint8_t>(s.counters.size(), 0)) << "a counter was left mid-count";
}

void run_split_sum(bool gpu) {
  const std::optional<ir::Program> p =
      codegen_test::load_program(codegen_test::source_root() / "examples" / "split_sum_ticket.tile");
  ASSERT_TRUE(p);
  std::mt19937 rng(20261127);
  for (int n : {16, 32, 160}) {
    SCOPED_TRACE(fmt::format("N = {}", n));
    SplitSum cpu = split_sum_inputs(n, rng);
    // Two launches on the same counters, each on fresh x with the outputs poisoned again.
    for (int launch = 0; launch < 2; ++launch) {
      SCOPED_TRACE(fmt::format("launch {}", launch));
      if (launch == 1) {
        const std::vector<uint8_t> counters = cpu.counters;
        cpu = split_sum_inputs(n, rng);
        cpu.counters = counters;
      }
      SplitSum dev = cpu;
      interp::Arguments ca = split_sum_args(cpu, n);
      Diagnostics cd;
      ASSERT_TRUE(interp::run_program(*p, ca, cd)) << cd.render("split_sum_ticket.tile", "");
      expect_column_sums(cpu, n);
      if (!gpu) continue;
      interp::Arguments ga = split_sum_args(dev, n);
      Diagnostics gd;
      ASSERT_TRUE(exec::run_on_gpu(*p, ga, gd)) << gd.render("split_sum_ticket.tile", "");
      expect_column_sums(dev, n);
      // The last block adds the SPLIT rows in one order whichever block it is: the same bits.
      EXPECT_EQ(dev.y, cpu.y);
    }
  }
}

TEST(TicketInterp, SplitSumMatchesTheReference) {
  run_split_sum(false);
}

TEST(TicketGpu, SplitSumMatchesTheInterpreter) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  run_split_sum(true);
}

// Four blocks add 1 to each of 8 f32 accumulators; the block with the last ticket reads the sums. `ticket`
// false leaves the ticket out (block 3 reads while, on a GPU, the others may still be adding).
std::string atomic_program(bool ticket) {
  return fmt::format(R"(
def atomic_sum<4>[threads=32](f32* acc_ptr, f32* y_ptr, i32* c_ptr):
    b = BlockIndices()
    ga = ViewGlobal(acc_ptr, dtype=f32, shape=[8])
    gy = ViewGlobal(y_ptr, dtype=f32, shape=[8])
    gc = ViewGlobal(c_ptr, dtype=i32, shape=[1])
    one = AllocateRegister(f32, layout=spatial(8).replicate(4), init=1.0)
    AtomicAddGlobal(one, ga)
    {}
    if {}:
        s = LoadGlobal(ga, layout=spatial(8).replicate(4))
        StoreGlobal(s, gy)
)",
                     ticket ? "t = TakeTicket(gc, modulo=4)" : "pass", ticket ? "t == 3" : "b == 3");
}

bool run_atomic(bool ticket, std::vector<uint8_t>& y, Diagnostics& diags) {
  std::optional<ir::Program> p = ir::parse_program(atomic_program(ticket), diags);
  if (!p || diags.has_errors()) return false;
  p = transform::lower(*std::move(p), diags, {});
  if (!p) return false;
  std::vector<uint8_t> acc = f32_bytes(std::vector<float>(8, 0.0f)), counters(4, 0);
  y = f32_bytes(std::vector<float>(8, NAN));
  interp::Arguments a;
  a.buffers["acc_ptr"] = &acc;
  a.buffers["y_ptr"] = &y;
  a.buffers["c_ptr"] = &counters;
  return interp::run_program(*p, a, diags);
}

TEST(TicketInterp, AtomicAddsOrderedByATicket) {
  std::vector<uint8_t> y;
  Diagnostics diags;
  ASSERT_TRUE(run_atomic(true, y, diags)) << diags.render("atomic_sum", atomic_program(true));
  EXPECT_EQ(f32_values(y), std::vector<float>(8, 4.0f));
}

TEST(TicketInterp, ReadOfOtherBlocksAtomicAddsNeedsATicket) {
  std::vector<uint8_t> y;
  Diagnostics diags;
  ASSERT_FALSE(run_atomic(false, y, diags));
  const std::string text = diags.render("atomic_sum", atomic_program(false));
  EXPECT_NE(text.find("block [3] reads global 'acc_ptr' element at offset 0, which block [0] added to"),
            std::string::npos)
      << text;
}

}  // namespace
}  // namespace tilevm
