// build_converter_program: the vectorized converters of converters.h, generated per (kind, bits, E/M).
#include <algorithm>
#include <bit>
#include <cmath>
#include <map>
#include <optional>

#include <fmt/format.h>

#include "tilevm/codegen/cuda/converters.h"
#include "tilevm/support/error.h"
#include "tilevm/type/convert.h"

namespace tilevm::codegen::cuda {

namespace {

using Kind = ConverterOp::Kind;

// Truth tables of lop3 (a = 0xf0, b = 0xcc, c = 0xaa).
constexpr uint32_t kAnd = 0xc0;     // a & b
constexpr uint32_t kOr = 0xfc;      // a | b
constexpr uint32_t kXor = 0x3c;     // a ^ b
constexpr uint32_t kAndXor = 0x6a;  // (a & b) ^ c
constexpr uint32_t kSelect = 0xb8;  // b ? c : a, bitwise: (a & ~b) | (b & c)
constexpr uint32_t kOrAnd = 0xf8;   // a | (b & c)
constexpr uint32_t kSignBits = 0x80008000;

uint32_t rep(uint32_t half) {
  return half | half << 16;
}

// A 16-bit destination.
struct Half {
  DataType type;
  Kind fma, add;
  uint32_t inf, nan, one;
  uint32_t magic;  // the code of 2^mantissa_bits: integers OR-ed into its mantissa are exact
  double magic_value;
  int mantissa() const { return type.mantissa_bits(); }
  int exponent() const { return type.exponent_bits(); }
  uint32_t code(double value) const { return static_cast<uint32_t>(encode(type, value)); }
};

const Half kF16{DataType::f16(), Kind::FmaF16x2, Kind::AddF16x2, 0x7c00, 0x7e00, 0x3c00, 0x6400, 1024.0};
const Half kBf16{DataType::bf16(), Kind::FmaBf16x2, Kind::AddBf16x2, 0x7f80, 0x7fc0, 0x3f80, 0x4300, 128.0};

class Builder {
 public:
  explicit Builder(ConverterProgram& program) : program_(program) {}

  int input(int word) {
    auto [it, fresh] = inputs_.try_emplace(word, 0);
    if (fresh) it->second = op(Kind::Input, -1, -1, -1, static_cast<uint32_t>(word));
    return it->second;
  }
  int konst(uint32_t value) {
    auto [it, fresh] = constants_.try_emplace(value, 0);
    if (fresh) it->second = op(Kind::Const, -1, -1, -1, value);
    return it->second;
  }
  int fconst(float value) { return konst(std::bit_cast<uint32_t>(value)); }
  int shl(int a, int n) { return n == 0 ? a : op(Kind::Shl, a, -1, -1, static_cast<uint32_t>(n)); }
  int shr(int a, int n) { return n == 0 ? a : op(Kind::Shr, a, -1, -1, static_cast<uint32_t>(n)); }
  int shift_left(int a, int n) { return n >= 0 ? shl(a, n) : shr(a, -n); }
  int funnel_shr(int lo, int hi, int n) {
    TILEVM_ASSERT(n > 0 && n < 32, "funnel shift by {}", n);
    return op(Kind::FunnelShr, lo, hi, -1, static_cast<uint32_t>(n));
  }
  int prmt(int a, int b, uint32_t selector) { return op(Kind::Prmt, a, b, -1, selector); }
  int lop3(int a, int b, int c, uint32_t lut) { return op(Kind::Lop3, a, b, c, lut); }
  int and_(int a, uint32_t mask) { return lop3(a, konst(mask), konst(mask), kAnd); }
  int add(int a, int b) { return op(Kind::Add, a, b, -1, 0); }
  int fma(Kind kind, int a, int b, int c) { return op(kind, a, b, c, 0); }
  int add_x2(Kind kind, int a, int b) { return op(kind, a, b, -1, 0); }
  int add_f32(int a, int b) { return op(Kind::AddF32, a, b, -1, 0); }
  int min_f32(int a, int b) { return op(Kind::MinF32, a, b, -1, 0); }
  int max_f32(int a, int b) { return op(Kind::MaxF32, a, b, -1, 0); }
  int cvt(Kind kind, int hi, int lo) { return op(kind, hi, lo, -1, 0); }
  void output(int word, int value) { op(Kind::Output, value, -1, -1, static_cast<uint32_t>(word)); }

