// transform::analyze_nan_payload (analyze_nan_payload.h): it marks only the native arithmetic and widening
// casts whose result no reader can tell from the canonical NaN, and the emitter keeps the hardware's NaN
// exactly there.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "tilevm/codegen/cuda/codegen.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/ir/inst/all.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/printer.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/transform/analyze_nan_payload.h"
#include "tilevm/transform/infer_threads.h"
#include "tilevm/transform/lower.h"
#include "tilevm/transform/plan_shared_memory.h"

namespace tilevm {
namespace {

constexpr const char* kProgram = R"(la = spatial(32)

def nan_payload<1>[threads=32](f32* x_ptr, f32* y_ptr, f16* z_ptr, f16* w_ptr, f32* v_ptr, f32* t_ptr):
    gx = ViewGlobal(x_ptr, dtype=f32, shape=[32])
    gy = ViewGlobal(y_ptr, dtype=f32, shape=[32])
    gz = ViewGlobal(z_ptr, dtype=f16, shape=[32])
    gw = ViewGlobal(w_ptr, dtype=f16, shape=[32])
    a = LoadGlobal(gx, layout=la)
    b = LoadGlobal(gy, layout=la)
    p = Mul(a, b)
    q = Add(p, a)
    h = Cast(q, dtype=f16)
    StoreGlobal(h, gz)
    r = Sub(q, b)
    StoreGlobal(r, gy)
    s = Mul(a, a)
    v = View(s, dtype=i32)
    vv = Add(v, v)
    t = Add(b, b)
    lt = Lt(a, b)
    u = Where(lt, t, a)
    StoreGlobal(u, gx)
    c = LoadGlobal(gw, layout=la)
    c32 = Cast(c, dtype=f32)
    d = Mul(c32, a)
    e = Cast(d, dtype=f16)
    StoreGlobal(e, gw)
    gv = ViewGlobal(v_ptr, dtype=f32, shape=[32])
    f = Fma(a, b, c32)
    StoreGlobal(f, gv)
    sh = AllocateShared(f32, shape=[32])
    m1 = Mul(a, b)
    StoreShared(m1, sh)
    Synchronize()
    m2 = LoadShared(sh, layout=la)
    m3 = Add(m2, a)
    StoreGlobal(m3, gx)
    sh2 = AllocateShared(f32, shape=[32])
    n1 = Mul(b, b)
    StoreShared(n1, sh2)
    Synchronize()
    n2 = LoadShared(sh2, layout=la)
    StoreGlobal(n2, gy)
    o1 = Mul(a, b)
    o2 = AllocateRegister(f32, layout=la)
    Cast(o1, dtype=f32, out=o2)
    o3 = Add(o2, a)
    StoreGlobal(o3, gv)
    k1 = Mul(b, a)
    k2 = Cast(k1, dtype=f32)
    StoreGlobal(k2, gv)
    g16 = Mul(c, c)
    StoreGlobal(g16, gw)
    gt = ViewGlobal(t_ptr, dtype=f32, shape=[2, 32])
    sh3 = AllocateShared(f32, shape=[2, 32])
    q1 = Mul(a, a)
    StoreShared(q1, sh3[0])
    StoreShared(b, sh3[1])
    Synchronize()
    q2 = LoadShared(sh3[1], layout=la)
    StoreGlobal(q2, gt[0])
    x2 = LoadGlobal(gx, layout=la)
    for i in range(0):
        Fma(a, a, x2, out=x2)
    StoreGlobal(x2, gt[1])
)";

// f16 arithmetic whose words are viewed as f32 and stored: the store must not make "NaNs" of the f32 view
// canonical (a word with one f16 NaN half is not an f32 NaN, or its other half is a value).
constexpr const char* kViewedF16 = R"(def viewed<1>[threads=32](f16* x_ptr, f32* o_ptr):
    gx = ViewGlobal(x_ptr, dtype=f16, shape=[32, 2])
    go = ViewGlobal(o_ptr, dtype=f32, shape=[32, 1])
    x = LoadGlobal(gx, layout=spatial(32, 1).local(1, 2))
    h = Add(x, x)
    v = View(h, dtype=f32, layout=spatial(32, 1))
    StoreGlobal(v, go)
)";

// Each result's mark: nullopt where the instruction has no mark to set (neither Elementwise nor Cast).
class Marks : public ir::IRVisitor {
 public:
  std::map<std::string, bool> marked;
  void visit_inst_stmt(const ir::InstStmt& s) override {
    if (s.results.empty()) return;
    if (const auto* e = s.inst->as<ir::ElementwiseInst>())
      marked[s.results[0]->name] = e->nan_payload_unobserved;
    if (const auto* c = s.inst->as<ir::CastInst>()) marked[s.results[0]->name] = c->nan_payload_unobserved;
  }
};

std::map<std::string, bool> marks_of(const ir::Program& p) {
  Marks m;
  m.visit_program(p);
  return m.marked;
}

