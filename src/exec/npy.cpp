#include "tilevm/exec/npy.h"

#include <cctype>

#include <fmt/ranges.h>

#include "tilevm/support/error.h"
#include "tilevm/support/file_io.h"

namespace tilevm::npy {

namespace {

constexpr char kMagic[] = "\x93NUMPY";

struct DescrInfo {
  const char* descr;
  int size;
};
constexpr DescrInfo kDescrs[] = {{"<f2", 2}, {"<f4", 4}, {"<f8", 8}, {"|i1", 1}, {"<i2", 2}, {"<i4", 4},
                                 {"<i8", 8}, {"|u1", 1}, {"<u2", 2}, {"<u4", 4}, {"<u8", 8}, {"|b1", 1}};

// A tiny reader for the header's Python dict literal: {'descr': '<f4', 'fortran_order': False, 'shape': (2,
// 3), }
class HeaderParser {
 public:
  HeaderParser(std::string_view text, std::string_view name) : s_(text), name_(name) {}

  void parse(Array& out) {
    bool have_descr = false, have_order = false, have_shape = false;
    expect('{');
    while (true) {
      skip();
      if (peek() == '}') break;
      std::string key = string();
      expect(':');
      if (key == "descr") {
        out.descr = canonical_descr(string(), name_);
        have_descr = true;
      } else if (key == "fortran_order") {
        skip();
        if (s_.substr(pos_, 4) == "True") fail("{}: Fortran-order arrays are not supported", name_);
        if (s_.substr(pos_, 5) != "False") bad("True or False");
        pos_ += 5;
        have_order = true;
      } else if (key == "shape") {
        expect('(');
        while (true) {
          skip();
          if (peek() == ')') break;
          out.shape.push_back(integer());
          skip();
          if (peek() == ',') ++pos_;
        }
        ++pos_;
        have_shape = true;
      } else {
        fail("{}: unknown key '{}' in the .npy header", name_, key);
      }
      skip();
      if (peek() == ',') ++pos_;
    }
    if (!have_descr || !have_order || !have_shape) {
      fail("{}: the .npy header lacks one of 'descr', 'fortran_order', 'shape'", name_);
    }
  }