 private:
  int op(Kind kind, int a, int b, int c, uint32_t imm) {
    program_.ops.push_back({kind, a, b, c, imm});
    return static_cast<int>(program_.ops.size()) - 1;
  }
  ConverterProgram& program_;
  std::map<int, int> inputs_;
  std::map<uint32_t, int> constants_;
};

class ConverterBuilder {
 public:
  explicit ConverterBuilder(ConverterProgram& program)
      : spec_(program.spec),
        from_(program.spec.from),
        bits_(from_.bits()),
        b_(program),
        notes_(program.notes) {}

  void build() {
    const bool to_f32 = spec_.to == DataType::f32();
    const Half& half = spec_.to == DataType::f16() ? kF16 : kBf16;
    describe(half, to_f32);
    for (int j = 0; j < (spec_.count + 1) / 2; ++j) {
      const bool has_high = 2 * j + 1 < spec_.count;
      if (from_.is_integer() && bits_ == 8 && spec_.to != DataType::f16()) {
        // u8/i8 to bf16 or f32: each element through the f32 magic 2^23.
        const int low = byte_to_f32(code(2 * j));
        const int high = has_high ? byte_to_f32(code(2 * j + 1)) : b_.konst(0);
        if (to_f32) {
          b_.output(2 * j, low);
          if (has_high) b_.output(2 * j + 1, high);
        } else {
          b_.output(j, b_.cvt(Kind::CvtBf16x2F32, high, low));
        }
        continue;
      }
      const int h = half_pair(j, half, has_high);
      if (to_f32) {  // bf16 to f32 is a shift (low half) and a mask (high half)
        b_.output(2 * j, b_.shl(h, 16));
        if (has_high) b_.output(2 * j + 1, b_.and_(h, 0xffff0000));
      } else {
        b_.output(j, h);
      }
    }
  }

 private:
  // The source code that output element k converts: order[k], or k without an order. Every step reads its
  // codes through this, so any permutation converts correctly.
  int code(int k) const { return spec_.order.empty() ? k : spec_.order[static_cast<size_t>(k)]; }

  // Elements 2j and 2j+1 converted to the 16-bit type `half`, packed in one word.
  int half_pair(int j, const Half& half, bool has_high) {
    if (from_.is_bool()) return bool_pair(j, half, has_high);
    if (from_.is_integer()) return int_pair(j, half, has_high);
    if (half.type == DataType::f16() && from_.exponent_bits() > half.exponent())
      return wide_float_to_f16_pair(j, has_high);
    return float_pair(j, half, has_high, true).value;
  }

  // Where the two codes of pair j lie 16 bits apart in one input word: the word and the low code's offset o
  // (the high code is at o + 16, and o + b <= 16, so neither straddles a half). Identity orders never have
  // such pairs (their codes are b bits apart); the weight transform's interleaved order has only such pairs.
  struct SplitPair {
    int word = 0;
    int offset = 0;
  };
  std::optional<SplitPair> split_pair(int j, bool has_high) const {
    if (!has_high || bits_ >= 8) return std::nullopt;  // 8-bit codes are placed by a prmt anyway
    const int low = code(2 * j) * bits_, high = code(2 * j + 1) * bits_;
    if (low / 32 != high / 32 || high - low != 16 || low % 32 + bits_ > 16) return std::nullopt;
    return SplitPair{low / 32, low % 32};
  }

  // Input word `word` shifted left by `left` bits (right for negative), made once per word and amount: the
  // pairs of one word share their shifts.
  int shifted_input(int word, int left) {
    if (left == 0) return b_.input(word);
    auto [it, fresh] = shifted_.try_emplace({word, left}, 0);
    if (fresh) it->second = b_.shift_left(b_.input(word), left);
    return it->second;
  }