// Each StoreGlobal's source and whether the store makes its NaN canonical, in program order.
class StoreMarks : public ir::IRVisitor {
 public:
  std::vector<std::pair<std::string, bool>> stores;
  void visit_inst_stmt(const ir::InstStmt& s) override {
    if (const auto* st = s.inst->as<ir::StoreGlobalInst>())
      stores.emplace_back(st->src.tensor->name, st->canonicalizes_nan);
  }
};

TEST(TransformAnalyzeNanPayload, MarksOnlyResultsWhoseReadersIgnoreNanBits) {
  Diagnostics diags;
  std::optional<ir::Program> program = ir::parse_program(kProgram, diags);
  ASSERT_TRUE(program) << diags.render("nan_payload.tile", kProgram);
  for (const auto& [name, marked] : marks_of(*program)) EXPECT_FALSE(marked) << name << " before the pass";
  const ir::Program analyzed = transform::analyze_nan_payload(*program);
  std::map<std::string, bool> m = marks_of(analyzed);
  EXPECT_TRUE(m.at("p"));     // read by a native Add
  EXPECT_TRUE(m.at("q"));     // a narrowing Cast and a native Sub
  EXPECT_TRUE(m.at("r"));     // stored by an f32 StoreGlobal, which makes the NaN canonical itself
  EXPECT_FALSE(m.at("s"));    // its bits are viewed as i32 and added as integers
  EXPECT_FALSE(m.at("t"));    // Where copies the code
  EXPECT_TRUE(m.at("c32"));   // a widening read only by a native Mul and a native Fma
  EXPECT_TRUE(m.at("f"));     // an Fma's result, stored by an f32 StoreGlobal
  EXPECT_TRUE(m.at("d"));     // read by a narrowing Cast
  EXPECT_FALSE(m.at("h"));    // a narrowing Cast: its NaN is always canonical, nothing to mark
  EXPECT_FALSE(m.at("lt"));   // a comparison
  EXPECT_FALSE(m.at("g16"));  // an f16 StoreGlobal sees the bits as they are
  // Through shared memory, StoreShared and LoadShared pass the bits on: m1 reaches only a native Add, n1 an
  // f32 StoreGlobal.
  EXPECT_TRUE(m.at("m1"));
  EXPECT_TRUE(m.at("n1"));
  // A Cast to the same type copies the bits: o1 reaches only a native Add through the copy into o2, k1 an f32
  // StoreGlobal through k2.
  EXPECT_TRUE(m.at("o1"));
  EXPECT_TRUE(m.at("k1"));
  // The f32 stores whose source may hold the hardware's NaN make it canonical: those of marked results and
  // of what their bits pass to (n2 through shared memory, k2 through the copy); not u (a Where of unmarked
  // values) nor the f16 stores.
  StoreMarks stores;
  stores.visit_program(analyzed);
  const std::vector<std::pair<std::string, bool>> expected = {
      {"h", false}, {"r", true},  {"u", false}, {"e", false},   {"f", true},   {"m3", true},
      {"n2", true}, {"o3", true}, {"k2", true}, {"g16", false}, {"q2", false}, {"x2", false}};
  EXPECT_EQ(stores.stores, expected);
  // A shared tensor that also receives a loaded tile keeps that tile's NaN bits in the interpreter: its
  // store reads them as they are, so q1, which shares it, is made canonical where it is computed. Likewise
  // a loaded tile that a loop may or may not accumulate into (x2 after zero or more Fmas).
  EXPECT_FALSE(m.at("q1"));
  // f16 words viewed as f32: h keeps its canonical NaN, and the store stores the words as they are.
  std::optional<ir::Program> viewed = ir::parse_program(kViewedF16, diags);
  ASSERT_TRUE(viewed) << diags.render("viewed.tile", kViewedF16);
  const ir::Program viewed_analyzed = transform::analyze_nan_payload(*viewed);
  EXPECT_FALSE(marks_of(viewed_analyzed).at("h"));
  StoreMarks viewed_stores;
  viewed_stores.visit_program(viewed_analyzed);
  EXPECT_EQ(viewed_stores.stores, (std::vector<std::pair<std::string, bool>>{{"v", false}}));
  // Running it again changes nothing: the same nodes come back.
  const ir::Program again = transform::analyze_nan_payload(analyzed);
  ASSERT_EQ(again.body.size(), analyzed.body.size());
  for (size_t k = 0; k < again.body.size(); ++k) EXPECT_EQ(again.body[k], analyzed.body[k]) << k;
  // The printer shows the marks as comments.
  EXPECT_NE(ir::print_program(analyzed).find("p = Mul(a, b)  # nan payload unobserved\n"), std::string::npos);
  EXPECT_NE(ir::print_program(analyzed).find("StoreGlobal(r, gy)  # canonicalizes nan\n"), std::string::npos);
  EXPECT_EQ(ir::print_program(*program).find("#"), std::string::npos);
}