 private:
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  void skip() {
    while (pos_ < s_.size() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }
  [[noreturn]] void bad(const char* what) {
    fail("{}: malformed .npy header at character {}: expected {}", name_, pos_, what);
  }
  void expect(char c) {
    skip();
    if (peek() != c) bad(std::string(1, c).c_str());
    ++pos_;
  }
  std::string string() {
    skip();
    const char q = peek();
    if (q != '\'' && q != '"') bad("a quoted string");
    const size_t end = s_.find(q, pos_ + 1);
    if (end == std::string_view::npos) bad("a closing quote");
    std::string out(s_.substr(pos_ + 1, end - pos_ - 1));
    pos_ = end + 1;
    return out;
  }
  int64_t integer() {
    skip();
    size_t start = pos_;
    while (pos_ < s_.size() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    if (start == pos_) bad("a dimension");
    if (pos_ < s_.size() && s_[pos_] == 'L') ++pos_;  // Python 2 long suffix
    if (pos_ - start > 15) fail("{}: a dimension of the .npy shape is too large", name_);
    return std::stoll(std::string(s_.substr(start, pos_ - start)));
  }

  std::string_view s_;
  std::string_view name_;
  size_t pos_ = 0;
};

}  // namespace

int64_t Array::count() const {
  int64_t n = 1;
  for (int64_t e : shape) n *= e;
  return n;
}

int Array::item_size() const {
  for (const DescrInfo& d : kDescrs)
    if (descr == d.descr) return d.size;
  fail("unsupported .npy dtype '{}'", descr);
}

std::string canonical_descr(std::string_view descr, std::string_view name) {
  std::string d(descr);
  if (d.size() == 3 && (d[0] == '<' || d[0] == '|') && d[2] == '1') d[0] = '|';
  for (const DescrInfo& info : kDescrs)
    if (d == info.descr) return d;
  if (!d.empty() && d[0] == '>') fail("{}: big-endian .npy data ('{}') is not supported", name, descr);
  fail("{}: unsupported .npy dtype '{}' (supported: <f2 <f4 <f8 |i1 <i2 <i4 <i8 |u1 <u2 <u4 <u8 |b1)", name,
       descr);
}

Array parse(std::span<const uint8_t> bytes, std::string_view name) {
  if (bytes.size() < 10 ||
      std::string_view(reinterpret_cast<const char*>(bytes.data()), 6) != std::string_view(kMagic, 6)) {
    fail("{}: not a .npy file (no \\x93NUMPY magic)", name);
  }
  const int major = bytes[6];
  size_t header_len = 0, start = 0;
  if (major == 1) {
    header_len = bytes[8] | static_cast<size_t>(bytes[9]) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12) fail("{}: truncated .npy header", name);
    header_len = bytes[8] | static_cast<size_t>(bytes[9]) << 8 | static_cast<size_t>(bytes[10]) << 16 |
                 static_cast<size_t>(bytes[11]) << 24;
    start = 12;
  } else {
    fail("{}: unsupported .npy format version {}.{}", name, major, bytes[7]);
  }
  if (start + header_len > bytes.size()) fail("{}: truncated .npy header", name);
  Array out;
  HeaderParser(std::string_view(reinterpret_cast<const char*>(bytes.data()) + start, header_len), name)
      .parse(out);
  for (int64_t e : out.shape)
    if (e < 0) fail("{}: negative dimension in the .npy shape", name);
  const size_t data_start = start + header_len;
  const int64_t have = static_cast<int64_t>(bytes.size() - data_start);
  // The element count and byte size in checked arithmetic: a shape whose product wraps to the file's size
  // would otherwise be accepted with a wrong count.
  int64_t count = 1, need = 0;
  for (int64_t e : out.shape) {
    if (__builtin_mul_overflow(count, e, &count)) {
      fail("{}: the .npy shape ({}) has more than 2^63 elements", name, fmt::join(out.shape, ", "));
    }
  }
  if (__builtin_mul_overflow(count, static_cast<int64_t>(out.item_size()), &need)) {
    fail("{}: the .npy shape ({}) of {} needs more than 2^63 bytes", name, fmt::join(out.shape, ", "),
         out.descr);
  }
  if (have != need) {
    fail("{}: the .npy data has {} bytes but {} elements of {} need {}", name, have, out.count(), out.descr,
         need);
  }
  out.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(data_start), bytes.end());
  return out;
}

Array read(const std::string& path, int64_t max_bytes) {
  return parse(read_file(path, max_bytes), path);
}

std::vector<uint8_t> serialize(const Array& array) {
  canonical_descr(array.descr, "array");
  if (static_cast<int64_t>(array.data.size()) != array.count() * array.item_size()) {
    fail("array data has {} bytes but {} elements of {} need {}", array.data.size(), array.count(),
         array.descr, array.count() * array.item_size());
  }
  std::string shape;  // `()`, `(4,)`, `(2, 3)`
  for (size_t d = 0; d < array.shape.size(); ++d) shape += (d ? ", " : "") + std::to_string(array.shape[d]);
  if (array.shape.size() == 1) shape += ",";
  std::string header = "{'descr': '" + array.descr + "', 'fortran_order': False, 'shape': (" + shape + "), }";
  const bool v2 = header.size() + 11 > 65535;
  const size_t prefix = v2 ? 12 : 10;
  const size_t total = (prefix + header.size() + 1 + 63) / 64 * 64;
  header.append(total - prefix - header.size() - 1, ' ');
  header += '\n';
  std::vector<uint8_t> out(kMagic, kMagic + 6);
  out.push_back(v2 ? 2 : 1);
  out.push_back(0);
  const size_t len = header.size();
  out.push_back(static_cast<uint8_t>(len & 0xff));
  out.push_back(static_cast<uint8_t>(len >> 8 & 0xff));
  if (v2) {
    out.push_back(static_cast<uint8_t>(len >> 16 & 0xff));
    out.push_back(static_cast<uint8_t>(len >> 24 & 0xff));
  }
  out.insert(out.end(), header.begin(), header.end());
  out.insert(out.end(), array.data.begin(), array.data.end());
  return out;
}

void write(const std::string& path, const Array& array) {
  write_file(path, serialize(array));
}

std::string descr_for(DataType type) {
  if (type.is_bool()) return "|b1";
  if (type.bits() < 8 || type.is_low_bit_float()) return "|u1";
  if (type == DataType::bf16()) return "<u2";
  if (type.is_float()) return type.bits() == 16 ? "<f2" : type.bits() == 32 ? "<f4" : "<f8";
  const char kind = type.kind() == TypeKind::SignedInt ? 'i' : 'u';
  const int bytes = type.bits() / 8;
  return fmt::format("{}{}{}", bytes == 1 ? '|' : '<', kind, bytes);
}

}  // namespace tilevm::npy