  // One word with code 2j at bits [t, t+b) and code 2j+1 at bits [16+t, 16+t+b); other bits are junk. A
  // missing code 2j+1 reads as 0.
  int place_pair(int j, int t, bool has_high) {
    const int low_code = code(2 * j);
    if (bits_ == 8) {
      TILEVM_ASSERT(t <= 8, "8-bit code placed at bit {}", t);
      // Bytes 1 and 3 of the prmt word get the codes; bytes 0 and 2 read a zero byte (4) of the second
      // operand when both codes come from one word, else junk that the callers mask away.
      const uint32_t kk = static_cast<uint32_t>(low_code % 4);
      const int high_code = has_high ? code(2 * j + 1) : -1;
      const bool one_word = !has_high || high_code / 4 == low_code / 4;
      const uint32_t high_byte = static_cast<uint32_t>(high_code % 4) + (one_word ? 0u : 4u);
      const uint32_t high_selector = has_high ? high_byte << 12 : 4u << 12;
      const int word = b_.prmt(b_.input(low_code / 4), one_word ? b_.konst(0) : b_.input(high_code / 4),
                               high_selector | 4u << 8 | kk << 4 | 4u);
      byte_pair_ = word;
      return b_.shr(word, 8 - t);  // from bits [8, 16) of each half
    }
    // Codes 16 bits apart in one word are already at the same position of their halves: one shift.
    if (const std::optional<SplitPair> split = split_pair(j, has_high))
      return shifted_input(split->word, t - split->offset);
    const int low = extract(low_code * bits_, t);
    const int high = has_high ? extract(code(2 * j + 1) * bits_, 16 + t) : b_.konst(0);
    return b_.prmt(low, high, 0x7610);  // low half from `low`, high half from `high`
  }

  // A word whose bits [position, position+b) are the code at stream bit `offset`.
  int extract(int offset, int position) {
    const int word = offset / 32;
    const int bit = offset % 32;
    if (bit + bits_ <= 32) return b_.shift_left(b_.input(word), position - bit);
    return b_.funnel_shr(b_.input(word), b_.input(word + 1), bit - position);  // straddles two words
  }

  // Bit 7 of each byte is set where that bool byte of input word `word` is nonzero (once per word).
  int nonzero_bytes(int word) {
    auto [it, fresh] = nonzero_.try_emplace(word, 0);
    if (fresh) {
      const int x = b_.input(word);
      it->second = b_.lop3(b_.add(b_.and_(x, 0x7f7f7f7f), b_.konst(0x7f7f7f7f)), x, x, kOr);
    }
    return it->second;
  }

  int bool_pair(int j, const Half& half, bool has_high) {
    const int low_code = code(2 * j);
    const uint32_t kk = static_cast<uint32_t>(low_code % 4);
    const int nonzero = nonzero_bytes(low_code / 4);
    // Selector nibbles 8 | n replicate bit 7 of byte n; bytes 4-7 are the second operand: zero, or the
    // nonzero word of the high code when it lies in another input word.
    const int high_code = has_high ? code(2 * j + 1) : -1;
    const bool one_word = !has_high || high_code / 4 == low_code / 4;
    const uint32_t hk = static_cast<uint32_t>(high_code % 4) + (one_word ? 0u : 4u);
    const uint32_t low = (8 | kk) << 4 | (8 | kk);
    const uint32_t high = has_high ? ((8 | hk) << 12 | (8 | hk) << 8) : 0x4400;
    const int second = one_word ? b_.konst(0) : nonzero_bytes(high_code / 4);
    const int mask = b_.prmt(nonzero, second, high | low);  // 0xffff per true element
    return b_.and_(mask, rep(half.one));
  }

