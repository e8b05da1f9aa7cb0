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

// The runs of every schedule (run_schedules below), then, for a program that takes tickets over several
// blocks, one more with the blocks last to first: the interpreter hands tickets out in the order it runs the
// blocks, so a program that assumes which block takes the last ticket (or reads another block's stores in
// the same launch without one) passes in one order only. The cross-block check reports what that run does
// out of order; its results must match the first run's unless blocks add atomically.
bool run_blocks_both_ways(const ir::Program& program, Arguments& args, Diagnostics& diags,
                          const RunOptions& options);

}  // namespace

// Every schedule of the regions (once without regions), from the same inputs (RunOptions::schedules).
bool run_schedules(const ir::Program& program, Arguments& args, Diagnostics& diags,
                   const RunOptions& options);

namespace {

// The first element where two runs' buffers differ, as a message; empty when they agree.
std::string first_difference(const ir::Program& program, const std::string& name,
                             const std::vector<uint8_t>& a, const std::vector<uint8_t>& b,
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
          "the results depend on the schedule: element {} of '{}' is {} under schedule {} and {} under {} "
          "(a race that no barrier orders, on global memory or between regions)",
          e, name, detail::format_code(dtype, x), a_name, detail::format_code(dtype, y), b_name);
  }
  return fmt::format("the results depend on the schedule: '{}' differs under schedules {} and {}", name,
                     a_name, b_name);
}

}  // namespace

bool run_program(const ir::Program& program, Arguments& args, Diagnostics& diags, const RunOptions& options) {
  const bool both_ways = !options.reverse_blocks && options.first_block <= 0 && options.num_blocks < 0 &&
                         has_inst(program, ir::InstKind::TakeTicket);
  return both_ways ? run_blocks_both_ways(program, args, diags, options)
                   : run_schedules(program, args, diags, options);
}

namespace {

bool run_blocks_both_ways(const ir::Program& program, Arguments& args, Diagnostics& diags,
                          const RunOptions& options) {
  std::map<std::string, std::vector<uint8_t>> buffers;
  for (const auto& [name, buffer] : args.buffers) buffers[name] = *buffer;
  if (!run_schedules(program, args, diags, options)) return false;
  Arguments again = args;
  for (auto& [name, buffer] : buffers) again.buffers[name] = &buffer;
  RunOptions reversed = options;
  reversed.print_stream = nullptr;
  reversed.reverse_blocks = true;
  if (!options.schedules.empty())
    reversed.schedules = {options.schedules[0]};
  else
    reversed.schedules = {Schedule{}};
  if (!run_schedules(program, again, diags, reversed)) {
    diags.add(Severity::Note, program.loc,
              "with the blocks run last to first (the tickets then go to other blocks; the first run, first "
              "to last, completed)");
    return false;
  }
  if (has_inst(program, ir::InstKind::AtomicAddGlobal)) return true;  // sums in another order may round apart
  for (const auto& [name, buffer] : buffers) {
    const std::string diff =
        first_difference(program, name, *args.buffers.at(name), buffer, "first to last", "last to first");
    if (!diff.empty()) {
      diags.error(program.loc, "{}",
                  std::string("the results depend on the order of the blocks") + diff.substr(diff.find(':')));
      return false;
    }
  }
  return true;
}

}  // namespace

bool run_schedules(const ir::Program& program, Arguments& args, Diagnostics& diags,
                   const RunOptions& options) {
  if (!has_regions(program)) return detail::run_schedule(program, args, diags, options, Schedule{});
  const std::vector<Schedule> schedules =
      options.schedules.empty() ? Schedule::standard() : options.schedules;
  auto note_schedule = [&](const Schedule& s) {
    if (schedules.size() > 1)
      diags.add(Severity::Note, program.loc,
                fmt::format("under the schedule {} of the regions (tilevm run --schedule {} runs only it)",
                            s.name(), s.name()));
  };
  // The inputs of every run: the buffers as given.
  std::map<std::string, std::vector<uint8_t>> inputs;
  if (schedules.size() > 1)
    for (const auto& [name, buffer] : args.buffers) inputs[name] = *buffer;
  // The first schedule's run writes the results and prints.
  if (!detail::run_schedule(program, args, diags, options, schedules[0])) {
    note_schedule(schedules[0]);
    return false;
  }
  RunOptions quiet = options;
  quiet.print_stream = nullptr;
  for (size_t k = 1; k < schedules.size(); ++k) {
    std::map<std::string, std::vector<uint8_t>> buffers = inputs;
    Arguments again = args;
    for (auto& [name, buffer] : buffers) again.buffers[name] = &buffer;
    if (!detail::run_schedule(program, again, diags, quiet, schedules[k])) {
      note_schedule(schedules[k]);
      return false;
    }
    for (const auto& [name, buffer] : buffers) {
      const std::string diff = first_difference(program, name, *args.buffers.at(name), buffer,
                                                schedules[0].name(), schedules[k].name());
      if (!diff.empty()) {
        diags.error(program.loc, "{}", diff);
        return false;
      }
    }
  }
  return true;
}

}  // namespace tilevm::interp
