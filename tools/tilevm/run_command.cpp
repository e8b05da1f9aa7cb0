// tilevm run FILE.tile [--interp|--gpu] [-D NAME=VALUE]... [--arg NAME=VALUE]... [--in NAME=FILE.npy]...
//                      [--out NAME=FILE.npy]... [--pack NAME]... [--max-memory BYTES] [--max-steps N]
//                      [--schedule NAME]...
//
// Parses and lowers the program (transform/lower.h, which verifies it first), then runs it (docs/language.md
// section 6). Every pointer parameter needs --in NAME=FILE.npy: its content is the buffer's initial content
// and fixes its size; the .npy dtype must be the host form of the pointee type (npy::descr_for: `<f2` for
// f16, `<u2` for bf16, `|u1` raw packed bytes for sub-byte and 8-bit float types, ...); any shape is
// accepted, the bytes are what counts. Every scalar parameter needs --arg NAME=VALUE. --out NAME=FILE.npy
// writes that buffer after the run, with the dtype and shape of its --in file (atomically: npy::write).
// Print() output goes to stdout. --max-memory is the interpreter's budget (interp::RunOptions::max_memory)
// and the largest --in file; --max-steps its work budget (interp::RunOptions::max_steps; no limit by
// default). A scalar outside its parameter's type is refused with the type's range.
// --pack NAME: NAME's --in file holds the tensor's elements, shaped like it, in row-major order (one code a
// byte for the sub-byte types), and the run stores them in the tiles of the view that reads NAME (its
// `layout=`, or the one the compiler chose for `layout=auto`, which the host cannot know); its --out file is
// unpacked back to that form. Python does the same with Kernel.param_layouts[NAME].pack_tiled.
// --schedule (in-order, reverse, round-robin, random:N; repeatable) runs a program with warp-specialized
// regions under those schedules only, on the interpreter (interp::Schedule; the default explores
// Schedule::standard()).
//
// Exit status: 0 on success; 1 on a program error (parse, verify or run diagnostics on stderr as
// FILE:LINE:COL: error: ...) or bad input data (an unreadable or mismatched .npy file); 2 on bad
// command-line use (a malformed NAME=VALUE, an unknown parameter or -D constant, a missing --in or --arg, a
// value out of its type's range).
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <fmt/ranges.h>

#include "commands.h"
#include "tilevm/exec/device_target.h"
#include "tilevm/exec/gpu_runner.h"
#include "tilevm/exec/npy.h"
#include "tilevm/interp/interpreter.h"
#include "tilevm/interp/scalar_eval.h"
#include "tilevm/ir/inst/memory_global.h"
#include "tilevm/ir/parser.h"
#include "tilevm/ir/program.h"
#include "tilevm/layout/tiled_storage.h"
#include "tilevm/runtime/device.h"
#include "tilevm/support/diagnostics.h"
#include "tilevm/support/error.h"
#include "tilevm/target/target.h"
#include "tilevm/transform/lower.h"
#include "tilevm/type/packing.h"