  int int_pair(int j, const Half& half, bool has_high) {
    const bool is_signed = from_.kind() == TypeKind::SignedInt;
    const uint32_t sign_bit = is_signed ? 1u << (bits_ - 1) : 0;
    if (bits_ == 8) return byte_int_pair(j, half, has_high);
    TILEVM_ASSERT(bits_ <= half.mantissa(), "{} does not fit the mantissa of {}", from_.name(),
                  half.type.name());
    if (auto h = split_int_pair(j, half, is_signed, has_high)) return *h;
    if (auto h = int_pair_in_bytes(j, half, is_signed, has_high)) return *h;
    const int c = place_pair(j, 0, has_high);
    const uint32_t mask = (1u << bits_) - 1;
    const int h = b_.lop3(c, b_.konst(rep(mask)), b_.konst(rep(half.magic | sign_bit)), kAndXor);
    return b_.fma(half.fma, h, b_.konst(rep(half.one)), b_.konst(rep(subtrahend_code(half, 0, int_bias()))));
  }

  // u8/i8 to f16: the byte into the mantissa of 1024 with one prmt, then -(1024 + bias) added.
  int byte_int_pair(int j, const Half& half, bool has_high) {
    TILEVM_ASSERT(half.type == DataType::f16(), "8-bit integers to bf16 take the f32 path");
    const int subtract = b_.konst(rep(subtrahend_code(half, 0, int_bias())));
    const bool is_signed = from_.kind() == TypeKind::SignedInt;
    const int low_code = code(2 * j), high_code = has_high ? code(2 * j + 1) : -1;
    const uint32_t kk = static_cast<uint32_t>(low_code % 4);
    if (has_high && high_code / 4 != low_code / 4) {
      // Codes in two words (a reordering): one prmt gathers them into bytes 0 and 2, and the lop3 that the
      // narrower integers use puts the magic's high byte above them (flipping a signed code's sign bit).
      const uint32_t hk = static_cast<uint32_t>(high_code % 4);
      const int placed = b_.prmt(b_.input(low_code / 4), b_.input(high_code / 4), (4 + hk) << 8 | kk);
      const int h =
          b_.lop3(placed, b_.konst(rep(0xff)), b_.konst(rep(half.magic | (is_signed ? 0x80 : 0))), kAndXor);
      return b_.add_x2(half.add, h, subtract);
    }
    const int word = biased_byte_word(low_code / 4);
    // Bytes of the second operand: 4 = 0x00, 5 = 0x64 (the magic's high byte), 6 = the code-0 byte.
    const int bytes = b_.konst(is_signed ? 0x00806400 : 0x00006400);
    const uint32_t high =
        has_high ? (5u << 12 | static_cast<uint32_t>(high_code % 4) << 8) : (5u << 12 | 6u << 8);
    const int h = b_.prmt(word, bytes, high | 5u << 4 | kk);
    return b_.fma(half.fma, h, b_.konst(rep(half.one)), subtract);
  }

  // The f16/bf16 codes, equal in both halves, of the factor 2^-o and of the subtrahend -(magic*2^-o + bias)
  // that turn magic + (code + bias) * 2^o (a code OR-ed in at offset o, its sign bit flipped when signed)
  // into the code's value. The fma is exact: its exact result is the small integer.
  static uint32_t scale_code(const Half& half, int o) { return half.code(std::ldexp(1.0, -o)); }
  static uint32_t subtrahend_code(const Half& half, int o, double bias) {
    return half.code(-(half.magic_value * std::ldexp(1.0, -o) + bias));
  }
  double int_bias() const { return from_.kind() == TypeKind::SignedInt ? std::ldexp(1.0, bits_ - 1) : 0.0; }