TEST(TransformAnalyzeNanPayload, TheEmitterReadsTheMarks) {
  Diagnostics diags;
  std::optional<ir::Program> program = ir::parse_program(kProgram, diags);
  ASSERT_TRUE(program) << diags.render("nan_payload.tile", kProgram);
  const ir::Program lowered =
      transform::lower(*program, {.target = target::Target::for_arch("sm_90"), .verify_each_pass = true});
  const std::string cuda =
      codegen::cuda::emit_cuda(lowered, {.target = target::Target::for_arch("sm_90")}).source;
  EXPECT_NE(cuda.find("tv_fast_f32<2, false>"), std::string::npos);   // p = Mul(a, b)
  EXPECT_NE(cuda.find("tv_fast_f32<1, false>("), std::string::npos);  // r = Sub(q, b): its store canonical
  EXPECT_EQ(cuda.find("tv_fast_f32<1>("), std::string::npos);
  EXPECT_NE(cuda.find("tv_f16_to_f32<false>("), std::string::npos);  // c32
  EXPECT_NE(cuda.find("tv_fma_f32<false>("), std::string::npos);     // f = Fma(a, b, c32): likewise
  EXPECT_NE(cuda.find("r_r[w] = tv_canonical_f32("), std::string::npos);
  EXPECT_NE(cuda.find("r_f[w] = tv_canonical_f32("), std::string::npos);
  EXPECT_EQ(cuda.find("r_u[w] = tv_canonical_f32("), std::string::npos);
  // Without the marks every NaN is made canonical.
  const ir::Program unmarked = transform::plan_shared_memory(transform::infer_threads(*program));
  const std::string canonical =
      codegen::cuda::emit_cuda(unmarked, {.target = target::Target::for_arch("sm_90")}).source;
  EXPECT_NE(canonical.find("tv_fast_f32<2>("), std::string::npos);
  EXPECT_EQ(canonical.find("tv_fast_f32<2, false>"), std::string::npos);
  EXPECT_EQ(canonical.find("tv_f16_to_f32<false>("), std::string::npos);
}

// On the GPU, with NaNs of several payloads and signs among the inputs: every output byte equals the
// interpreter's (the canonical NaN wherever a NaN is stored, whichever instructions kept the hardware's;
// the Fma's single rounding too).
TEST(TransformAnalyzeNanPayloadGpu, NansMatchTheInterpreterBitForBit) {
  if (!exec::gpu_available()) GTEST_SKIP() << "no CUDA device";
  Diagnostics diags;
  std::optional<ir::Program> program = ir::parse_program(kProgram, diags);
  ASSERT_TRUE(program);
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> real(-2.0f, 2.0f);
  const uint32_t f32_nans[] = {0x7fc00000u, 0x7fa00001u, 0xffc00000u, 0x7f800001u, 0xffffffffu};
  const uint16_t f16_nans[] = {0x7e00, 0x7d01, 0xfe00, 0x7c01};
  std::vector<uint8_t> x(32 * 4), y(32 * 4), z(32 * 2, 0xff), w(32 * 2), v(32 * 4, 0xff), tt(64 * 4, 0xff);
  for (int i = 0; i < 32; ++i) {
    float a = real(rng), b = real(rng);
    uint32_t ab, bb;
    std::memcpy(&ab, &a, 4);
    std::memcpy(&bb, &b, 4);
    if (i % 3 == 0) ab = f32_nans[i % 5];
    if (i % 7 == 1) bb = f32_nans[(i + 2) % 5];
    if (i == 10) ab = 0x7f800000u;  // inf - inf and inf * 0 below make NaNs from no NaN
    std::memcpy(&x[4 * static_cast<size_t>(i)], &ab, 4);
    std::memcpy(&y[4 * static_cast<size_t>(i)], &bb, 4);
    const uint16_t h = i % 4 == 2 ? f16_nans[i % 4] : static_cast<uint16_t>(0x3c00 + i);
    std::memcpy(&w[2 * static_cast<size_t>(i)], &h, 2);
  }
  std::map<std::string, std::vector<uint8_t>> cpu = {{"x_ptr", x}, {"y_ptr", y}, {"z_ptr", z},
                                                     {"w_ptr", w}, {"v_ptr", v}, {"t_ptr", tt}};
  std::map<std::string, std::vector<uint8_t>> gpu = cpu;
  interp::Arguments ca, ga;
  for (auto& [n, b] : cpu) ca.buffers[n] = &b;
  for (auto& [n, b] : gpu) ga.buffers[n] = &b;
  Diagnostics cd, gd;
  ASSERT_TRUE(interp::run_program(*program, ca, cd)) << cd.render("nan_payload.tile", kProgram);
  ASSERT_TRUE(exec::run_on_gpu(*program, ga, gd)) << gd.render("nan_payload.tile", kProgram);
  for (const auto& [name, bytes] : cpu) EXPECT_EQ(bytes, gpu.at(name)) << name;
}

}  // namespace
}  // namespace tilevm
