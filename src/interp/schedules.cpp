// The schedules of warp-specialized regions (interp::Schedule) and run_program, the public entry point,
// which explores them: a program with regions runs once per schedule from the same inputs, and every run
// must complete and compute the same results. An ordering bug shows in some interleavings only (a consumer
// that reads a stage before waiting for it reads stale data under one schedule and an in-flight copy under
// another), so one run is not enough; a difference in the results that no check caught (a race on global
// memory, which the checker does not follow) is reported too.
#include <charconv>

#include <fmt/format.h>

#include "machine.h"
#include "tilevm/ir/visitor.h"
#include "tilevm/type/packing.h"

namespace tilevm::interp {

std::string Schedule::name() const {
  switch (policy) {
    case Policy::InOrder:
      return "in-order";
    case Policy::Reverse:
      return "reverse";
    case Policy::RoundRobin:
      return "round-robin";
    case Policy::Random:
      return fmt::format("random:{}", seed);
  }
  return "?";
}

std::optional<Schedule> Schedule::parse(std::string_view text) {
  if (text == "in-order") return Schedule{Policy::InOrder, 0};
  if (text == "reverse") return Schedule{Policy::Reverse, 0};
  if (text == "round-robin") return Schedule{Policy::RoundRobin, 0};
  constexpr std::string_view kRandom = "random:";
  if (text.substr(0, kRandom.size()) != kRandom) return std::nullopt;
  const std::string_view digits = text.substr(kRandom.size());
  uint64_t seed = 0;
  const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), seed);
  if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size()) return std::nullopt;
  return Schedule{Policy::Random, seed};
}

std::vector<Schedule> Schedule::standard() {
  std::vector<Schedule> out = {{Policy::InOrder, 0}, {Policy::Reverse, 0}, {Policy::RoundRobin, 0}};
  for (uint64_t seed = 1; seed <= 4; ++seed) out.push_back({Policy::Random, seed});
  return out;
}

namespace {

bool has_regions(const ir::Program& program) {
  struct Finder : ir::IRVisitor {
    bool found = false;
    void visit_region(const ir::RegionStmt&) override { found = true; }
  } finder;
  finder.visit_program(program);
  return finder.found;
}

// Whether the program has an instruction of `kind`.
bool has_inst(const ir::Program& program, ir::InstKind kind) {
  struct Finder : ir::IRVisitor {
    ir::InstKind kind;
    bool found = false;
    void visit_inst_stmt(const ir::InstStmt& s) override {
      found |= s.inst && s.inst->kind == kind;
      ir::IRVisitor::visit_inst_stmt(s);
    }
  } finder;
  finder.kind = kind;
  finder.visit_program(program);
  return finder.found;
}

// The first element where two runs' buffers differ, as a message naming what differed between the runs
// (`what`: "the schedule", "the order of the blocks"); empty when they agree.
std::string first_difference(const ir::Program& program, const std::string& name,
                             const std::vector<uint8_t>& a, const std::vector<uint8_t>& b, const char* what,
                             const std::string& a_name, const std::string& b_name) {
  if (a == b) return "";
  DataType dtype = DataType::u8();
  for (const ir::Var& p : program.params)
    if (p->name == name) dtype = p->type.dtype;
  const int64_t elements = static_cast<int64_t>(a.size()) * 8 / dtype.bits();
  for (int64_t e = 0; e < elements; ++e) {
    const uint64_t x = get_code(a.data(), dtype.bits(), e), y = get_code(b.data(), dtype.bits(), e);
    if (x != y)
      return fmt::format(
          "the results depend on {}: element {} of '{}' is {} under {} and {} under {} ({})", what, e, name,
          detail::format_code(dtype, x), a_name, detail::format_code(dtype, y), b_name,
          what == std::string("the schedule")
              ? "a race that no barrier orders, on global memory or between regions"
              : "which block takes which ticket, or a race between blocks that no ticket orders");
  }
  return fmt::format("the results depend on {}: '{}' differs under {} and {}", what, name, a_name, b_name);
}

// One run of the program: a schedule of its regions, and the order of its blocks.
struct Run {
  Schedule schedule;
  bool reversed = false;
  // As a difference names it: against another schedule, or against the other order of the blocks.
  std::string name(bool blocks) const {
    return blocks ? (reversed ? "the blocks last to first" : "the blocks first to last")
                  : "schedule " + schedule.name();
  }
};

}  // namespace