  // Integer codes 16 bits apart in one word: no prmt. The word shifted right by s (shared, see
  // right_shift_for) has both codes at offset o - s of their halves, inside the mantissa; one lop3 ORs them
  // into the magic and one f16x2/bf16x2 op removes it: an add where o == s (an immediate operand in SASS),
  // else an fma by 2^-(o-s). Two instructions per pair plus the word's few shifts.
  std::optional<int> split_int_pair(int j, const Half& half, bool is_signed, bool has_high) {
    const std::optional<SplitPair> split = split_pair(j, has_high);
    if (!split) return std::nullopt;
    const int s = right_shift_for(*split, half);
    const int o = split->offset - s;
    const uint32_t mask = (1u << bits_) - 1, sign_bit = is_signed ? 1u << (bits_ - 1) : 0;
    const int x = shifted_input(split->word, -s);
    const int masked =
        b_.lop3(x, b_.konst(rep(mask << o)), b_.konst(rep(half.magic | sign_bit << o)), kAndXor);
    if (o == 0) return b_.add_x2(half.add, masked, b_.konst(rep(subtrahend_code(half, 0, int_bias()))));
    return b_.fma(half.fma, masked, b_.konst(rep(scale_code(half, o))),
                  b_.konst(rep(subtrahend_code(half, o, int_bias()))));
  }

  // The right shift s of a split pair's word: a code at offset o - s fits the mantissa when
  // o - s + b <= M. The word's pair offsets are covered from the bottom by as few shifts as possible:
  // shift 0 (the word itself, free) serves offsets up to M - b, and each further shift is the lowest offset
  // not yet served, serving the next M - b bits (u4 to f16: the word for offsets 0 and 4, word >> 8 for 8 and
  // 12; u4 to bf16 needs 0, 4, 8 and 12). Greedy covering from the bottom uses the fewest shifts.
  int right_shift_for(const SplitPair& split, const Half& half) {
    auto [it, fresh] = shift_plans_.try_emplace(split.word);
    if (fresh) {
      std::vector<int> offsets;
      for (int j = 0; 2 * j + 1 < spec_.count; ++j) {
        const std::optional<SplitPair> other = split_pair(j, true);
        if (other && other->word == split.word) offsets.push_back(other->offset);
      }
      std::sort(offsets.begin(), offsets.end());
      const int reach = half.mantissa() - bits_;
      it->second = {0};
      for (int o : offsets) {
        if (o - it->second.back() > reach) it->second.push_back(o);
      }
    }
    const std::vector<int>& shifts = it->second;  // ascending; the largest one <= o serves o
    return *std::prev(std::upper_bound(shifts.begin(), shifts.end(), split.offset));
  }

  // Where one code sits for int_pair_in_bytes: an input word (or that word shifted right by 4), the byte of
  // it holding the code, and the code's bit offset inside that byte.
  struct ByteSlot {
    int word = 0;
    bool shifted = false;
    uint32_t byte = 0;
    int offset = 0;
  };

  // Source code c in one byte of an input word (or of that word shifted right by 4) at an offset o with
  // o + b within the half's mantissa; nullopt when the code straddles a byte (some 3, 5, 6 and 7-bit codes).
  // Makes no op: a pair whose other code has no slot takes another path, and must leave no unused shift.
  std::optional<ByteSlot> byte_slot(int c, const Half& half) const {
    const int bit = (c * bits_) % 32, word = c * bits_ / 32;
    const int o = bit % 8;
    if (o + bits_ > 8) return std::nullopt;
    if (o + bits_ <= half.mantissa()) return ByteSlot{word, false, static_cast<uint32_t>(bit / 8), o};
    if (o < 4) return std::nullopt;
    return ByteSlot{word, true, static_cast<uint32_t>(bit / 8), o - 4};
  }
  int slot_source(const ByteSlot& slot) {
    return slot.shifted ? shifted_input(slot.word, -4) : b_.input(slot.word);  // the shift once per word
  }