namespace tilevm::cli {

namespace {

struct RunRequest {
  std::string file;
  bool interp = false;
  bool gpu = false;
  std::vector<std::string> defines, args, ins, outs, packs;
  std::string max_memory;
  int64_t max_steps = 0;
  std::vector<std::string> schedules;
  std::string arch;  // the target the tile layer lowers for; empty: the GPU's, or sm_80 on the interpreter
};

std::pair<std::string, std::string> split_assignment(const std::string& text, const char* option) {
  const size_t eq = text.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == text.size()) {
    throw UsageError(fmt::format("{} expects NAME=VALUE, got '{}'", option, text));
  }
  return {text.substr(0, eq), text.substr(eq + 1)};
}

const ir::Var* find_param(const ir::Program& p, const std::string& name) {
  for (const ir::Var& v : p.params)
    if (v->name == name) return &v;
  return nullptr;
}

// The shape of a tiled view with the scalar arguments' values; nullopt where a dimension reads something
// other than the parameters (a value the kernel computes), which the host cannot know before the run.
std::optional<layout::Index> view_shape(const ir::Program& program, const ir::ViewGlobalInst& view,
                                        const interp::Arguments& args) {
  struct Unknown {};
  layout::Index shape;
  try {
    for (const ir::Expr& e : view.shape) {
      const interp::ScalarValue v = interp::eval_scalar(e, [&](const ir::Var& var, SourceLoc) {
        auto it = args.scalars.find(var->name);
        if (it == args.scalars.end() || !find_param(program, var->name)) throw Unknown{};
        return it->second;
      });
      shape.push_back(v.is_float ? static_cast<int64_t>(v.f) : v.i);
    }
  } catch (const Unknown&) {
    return std::nullopt;
  } catch (const interp::ScalarEvalError&) {
    return std::nullopt;  // the run reports it where it happens
  }
  return shape;
}

// Whether the integer -magnitude (negative) or +magnitude fits the integer type.
bool fits_integer(DataType type, bool negative, uint64_t magnitude) {
  const int bits = type.bits();
  if (type.kind() == TypeKind::SignedInt) {
    const uint64_t max_positive = (uint64_t{1} << (bits - 1)) - 1;
    return magnitude <= max_positive + (negative ? 1 : 0);
  }
  if (negative) return magnitude == 0;
  return bits >= 64 || magnitude <= (uint64_t{1} << bits) - 1;
}

// The type's range for messages: `-128..127`, `0..255`.
std::string integer_range(DataType type) {
  const int bits = type.bits();
  if (type.kind() == TypeKind::SignedInt) {
    const uint64_t max = (uint64_t{1} << (bits - 1)) - 1;
    return fmt::format("-{}..{}", max + 1, max);
  }
  return fmt::format("0..{}", bits >= 64 ? UINT64_MAX : (uint64_t{1} << bits) - 1);
}

// A scalar argument as the parameter's type holds it: an integer outside the type's range is refused
// rather than wrapped (the program would silently see another value).
interp::ScalarValue parse_scalar(const std::string& name, const std::string& text, DataType type) {
  interp::ScalarValue v;
  size_t used = 0;
  try {
    if (type.is_bool()) {
      if (text == "True" || text == "true" || text == "1") {
        v.i = 1;
        return v;
      }
      if (text == "False" || text == "false" || text == "0") return v;
      used = 0;
    } else if (type.is_float()) {
      v.is_float = true;
      v.f = std::stod(text, &used);
      // A finite value past the type's largest would become inf or saturate: refused, as for integers.
      if (used == text.size() && std::isfinite(v.f) && std::abs(v.f) > type.max_value()) {
        throw UsageError(fmt::format("--arg {}: {} does not fit the parameter's type {} (largest finite {})",
                                     name, text, type.name(), type.max_value()));
      }
    } else {
      // The magnitude as unsigned 64 bits (stoull alone would accept "-1" and wrap it), then the range.
      const bool negative = !text.empty() && text[0] == '-';
      const std::string digits = negative || (!text.empty() && text[0] == '+') ? text.substr(1) : text;
      if (digits.empty() || !std::isalnum(static_cast<unsigned char>(digits[0])))
        throw std::invalid_argument("");
      const uint64_t magnitude = std::stoull(digits, &used, 0);
      used += text.size() - digits.size();
      if (used == text.size() && !fits_integer(type, negative, magnitude)) {
        throw UsageError(fmt::format("--arg {}: {} does not fit the parameter's type {} ({})", name, text,
                                     type.name(), integer_range(type)));
      }
      v.i = static_cast<int64_t>(negative ? 0 - magnitude : magnitude);
    }
  } catch (const UsageError&) {
    throw;
  } catch (const std::out_of_range&) {
    if (!type.is_float()) {
      throw UsageError(fmt::format("--arg {}: {} does not fit the parameter's type {} ({})", name, text,
                                   type.name(), integer_range(type)));
    }
    throw UsageError(fmt::format("--arg {}: {} is out of the range of {}", name, text, type.name()));
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || text.empty()) {
    throw UsageError(fmt::format("--arg {}: '{}' is not a valid {} value", name, text, type.name()));
  }
  return v;
}

void run(const RunRequest& req) {
  const ir::ParseOptions parse_options = parse_defines(req.defines);
  interp::RunOptions options;
  if (!req.max_memory.empty()) options.max_memory = parse_memory_size(req.max_memory);
  if (req.max_steps < 0)
    throw UsageError(fmt::format("--max-steps {}: expected a count >= 0", req.max_steps));
  options.max_steps = req.max_steps;
  for (const std::string& name : req.schedules) {
    const std::optional<interp::Schedule> s = interp::Schedule::parse(name);
    if (!s)
      throw UsageError(
          fmt::format("--schedule '{}': expected in-order, reverse, round-robin or random:N", name));
    options.schedules.push_back(*s);
  }
  // Check the command line's shape before reading anything.
  std::map<std::string, std::string> scalar_args, in_files, out_files;
  for (const std::string& a : req.args) {
    auto [name, value] = split_assignment(a, "--arg");
    scalar_args[name] = value;
  }
  for (const std::string& a : req.ins) {
    auto [name, value] = split_assignment(a, "--in");
    in_files[name] = value;
  }
  for (const std::string& a : req.outs) {
    auto [name, value] = split_assignment(a, "--out");
    out_files[name] = value;
  }

  // The GPU if asked for, or by default if one is present and no --schedule is given (docs/language.md
  // section 6); else the interpreter.
  const bool use_gpu = req.gpu || (!req.interp && req.schedules.empty() && exec::gpu_available());
  // The tile layer lowers for --arch, else for the GPU that runs it (TMA and wgmma on Hopper), else for
  // sm_80: the interpreter runs whichever lowering it is given, so --arch sm_90a checks Hopper's on the CPU.
  // On the GPU that is the target run_on_gpu compiles for (the device's limits, --arch's instructions).
  transform::LowerOptions lower;
  if (!req.arch.empty()) lower.target = target::Target::for_arch(req.arch);
  if (use_gpu) try {
      lower.target = exec::device_target(runtime::Device::open().info(), req.arch);
    } catch (const Error&) {
      // No driver or device: run_on_gpu says so below, at the kernel's definition.
    }
  std::string source;
  const std::optional<ir::Program> program = load_program(req.file, parse_options, lower, &source);
  Diagnostics diags;

  interp::Arguments args;
  for (const auto& [name, value] : scalar_args) {
    const ir::Var* p = find_param(*program, name);
    if (!p) throw UsageError(fmt::format("--arg {}: the program has no parameter '{}'", name, name));
    if (!(*p)->type.is_scalar())
      throw UsageError(fmt::format("--arg {}: '{}' is a pointer; give it with --in", name, name));
    args.scalars[name] = parse_scalar(name, value, (*p)->type.dtype);
  }
  for (const auto& [name, file] : in_files) {
    const ir::Var* p = find_param(*program, name);
    if (!p) throw UsageError(fmt::format("--in {}: the program has no parameter '{}'", name, name));
    if (!(*p)->type.is_pointer())
      throw UsageError(fmt::format("--in {}: '{}' is a scalar; give it with --arg", name, name));
  }
  for (const auto& [name, file] : out_files) {
    if (!in_files.count(name)) {
      throw UsageError(fmt::format("--out {}: '{}' is not a pointer parameter given with --in", name, name));
    }
  }
  // --pack NAME: the storage of the tiled view that reads NAME.
  std::map<std::string, const ir::ViewGlobalInst*> tiled_views;
  for (const auto& [name, view] : ir::pointer_views(*program)) tiled_views.emplace(name, view);
  std::map<std::string, const ir::ViewGlobalInst*> packs;
  for (const std::string& name : req.packs) {
    if (!in_files.count(name))
      throw UsageError(
          fmt::format("--pack {}: give the tensor's elements with --in {}=FILE.npy", name, name));
    auto it = tiled_views.find(name);
    if (it == tiled_views.end())
      throw UsageError(fmt::format(
          "--pack {}: no tiled view reads '{}' (a ViewGlobal with layout=), so its bytes are used as given",
          name, name));
    packs.emplace(name, it->second);
  }
  for (const ir::Var& p : program->params) {
    if (p->type.is_pointer() && !in_files.count(p->name)) {
      throw UsageError(
          fmt::format("missing --in {}=FILE.npy for the pointer parameter '{}'", p->name, p->name));
    }
    if (p->type.is_scalar() && !scalar_args.count(p->name)) {
      throw UsageError(fmt::format("missing --arg {}=VALUE for the scalar parameter '{}'", p->name, p->name));
    }
  }

  // Load the buffers.
  std::map<std::string, npy::Array> arrays;
  for (const auto& [name, file] : in_files) {
    npy::Array a = npy::read(file, options.max_memory);
    const DataType pointee = (*find_param(*program, name))->type.dtype;
    const std::string want = npy::descr_for(pointee);
    if (a.descr != want) {
      fail("--in {}={}: the file holds '{}' but '{}' is {}* (expected '{}')", name, file, a.descr, name,
           pointee.name(), want);
    }
    arrays[name] = std::move(a);
  }
  std::map<std::string, layout::TiledStorage> storages;
  for (const auto& [name, view] : packs) {
    npy::Array& a = arrays[name];
    const int bits = (*find_param(*program, name))->type.dtype.bits();
    // The file must be shaped like the view, not only hold as many elements: a transposed [K, N] file
    // would pack into the tiles without complaint and the kernel would read every element at another place.
    if (const std::optional<layout::Index> shape = view_shape(*program, *view, args);
        shape && !a.shape.empty() && a.shape != *shape)
      fail("--pack {} (--in {}={}): the file's shape [{}] is not the shape [{}] of the view that reads '{}'",
           name, name, in_files.at(name), fmt::join(a.shape, ", "), fmt::join(*shape, ", "), name);
    try {
      const layout::TiledStorage& storage =
          storages.try_emplace(name, *view->layout, a.shape.empty() ? layout::Index{1} : a.shape)
              .first->second;
      std::vector<uint64_t> codes(static_cast<size_t>(a.count()));
      for (size_t k = 0; k < codes.size(); ++k) codes[k] = get_code(a.data.data(), a.item_size() * 8, k);
      a.data = storage.pack(bits, codes);
    } catch (const Error& e) {
      fail("--pack {} (--in {}={}): {}", name, name, in_files.at(name), e.what());
    }
  }
  for (auto& [name, a] : arrays) args.buffers[name] = &a.data;

  options.print_stream = &std::cout;
  const bool ok = use_gpu ? exec::run_on_gpu(*program, args, diags, {.arch = req.arch})
                          : interp::run_program(*program, args, diags, options);
  if (!ok) {
    std::cout.flush();
    std::cerr << diags.render(req.file, source);
    throw ExitStatus{1};  // the diagnostics are the report
  }
  std::cout.flush();
  for (const auto& [name, file] : out_files) {
    npy::Array& a = arrays[name];
    if (auto it = storages.find(name); it != storages.end()) {  // back to one element per array element
      const std::vector<uint64_t> codes =
          it->second.unpack((*find_param(*program, name))->type.dtype.bits(), a.data);
      a.data.assign(codes.size() * static_cast<size_t>(a.item_size()), 0);
      for (size_t k = 0; k < codes.size(); ++k) set_code(a.data.data(), a.item_size() * 8, k, codes[k]);
    }
    npy::write(file, a);
  }
}

}  // namespace