// The program runs once per schedule of its regions (once without regions), all from the same inputs; the
// first run writes the results and prints, each other must complete too and compute the same results. A
// program that takes tickets runs once more with its blocks last to first: the interpreter hands tickets
// out in the order it runs the blocks, so a program that assumes which block takes the last ticket (or reads
// another block's stores in the same launch without one) passes in one order only. Its results must match
// too, unless blocks add atomically (float sums in another order may round apart).
bool run_program(const ir::Program& program, Arguments& args, Diagnostics& diags, const RunOptions& options) {
  // (The blocks of a cluster take turns like regions.)
  const bool regions = has_regions(program) || !program.cluster.empty();
  const std::vector<Schedule> schedules = !regions                    ? std::vector<Schedule>{Schedule{}}
                                          : options.schedules.empty() ? Schedule::standard()
                                                                      : options.schedules;
  std::vector<Run> runs;
  for (const Schedule& s : schedules) runs.push_back({s, options.reverse_blocks});
  if (!options.reverse_blocks && options.first_block <= 0 && options.num_blocks < 0 &&
      has_inst(program, ir::InstKind::TakeTicket))
    runs.push_back({schedules[0], true});
  auto note = [&](const Run& r) {
    if (r.reversed && !options.reverse_blocks)
      diags.add(Severity::Note, program.loc,
                "with the blocks run last to first (the tickets then go to other blocks; the run first to "
                "last completed)");
    else if (schedules.size() > 1)
      diags.add(Severity::Note, program.loc,
                fmt::format("under the schedule {} of the regions (tilevm run --schedule {} runs only it)",
                            r.schedule.name(), r.schedule.name()));
  };
  int64_t steps = 0;  // RunOptions::max_steps bounds all the runs together
  auto run = [&](const Run& r, Arguments& a, const RunOptions& o) {
    RunOptions with = o;
    with.reverse_blocks = r.reversed;
    if (detail::run_schedule(program, a, diags, with, r.schedule, steps)) return true;
    note(r);
    return false;
  };
  // The inputs of every run: the buffers as given.
  std::map<std::string, std::vector<uint8_t>> inputs;
  if (runs.size() > 1)
    for (const auto& [name, buffer] : args.buffers) inputs[name] = *buffer;
  if (!run(runs[0], args, options)) return false;
  RunOptions quiet = options;
  quiet.print_stream = nullptr;
  const bool atomics = has_inst(program, ir::InstKind::AtomicAddGlobal);
  for (size_t k = 1; k < runs.size(); ++k) {
    std::map<std::string, std::vector<uint8_t>> buffers = inputs;
    Arguments again = args;
    for (auto& [name, buffer] : buffers) again.buffers[name] = &buffer;
    if (!run(runs[k], again, quiet)) return false;
    if (runs[k].reversed != runs[0].reversed && atomics) continue;
    const bool blocks = runs[k].reversed != runs[0].reversed;
    for (const auto& [name, buffer] : buffers) {
      const std::string diff = first_difference(program, name, *args.buffers.at(name), buffer,
                                                blocks ? "the order of the blocks" : "the schedule",
                                                runs[0].name(blocks), runs[k].name(blocks));
      if (!diff.empty()) {
        diags.error(program.loc, "{}", diff);
        return false;
      }
    }
  }
  return true;
}

}  // namespace tilevm::interp