  // Integer codes 2j and 2j+1 that each lie inside one byte: one prmt puts the byte of code 2j in the low
  // half and the byte of code 2j+1 in the high half (3 instructions per pair instead of 5: no shifts). Each
  // code stays at its own offset o in its half, so the lop3 mask and magic and the fma's factor 2^-o and
  // subtrahend differ per half; the fma is exact as before (its exact result is the small integer).
  std::optional<int> int_pair_in_bytes(int j, const Half& half, bool is_signed, bool has_high) {
    if (!has_high) return std::nullopt;
    std::optional<ByteSlot> lo = byte_slot(code(2 * j), half), hi = byte_slot(code(2 * j + 1), half);
    if (!lo || !hi) return std::nullopt;
    // A code at offset 4 of its byte, beside one at offset 0 (u4, i4: every pair), is taken from the word
    // shifted right by 4 instead: both halves then hold magic + code at offset 0, and an add with the
    // subtrahend, an immediate operand in SASS, removes the magic. The fma's factor (1, 1/16) would need a
    // register, which ptxas rematerializes before each use where registers are short (the warp-specialized
    // quantized matmul: one IMAD.MOV per pair); the shift costs one instruction per word.
    auto at_zero = [](ByteSlot& s) {
      if (!s.shifted && s.offset == 4) s = ByteSlot{s.word, true, s.byte, 0};
    };
    if (lo->offset == 0 || hi->offset == 0) {
      at_zero(*lo);
      at_zero(*hi);
    }
    const int lo_source = slot_source(*lo), hi_source = slot_source(*hi);
    // prmt selector: byte 0 of the result from the low code's byte, byte 2 from the high code's byte
    // (indices 4-7 name the second operand); bytes 1 and 3 are masked away.
    const uint32_t hs = hi->byte + (hi_source == lo_source ? 0u : 4u);
    const int placed = b_.prmt(lo_source, hi_source, hs << 8 | lo->byte);
    const uint32_t mask = (1u << bits_) - 1, sign_bit = is_signed ? 1u << (bits_ - 1) : 0;
    auto per_half = [&](uint32_t low, uint32_t high) { return low | high << 16; };
    const int masked =
        b_.lop3(placed, b_.konst(per_half(mask << lo->offset, mask << hi->offset)),
                b_.konst(per_half(half.magic | sign_bit << lo->offset, half.magic | sign_bit << hi->offset)),
                kAndXor);
    // Each half holds magic + (code + bias) * 2^o, with bias 2^(b-1) for signed codes (the flipped sign bit).
    const double bias = int_bias();
    if (lo->offset == 0 && hi->offset == 0)
      return b_.add_x2(half.add, masked, b_.konst(rep(subtrahend_code(half, 0, bias))));
    auto factor = [&](int o) { return scale_code(half, o); };
    auto subtract = [&](int o) { return subtrahend_code(half, o, bias); };
    return b_.fma(half.fma, masked, b_.konst(per_half(factor(lo->offset), factor(hi->offset))),
                  b_.konst(per_half(subtract(lo->offset), subtract(hi->offset))));
  }

  // The word of four u8/i8 codes, signed ones biased by 128 (code ^ 0x80), once per word.
  int biased_byte_word(int word) {
    auto [it, fresh] = biased_.try_emplace(word, 0);
    if (fresh) {
      const int x = b_.input(word);
      it->second = from_.kind() == TypeKind::SignedInt ? b_.lop3(x, b_.konst(0x80808080), x, kXor) : x;
    }
    return it->second;
  }

  // Source code c of a u8/i8 word as f32 bits: 2^23 + biased byte, minus 2^23 (+ 128 when signed).
  int byte_to_f32(int c) {
    const uint32_t kk = static_cast<uint32_t>(c % 4);
    const int magic = b_.prmt(biased_byte_word(c / 4), b_.konst(0x4b000000), 0x7440u | kk);
    const float offset = from_.kind() == TypeKind::SignedInt ? 8388736.0f : 8388608.0f;
    return b_.add_f32(magic, b_.fconst(-offset));
  }

  struct FloatPair {
    int value;         // the two converted codes
    int special = -1;  // 0xffff in each half whose source is inf or NaN (types with infinity)
    int nan = -1;      // 0xffff in each half whose source is NaN
  };