void add_run_command(CLI::App& app) {
  auto* command = app.add_subcommand("run",
                                     "run a program on the GPU when one is present, else on the interpreter, "
                                     "with .npy files as its buffers");
  auto req = std::make_shared<RunRequest>();
  command->add_option("FILE", req->file, "the program (.tile)")->required();
  auto* interp_flag =
      command->add_flag("--interp", req->interp, "run on the CPU interpreter (the default without a GPU)");
  auto* gpu_flag = command->add_flag("--gpu", req->gpu, "run on the GPU (the default with one)");
  interp_flag->excludes(gpu_flag);
  command->add_option("-D", req->defines, "override a top-level constant: NAME=VALUE");
  command->add_option("--arg", req->args, "a scalar parameter: NAME=VALUE");
  command->add_option("--in", req->ins, "a pointer parameter's initial content: NAME=FILE.npy");
  command->add_option("--out", req->outs, "save a pointer parameter's buffer after the run: NAME=FILE.npy");
  command->add_option("--pack", req->packs,
                      "NAME's --in file holds its elements in row-major order: store them in the tiles its "
                      "view reads (layout=, or the one layout=auto chose); --out NAME unpacks them");
  command->add_option("--max-memory", req->max_memory,
                      "the interpreter's memory budget, e.g. 8G (default 4G; also the largest --in file)");
  command->add_option("--max-steps", req->max_steps,
                      "the interpreter's work budget: statements and tile elements (default 0: no limit)");
  command
      ->add_option("--schedule", req->schedules,
                   "run warp-specialized regions under this interleaving only, on the interpreter: in-order, "
                   "reverse, round-robin or random:N (repeatable; default: all of the first three and "
                   "random:1 to random:4)")
      ->excludes(gpu_flag);
  command->add_option(
      "--arch", req->arch,
      "the target the tile layer lowers for (sm_80, sm_90a, ...; default: the GPU's, or sm_80 on "
      "the interpreter)");
  command->callback([req] { run(*req); });
}

}  // namespace tilevm::cli
