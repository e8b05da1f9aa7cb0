// tilevm dtype NAME [--table]: describes a data type (docs/language.md sections 2 and 6).
//
// Default output, for example for f8e4m3:
//   dtype f8e4m3 bits=8 kind=float
//   exponent_bits=4 mantissa_bits=3 bias=7
//   min=-448 max=448
//   smallest_normal=0.015625 smallest_subnormal=0.001953125
//   inf=none
//   nan=0x7f,0xff
//   storage=1 byte
// (for IEEE-like types inf=<+inf>,<-inf> and nan=<range>,<range> as hex codes)
// --table (types of 8 bits or fewer) prints one line per code, `code value`, and nothing else.
#include <cstdint>
#include <iostream>
#include <memory>
#include <numeric>
#include <string>

#include "commands.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"
#include "tilevm/type/data_type.h"

namespace tilevm::cli {

namespace {

std::string hex_code(DataType type, uint64_t code) {
  return fmt::format("{:#0{}x}", code, 2 + (type.bits() + 3) / 4);
}

// "a..b" for a range of codes, "a" for one.
std::string code_range(DataType type, uint64_t first, uint64_t last) {
  return first == last ? hex_code(type, first) : hex_code(type, first) + ".." + hex_code(type, last);
}

// The special codes, from their definition in docs/language.md section 2 (no scan: f64 has 2^53 NaN codes).
void print_specials(DataType type) {
  const uint64_t sign = uint64_t{1} << (type.bits() - 1);
  switch (type.float_specials()) {
    case FloatSpecials::None:
      fmt::print("inf=none\nnan=none\n");
      return;
    case FloatSpecials::NanOnly:
      fmt::print("inf=none\nnan={},{}\n", hex_code(type, type.nan_code()),
                 hex_code(type, sign | type.nan_code()));
      return;
    case FloatSpecials::InfNan: {
      const uint64_t inf = type.inf_code(false);
      fmt::print("inf={},{}\n", hex_code(type, inf), hex_code(type, sign | inf));
      fmt::print("nan={},{}\n", code_range(type, inf + 1, sign - 1),
                 code_range(type, sign | (inf + 1), type.code_mask()));
      return;
    }
  }
}

void print_summary(DataType type) {
  fmt::print("dtype {} bits={} kind={}\n", type.name(), type.bits(), to_string(type.kind()));
  if (type.is_float()) {
    fmt::print("exponent_bits={} mantissa_bits={} bias={}\n", type.exponent_bits(), type.mantissa_bits(),
               type.bias());
    fmt::print("min={} max={}\n", format_value(type.min_value()), format_value(type.max_value()));
    fmt::print("smallest_normal={} smallest_subnormal={}\n", format_value(type.smallest_normal()),
               format_value(type.smallest_subnormal()));
    print_specials(type);
  } else {
    // Integers print exactly, also i64/u64 whose limits a double would round.
    if (type.kind() == TypeKind::SignedInt) {
      fmt::print("min={} max={}\n", type.int_min(), type.int_max());
    } else {
      fmt::print("min=0 max={}\n", type.int_max());
    }
  }
  if (type.is_sub_byte()) {
    const int group = std::gcd(8, type.bits());  // the smallest whole-byte run holds 8 / group elements
    fmt::print("storage=packed, {} elements in {} byte{}\n", 8 / group, type.bits() / group,
               type.bits() / group == 1 ? "" : "s");
  } else {
    fmt::print("storage={} byte{}\n", type.storage_bytes(), type.storage_bytes() == 1 ? "" : "s");
  }
}

void print_table(DataType type) {
  if (type.bits() > 8) fail("--table needs a type of 8 bits or fewer, {} has {}", type.name(), type.bits());
  // bool is stored in a byte but only 0 and 1 are bool codes.
  const uint64_t codes = type.is_bool() ? 2 : uint64_t{1} << type.bits();
  std::string out;
  for (uint64_t code = 0; code < codes; ++code)
    out += fmt::format("{} {}\n", code, format_value(decode(type, code)));
  std::cout << out;
}

}  // namespace

void add_dtype_command(CLI::App& app) {
  auto* command = app.add_subcommand("dtype", "describe a data type, or list the value of every code");
  auto name = std::make_shared<std::string>();
  auto table = std::make_shared<bool>(false);
  command
      ->add_option("NAME", *name,
                   "a type name: i1..i8, i16, i32, i64, u1.., f<b>e<E>m<M>, f16, bf16, f32, f64, bool")
      ->required();
  command->add_flag("--table", *table, "print `code value` for every code (types of 8 bits or fewer)");
  command->callback([name, table] {
    const DataType type = DataType::parse(*name);
    if (*table) {
      print_table(type);
    } else {
      print_summary(type);
    }
  });
}

}  // namespace tilevm::cli