  // Low-bit float to f16/bf16 with at least as many exponent bits: place, scale by a power of two, fix up.
  FloatPair float_pair(int j, const Half& half, bool has_high, bool fix_specials) {
    const int exponent = from_.exponent_bits();
    const int t = half.mantissa() - from_.mantissa_bits();  // mantissa MSBs aligned
    const int sign_shift = half.exponent() - exponent;      // the source sign is at bit 15 - sign_shift
    TILEVM_ASSERT(t >= 0 && sign_shift >= 0, "{} does not fit {}", from_.name(), half.type.name());
    const int c = place_pair(j, t, has_high);
    const uint32_t magnitude_bits = (1u << (bits_ - 1)) - 1;
    const int magnitude = b_.and_(c, rep(magnitude_bits << t));
    // A half's bit 15 after adding 2^(b-1) - threshold to its magnitude (shifted to bit 15) says
    // magnitude >= threshold; prmt replicates it over the half.
    auto at_least = [&](uint32_t threshold) {
      const int sum = b_.add(magnitude, b_.konst(rep(((magnitude_bits + 1) - threshold) << t)));
      const int shifted = b_.shl(sum, sign_shift);
      return b_.prmt(shifted, shifted, 0xbb99);
    };
    FloatPair result{-1};
    if (from_.has_inf()) result.special = at_least(static_cast<uint32_t>(from_.inf_code(false)));
    if (from_.has_nan()) {
      const auto nan = static_cast<uint32_t>(from_.nan_code());
      result.nan = at_least(from_.has_inf() ? static_cast<uint32_t>(from_.inf_code(false)) + 1 : nan);
    }
    if (sign_shift == 0) {  // same exponent width and bias (f8e5m2, f7e5m1 to f16): the bits are the code
      TILEVM_ASSERT(half.type.bias() == from_.bias(), "{} to {}", from_.name(), half.type.name());
      result.value = b_.and_(c, rep(((1u << bits_) - 1) << t));
    } else {
      int value = magnitude;
      const int scale = half.type.bias() - from_.bias();
      if (scale != 0) {
        const int factor = b_.konst(rep(half.code(std::ldexp(1.0, scale))));
        value = b_.fma(half.fma, value, factor, b_.konst(kSignBits));  // * 2^scale + (-0): exact
      }
      if (fix_specials && result.special >= 0)
        value = b_.lop3(value, result.special, b_.konst(rep(half.inf)), kSelect);
      const int signs = sign_bits(j, c, t, sign_shift, has_high);
      value = b_.lop3(value, signs, b_.konst(kSignBits), kOrAnd);
      result.value = value;
    }
    if (fix_specials && result.nan >= 0)
      result.value = b_.lop3(result.value, result.nan, b_.konst(rep(half.nan)), kSelect);
    return result;
  }

  // A word with the signs of pair j's codes at bits 15 and 31 (other bits junk), given the placed pair `c`
  // (codes at bit t of each half, so their signs at bit 15 - sign_shift).
  int sign_bits(int j, int c, int t, int sign_shift, bool has_high) {
    // 8-bit sources: the prmt word before its shift already has the signs at bits 15 and 31.
    if (bits_ == 8) return byte_pair_;
    // A split pair's signs come straight from its word: one shift, shared with the word's other shifts
    // where amounts coincide (f4e2m1 to f16: the pair at offset 12 needs none).
    if (const std::optional<SplitPair> split = split_pair(j, has_high))
      return shifted_input(split->word, t + sign_shift - split->offset);
    return b_.shl(c, sign_shift);
  }

  // f8e6m1 to f16 (more exponent range than f16): exact bf16, then each value as f32 clamped to +-65504 and
  // rounded by cvt.rn.f16x2.f32; infinities (clamped to +-65504 = 0x7bff) step to 0x7c00; NaN is replaced.
  int wide_float_to_f16_pair(int j, bool has_high) {
    const FloatPair pair = float_pair(j, kBf16, has_high, false);
    const int low = b_.shl(pair.value, 16);
    const int high = b_.and_(pair.value, 0xffff0000);
    auto clamp = [&](int x) { return b_.min_f32(b_.max_f32(x, b_.fconst(-65504.0f)), b_.fconst(65504.0f)); };
    int h = b_.cvt(Kind::CvtF16x2F32, clamp(high), clamp(low));
    if (pair.special >= 0) h = b_.add(h, b_.and_(pair.special, 0x00010001));
    if (pair.nan >= 0) h = b_.lop3(h, pair.nan, b_.konst(rep(kF16.nan)), kSelect);
    return h;
  }

  void describe(const Half& half, bool to_f32) {
    std::string how;
    if (from_.is_bool()) {
      how = "bool: nonzero bytes by add, sign-replicating prmt, and with 1.0";
    } else if (from_.is_integer()) {
      if (bits_ == 8 && half.type == DataType::bf16()) {
        how = "8-bit integer: prmt into the f32 magic 2^23, f32 subtract, cvt.rn.bf16x2.f32";
      } else if (bits_ == 8) {
        how = "8-bit integer: prmt into the mantissa of 1024, one f16x2 fma";
      } else {
        how = fmt::format(
            "integer: code into the mantissa of {} with one lop3{}, one {}x2 fma; pairs whose "
            "codes lie inside bytes placed by one prmt at their offsets in the byte (a code at offset 4 "
            "beside "
            "one at 0 from the word >> 4: then one add)",
            half.magic_value, from_.kind() == TypeKind::SignedInt ? " (sign bit flipped)" : "",
            half.type.name());
      }
    } else if (half.type == DataType::f16() && from_.exponent_bits() > half.exponent()) {
      how = "float wider than f16: exact bf16, f32 clamp to +-65504, cvt.rn.f16x2.f32, inf/NaN fix-up";
    } else {
      how = fmt::format("float: mantissa aligned with {}'s, sign to bit 15, scale by 2^{}{}",
                        half.type.name(), half.type.bias() - from_.bias(),
                        from_.has_nan() ? ", inf/NaN fixed up by prmt masks" : "");
    }
    notes_.push_back(how);
    if (to_f32) notes_.push_back("to f32: computed as bf16, widened by shift and mask (exact)");
    if (!spec_.order.empty()) {
      int split = 0;
      for (int j = 0; 2 * j + 1 < spec_.count; ++j) split += split_pair(j, true).has_value() ? 1 : 0;
      notes_.push_back(
          fmt::format("reordered: output element k converts source code order[k]; {} of {} pairs "
                      "have their codes 16 bits apart in one word (placed without prmt)",
                      split, spec_.count / 2));
    }
  }

  const ConverterSpec& spec_;
  DataType from_;
  int bits_;
  Builder b_;
  std::vector<std::string>& notes_;
  std::map<int, int> nonzero_;
  std::map<int, int> biased_;
  std::map<std::pair<int, int>, int> shifted_;   // (input word, left shift) -> the shifted word
  std::map<int, std::vector<int>> shift_plans_;  // input word -> the right shifts its split pairs use
  int byte_pair_ =
      -1;  // the last place_pair's prmt word of an 8-bit source: codes at bits [8, 16) of each half
};

}  // namespace

ConverterProgram build_converter_program(const ConverterSpec& spec) {
  TILEVM_ASSERT(has_vectorized_converter(spec.from, spec.to), "no vectorized converter from {} to {}",
                spec.from.name(), spec.to.name());
  TILEVM_ASSERT(spec.count >= 1, "a converter of {} elements", spec.count);
  TILEVM_ASSERT(has_vectorized_converter(spec), "the order of a {} -> {} x{} converter is not a permutation",
                spec.from.name(), spec.to.name(), spec.count);
  ConverterProgram program{spec, {}, {}};
  // An explicit identity order is no order: the same program, text and name as an empty one.
  if (is_identity_order(spec.order)) program.spec.order.clear();
  ConverterBuilder(program).build();
  return program;
}

std::string emit_converter(const ConverterSpec& spec, const std::string& function_name) {
  return print_converter_program(build_converter_program(spec), function_name);
}

}  // namespace tilevm::codegen::cuda
