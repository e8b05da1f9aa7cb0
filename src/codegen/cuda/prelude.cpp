// The device functions every emitted kernel starts with: typed access to the packed register words,
// packed memory access, and the exact value conversions of the interpreter (type/convert.cpp and
// interp/arith.cpp), written once as templates over a type's (kind, bits, exponent, mantissa, specials).
//
// A type appears in emitted code as TV_T = <K, B, E, M, S>: K 0 bool, 1 signed, 2 unsigned, 3 float; S 0
// finite-only, 1 NaN-only (f8e4m3), 2 IEEE. The code needs no CUDA header, so NVRTC compiles it without a
// toolkit folder.
#include "emitter.h"

namespace tilevm::codegen::cuda {

const char* cuda_prelude() {
  return R"CUDA(typedef unsigned char tv_u8;
typedef unsigned short tv_u16;
typedef unsigned int tv_u32;
typedef unsigned long long tv_u64;
typedef long long tv_i64;

#define TV_INLINE __device__ __forceinline__

template <int B> TV_INLINE tv_u64 tv_mask() { if constexpr (B >= 64) return ~0ull; else return (1ull << B) - 1; }
template <int B> TV_INLINE tv_i64 tv_sext(tv_u64 c) {
  if constexpr (B >= 64) return (tv_i64)c;
  else { const tv_u64 s = 1ull << (B - 1); c &= tv_mask<B>(); return (tv_i64)(c ^ s) - (tv_i64)s; }
}

// ---- Register words: slot i of a B-bit type is bits [i*B, (i+1)*B) of the thread's word array. ----
template <int B> TV_INLINE tv_u64 tv_get(const tv_u32* w, int i) {
  if constexpr (B == 32) return w[i];
  else if constexpr (B == 64) return (tv_u64)w[2 * i] | ((tv_u64)w[2 * i + 1] << 32);
  else if constexpr (B == 16) return (w[i >> 1] >> ((i & 1) * 16)) & 0xffffu;
  else if constexpr (B == 8) return (w[i >> 2] >> ((i & 3) * 8)) & 0xffu;
  else {
    const int bit = i * B, k = bit >> 5, s = bit & 31;
    tv_u64 v = w[k] >> s;
    if (s + B > 32) v |= (tv_u64)w[k + 1] << (32 - s);
    return v & tv_mask<B>();
  }
}
template <int B> TV_INLINE void tv_set(tv_u32* w, int i, tv_u64 c) {
  if constexpr (B == 32) w[i] = (tv_u32)c;
  else if constexpr (B == 64) { w[2 * i] = (tv_u32)c; w[2 * i + 1] = (tv_u32)(c >> 32); }
  else {
    c &= tv_mask<B>();
    const int bit = i * B, k = bit >> 5, s = bit & 31;
    w[k] = (w[k] & ~(tv_u32)(tv_mask<B>() << s)) | (tv_u32)(c << s);
    if (s + B > 32) {
      const int hi = s + B - 32;
      w[k + 1] = (w[k + 1] & ~(tv_u32)((1ull << hi) - 1)) | (tv_u32)(c >> (32 - s));
    }
  }
}

// ---- Packed memory: element a of a B-bit stream at p (global or shared, generic addressing). ----
template <int B> TV_INLINE tv_u64 tv_ld(const void* p, tv_i64 a) {
  const tv_u8* b = (const tv_u8*)p;
  if constexpr (B == 8) return b[a];
  else if constexpr (B == 16) return ((const tv_u16*)p)[a];
  else if constexpr (B == 32) return ((const tv_u32*)p)[a];
  else if constexpr (B == 64) return ((const tv_u64*)p)[a];
  else {
    const tv_i64 bit = a * B;
    const int s = (int)(bit & 7);
    tv_u64 v = b[bit >> 3];
    if (s + B > 8) v |= (tv_u64)b[(bit >> 3) + 1] << 8;
    return (v >> s) & tv_mask<B>();
  }
}
// Whole bytes are stored plainly; sub-byte elements are merged into their 32-bit word(s) atomically, because
// neighbouring elements of one word may belong to other threads. The buffer must be 4-byte aligned.
template <int B> TV_INLINE void tv_st(void* p, tv_i64 a, tv_u64 c) {
  if constexpr (B == 8) ((tv_u8*)p)[a] = (tv_u8)c;
  else if constexpr (B == 16) ((tv_u16*)p)[a] = (tv_u16)c;
  else if constexpr (B == 32) ((tv_u32*)p)[a] = (tv_u32)c;
  else if constexpr (B == 64) ((tv_u64*)p)[a] = c;
  else {
    c &= tv_mask<B>();
    const tv_i64 bit = a * B;
    tv_u32* w = (tv_u32*)p + (bit >> 5);
    const int s = (int)(bit & 31);
    const tv_u32 m0 = (tv_u32)(tv_mask<B>() << s);
    atomicAnd(w, ~m0);
    atomicOr(w, (tv_u32)(c << s));
    if (s + B > 32) {
      const int hi = s + B - 32;
      atomicAnd(w + 1, ~(tv_u32)((1u << hi) - 1));
      atomicOr(w + 1, (tv_u32)(c >> (32 - s)));
    }
  }
}

// ---- Values of codes (type/convert.cpp decode, interp/arith.cpp code_to_int). ----
template <int K, int B, int E, int M, int S> TV_INLINE double tv_decode(tv_u64 c) {
  c &= tv_mask<B>();
  if constexpr (K == 0) return (c & 0xff) ? 1.0 : 0.0;
  else if constexpr (K == 1) return (double)tv_sext<B>(c);
  else if constexpr (K == 2) return (double)c;
  else if constexpr (B == 64) return __longlong_as_double((tv_i64)c);
  else if constexpr (B == 32) return (double)__int_as_float((int)c);
  else {
    const tv_u64 sign = 1ull << (B - 1), mag = c & (sign - 1), ones = (1ull << E) - 1;
    const tv_u64 ex = (mag >> M) & ones, man = mag & ((1ull << M) - 1);
    const int bias = (1 << (E - 1)) - 1;
    if (S == 2 && ex == ones) {
      if (man) return __longlong_as_double(0x7ff8000000000000ll);
      return (c & sign) ? -__longlong_as_double(0x7ff0000000000000ll) : __longlong_as_double(0x7ff0000000000000ll);
    }
    if (S == 1 && mag == (sign - 1)) return __longlong_as_double(0x7ff8000000000000ll);
    const double r = ex == 0 ? ldexp((double)man, 1 - bias - M) : ldexp((double)((1ull << M) | man), (int)ex - bias - M);
    return (c & sign) ? -r : r;
  }
}
template <int K, int B> TV_INLINE tv_i64 tv_to_int(tv_u64 c) {
  if constexpr (K == 0) return (c & 0xff) ? 1 : 0;
  else if constexpr (K == 1) return tv_sext<B>(c);
  else return (tv_i64)(c & tv_mask<B>());
}

// ---- Cast semantics (type/convert.cpp encode). ----
template <int B, int E, int M, int S> TV_INLINE tv_u64 tv_max_code() {
  if constexpr (S == 0) return (1ull << (B - 1)) - 1;
  else if constexpr (S == 1) return (1ull << (B - 1)) - 2;
  else return ((((1ull << E) - 1) - 1) << M) | ((1ull << M) - 1);
}
template <int B, int E, int M, int S> TV_INLINE tv_u64 tv_nan_code() {
  if constexpr (S == 1) return (1ull << (B - 1)) - 1;
  else return (((1ull << E) - 1) << M) | (1ull << (M - 1));
}
template <int B, int E, int M, int S> TV_INLINE tv_u64 tv_encode_float(double v) {
  if constexpr (B == 64) return (tv_u64)__double_as_longlong(v);
  if (isnan(v)) { if constexpr (S == 0) return tv_max_code<B, E, M, S>(); else return tv_nan_code<B, E, M, S>(); }
  if constexpr (B == 32) {
    float f = __double2float_rn(v);
    if (isinf(f) && !isinf(v)) f = copysignf(3.40282346638528859812e+38f, f);
    return (tv_u32)__float_as_int(f);
  } else {
    const tv_u64 sign = signbit(v) ? 1ull << (B - 1) : 0;
    const double mag = fabs(v);
    if (isinf(mag)) { if constexpr (S == 2) return sign | (((1ull << E) - 1) << M); else return sign | tv_max_code<B, E, M, S>(); }
    const double maxv = tv_decode<3, B, E, M, S>(tv_max_code<B, E, M, S>());
    if (mag >= maxv) return sign | tv_max_code<B, E, M, S>();
    if (mag == 0) return sign;
    const int min_exp = 1 - ((1 << (E - 1)) - 1);
    int fe;
    frexp(mag, &fe);
    const int e = fe - 1 > min_exp ? fe - 1 : min_exp;
    const tv_u64 rounded = (tv_u64)rint(ldexp(mag, M - e));
    return sign | (((tv_u64)(e - min_exp) << M) + rounded);
  }
}
template <bool SIGNED, int B> TV_INLINE tv_u64 tv_encode_int(double v) {
  if (isnan(v)) return 0;
  const double limit = ldexp(1.0, SIGNED ? B - 1 : B);
  const tv_u64 imax = SIGNED ? (tv_u64)((1ull << (B - 1)) - 1) : tv_mask<B>();
  if (v >= limit) return imax;
  if (v < 0) {
    if (!SIGNED) return 0;
    const double mag = -v;
    if (mag > limit) return (tv_u64)(1ull << (B - 1)) & tv_mask<B>();
    const tv_u64 r = mag >= 0x1p62 ? (tv_u64)mag : (tv_u64)rint(mag);
    return (0ull - r) & tv_mask<B>();
  }
  const tv_u64 r = v >= 0x1p62 ? (tv_u64)v : (tv_u64)rint(v);
  return r < imax ? r : imax;
}
template <int K, int B, int E, int M, int S> TV_INLINE tv_u64 tv_encode(double v) {
  if constexpr (K == 0) return v != 0.0 ? 1 : 0;
  else if constexpr (K == 3) return tv_encode_float<B, E, M, S>(v);
  else return tv_encode_int<K == 1, B>(v);
}

// ---- Rounding of exact arithmetic results (interp/arith.cpp round_float_result, wrap_int_result). ----
// An f32's code with a NaN made the canonical one (DataType::nan_code).
TV_INLINE tv_u32 tv_canonical_f32(float r) { return r != r ? 0x7fc00000u : __float_as_uint(r); }
template <int K, int B, int E, int M, int S> TV_INLINE tv_u64 tv_round(double v) {
  if constexpr (K == 0) return v != 0.0 ? 1 : 0;
  // f32: the hardware's round to nearest even is the rule below (a finite value at or past the largest
  // float plus half an ulp becomes infinity), a NaN the canonical one; one instruction instead of the
  // general path's dozens, which made every f32 Max, Div or Exp of the double path slow.
  else if constexpr (K == 3 && S == 2 && B == 32 && E == 8 && M == 23) {
    const float f = __double2float_rn(v);
    return tv_canonical_f32(f);
  } else if constexpr (K == 3 && S == 2 && B < 64) {
    if (isfinite(v)) {
      const double maxv = tv_decode<3, B, E, M, S>(tv_max_code<B, E, M, S>());
      if (fabs(v) >= maxv + ldexp(1.0, ilogb(maxv) - M - 1)) return (v < 0 ? 1ull << (B - 1) : 0) | (((1ull << E) - 1) << M);
    }
    return tv_encode<K, B, E, M, S>(v);
  } else return tv_encode<K, B, E, M, S>(v);
}
template <int K, int B, int E, int M, int S> TV_INLINE tv_u64 tv_wrap(tv_i64 v) {
  if constexpr (K == 0) return v != 0 ? 1 : 0;
  else if constexpr (K == 3) return tv_round<K, B, E, M, S>((double)v);
  else return (tv_u64)v & tv_mask<B>();
}

// ---- Cast of one element (type/convert.cpp cast_code). ----
template <int K, int B, int E, int M, int S, int K2, int B2, int E2, int M2, int S2>
TV_INLINE tv_u64 tv_cast(tv_u64 c) {
  c &= tv_mask<B>();
  if constexpr (K == K2 && B == B2 && E == E2 && M == M2) return c;
  else if constexpr (K == 3) return tv_encode<K2, B2, E2, M2, S2>(tv_decode<K, B, E, M, S>(c));
  else {
    bool neg = false;
    tv_u64 mag = c;
    if constexpr (K == 0) mag = (c & 0xff) != 0;
    else if constexpr (K == 1) { if (c >> (B - 1)) { neg = true; mag = 0ull - (tv_u64)tv_sext<B>(c); } }
    if constexpr (K2 == 0) return mag != 0;
    else if constexpr (K2 == 3) {
      if constexpr (B2 == 64) { const double d = (double)mag; return tv_encode<3, B2, E2, M2, S2>(neg ? -d : d); }
      int shift = 0;
      if (mag >> 53) {  // round to odd, so that the second rounding is the single correct one
        shift = 64 - __clzll((long long)mag) - 53;
        const bool sticky = (mag & ((1ull << shift) - 1)) != 0;
        mag = (mag >> shift) | (sticky ? 1 : 0);
      }
      const double d = ldexp((double)mag, shift);
      return tv_encode<3, B2, E2, M2, S2>(neg ? -d : d);
    } else if constexpr (K2 == 2) {
      if (neg) return 0;
      return mag < tv_mask<B2>() ? mag : tv_mask<B2>();
    } else {
      const tv_u64 lim = 1ull << (B2 - 1);
      if (neg) return (0ull - (mag < lim ? mag : lim)) & tv_mask<B2>();
      return mag < lim - 1 ? mag : lim - 1;
    }
  }
}

// ---- cp.async: BYTES from global src into shared dst; bytes past src_bytes are zero-filled. ----
TV_INLINE tv_u32 tv_smem_addr(const void* p) {
  tv_u32 a;
  asm("{ .reg .u64 s; cvta.to.shared.u64 s, %1; cvt.u32.u64 %0, s; }" : "=r"(a) : "l"(p));
  return a;
}
// The fast copy path's: a whole chunk to a shared-space address (32 bits, so that the constant steps between
// a thread's chunks fold into the instruction's offset).
template <int BYTES> TV_INLINE void tv_cp_async_shared(tv_u32 dst, const void* src) {
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(dst), "l"(src) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2;\n" ::"r"(dst), "l"(src), "n"(BYTES) : "memory");
}
// The same with src-size: `src_bytes` of the chunk read from `src` (0: none, `src` not touched), the rest
// zero-filled; the ragged fast path's chunks that lie outside g, and (tv_cp_async) the checked loop's.
template <int BYTES> TV_INLINE void tv_cp_async_shared_fill(tv_u32 dst, const void* src, int src_bytes) {
  if constexpr (BYTES == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(dst), "l"(src), "n"(BYTES), "r"(src_bytes) : "memory");
}
template <int BYTES> TV_INLINE void tv_cp_async(void* dst, const void* src, int src_bytes) {
  tv_cp_async_shared_fill<BYTES>(tv_smem_addr(dst), src, src_bytes);
}

// ---- Exact sums for the SIMT paths (no contraction into fma, as the interpreter's double arithmetic). ----
TV_INLINE double tv_dadd(double a, double b) { return __dadd_rn(a, b); }
TV_INLINE double tv_dmul(double a, double b) { return __dmul_rn(a, b); }
// min and max as the language defines them (the interpreter's float_minmax.h): NaN ignored, -0 below +0.
TV_INLINE double tv_fmin(double x, double y) { return x == y ? (signbit(x) ? x : y) : fmin(x, y); }
TV_INLINE double tv_fmax(double x, double y) { return x == y ? (signbit(x) ? y : x) : fmax(x, y); }
// The ceiling of a / b for any signs (the interpreter's CeilDiv): the truncated quotient, plus one when the
// division is inexact and the exact quotient is positive.
TV_INLINE tv_i64 tv_ceil_div(tv_i64 a, tv_i64 b) { return a / b + (a % b != 0 && (a < 0) == (b < 0)); }

// Atomic add of one element through a compare-and-swap on its 32-bit word (types without a native atomic).
// Only widths that divide 32 get here: 64-bit types use native atomics and the verifier rejects
// AtomicAddGlobal on 3-, 5-, 6- and 7-bit types, so an element never straddles two words.
template <int K, int B, int E, int M, int S> TV_INLINE void tv_atomic_add(void* p, tv_i64 a, tv_u64 c) {
  static_assert(32 % B == 0, "an element of an atomic add lies within one 32-bit word");
  const tv_i64 bit = a * B;
  tv_u32* w = (tv_u32*)p + (bit >> 5);
  const int s = (int)(bit & 31);
  tv_u32 old = *w, assumed;
  do {
    assumed = old;
    const tv_u64 cur = (assumed >> s) & tv_mask<B>();
    tv_u64 sum;
    if constexpr (K == 3) sum = tv_round<K, B, E, M, S>(tv_decode<K, B, E, M, S>(cur) + tv_decode<K, B, E, M, S>(c));
    else sum = tv_wrap<K, B, E, M, S>(tv_to_int<K, B>(cur) + tv_to_int<K, B>(c));
    const tv_u32 nw = (assumed & ~(tv_u32)(tv_mask<B>() << s)) | (tv_u32)((sum & tv_mask<B>()) << s);
    old = atomicCAS(w, assumed, nw);
  } while (old != assumed);
}
// ---- Native f32/f16/bf16 add, sub, mul (OP 0, 1, 2; f32 also div, OP 3): one IEEE operation rounded to nearest even, which
// equals the interpreter's exact-in-double-then-round result (double carries more than 2p + 2 bits for
// p = 24, 11, 8; a finite overflow becomes infinity in both, as tv_round says), except that a NaN result
// becomes the canonical NaN. The .rn forms are never contracted into an fma with a neighbouring
// operation. ----
// The canonical quiet NaN codes (DataType::nan_code): f32 0x7fc00000, f16 0x7e00, bf16 0x7fc0. CANON false
// keeps the hardware's NaN, where no reader can tell (nan_payload.h).
template <int OP, bool CANON = true> TV_INLINE tv_u64 tv_fast_f32(tv_u64 a, tv_u64 b) {
  const float x = __uint_as_float((tv_u32)a), y = __uint_as_float((tv_u32)b);
  const float r = OP == 0 ? __fadd_rn(x, y) : OP == 1 ? __fsub_rn(x, y) : OP == 2 ? __fmul_rn(x, y) : __fdiv_rn(x, y);
  if constexpr (!CANON) return __float_as_uint(r);
  return tv_canonical_f32(r);
}
// Sqrt and (OP 3 above) Div in f32: IEEE's correctly rounded sqrt.rn and div.rn (kernels are built without
// --use_fast_math, so subnormals are kept), equal to the exact result in double rounded once (double's 53
// bits exceed 2p + 2 for p = 24).
template <bool CANON = true> TV_INLINE tv_u64 tv_sqrt_f32(tv_u64 a) {
  const float r = __fsqrt_rn(__uint_as_float((tv_u32)a));
  if constexpr (!CANON) return __float_as_uint(r);
  return tv_canonical_f32(r);
}
// Fma in f32: one rounding of the exact a * b + c (fmaf), the interpreter's NaN unless CANON is false.
template <bool CANON = true> TV_INLINE tv_u64 tv_fma_f32(tv_u64 a, tv_u64 b, tv_u64 c) {
  const float r = __fmaf_rn(__uint_as_float((tv_u32)a), __uint_as_float((tv_u32)b), __uint_as_float((tv_u32)c));
  if constexpr (!CANON) return __float_as_uint(r);
  return tv_canonical_f32(r);
}
template <int OP, bool CANON = true> TV_INLINE tv_u64 tv_fast_f16(tv_u64 a, tv_u64 b) {
  const tv_u16 x = (tv_u16)a, y = (tv_u16)b;
  tv_u16 r;
  if constexpr (OP == 0) asm("add.rn.f16 %0, %1, %2;" : "=h"(r) : "h"(x), "h"(y));
  else if constexpr (OP == 1) asm("sub.rn.f16 %0, %1, %2;" : "=h"(r) : "h"(x), "h"(y));
  else asm("mul.rn.f16 %0, %1, %2;" : "=h"(r) : "h"(x), "h"(y));
  if constexpr (!CANON) return r;
  return (r & 0x7fff) > 0x7c00 ? 0x7e00u : r;
}
// bf16 through fma.rn.bf16 (sm_80; add/sub/mul.bf16 need sm_90): x + y = fma(x, 1, y), x - y = fma(y, -1, x),
// x * y = fma(x, y, -0), each exact before its single rounding.
template <int OP, bool CANON = true> TV_INLINE tv_u64 tv_fast_bf16(tv_u64 a, tv_u64 b) {
  const tv_u16 x = (tv_u16)a, y = (tv_u16)b;
  const tv_u16 one = 0x3f80, minus_one = 0xbf80, minus_zero = 0x8000;
  tv_u16 r;
  if constexpr (OP == 0) asm("fma.rn.bf16 %0, %1, %2, %3;" : "=h"(r) : "h"(x), "h"(one), "h"(y));
  else if constexpr (OP == 1) asm("fma.rn.bf16 %0, %1, %2, %3;" : "=h"(r) : "h"(y), "h"(minus_one), "h"(x));
  else asm("fma.rn.bf16 %0, %1, %2, %3;" : "=h"(r) : "h"(x), "h"(y), "h"(minus_zero));
  if constexpr (!CANON) return r;
  return (r & 0x7fff) > 0x7f80 ? 0x7fc0u : r;
}
// The same on two slots at once, a word's low and high halves (slots 2j and 2j + 1): the packed .f16x2 and
// .bf16x2 forms round each half as the scalar forms do.
template <int OP, bool CANON = true> TV_INLINE tv_u32 tv_fast_f16x2(tv_u32 x, tv_u32 y) {
  tv_u32 r;
  if constexpr (OP == 0) asm("add.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(y));
  else if constexpr (OP == 1) asm("sub.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(y));
  else asm("mul.rn.f16x2 %0, %1, %2;" : "=r"(r) : "r"(x), "r"(y));
  if constexpr (!CANON) return r;
  const tv_u32 lo = (r & 0x7fffu) > 0x7c00u ? 0x7e00u : (r & 0xffffu);
  const tv_u32 hi = ((r >> 16) & 0x7fffu) > 0x7c00u ? 0x7e00u : (r >> 16);
  return lo | (hi << 16);
}
template <int OP, bool CANON = true> TV_INLINE tv_u32 tv_fast_bf16x2(tv_u32 x, tv_u32 y) {
  const tv_u32 one = 0x3f803f80u, minus_one = 0xbf80bf80u, minus_zero = 0x80008000u;
  tv_u32 r;
  if constexpr (OP == 0) asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(one), "r"(y));
  else if constexpr (OP == 1) asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(y), "r"(minus_one), "r"(x));
  else asm("fma.rn.bf16x2 %0, %1, %2, %3;" : "=r"(r) : "r"(x), "r"(y), "r"(minus_zero));
  if constexpr (!CANON) return r;
  const tv_u32 lo = (r & 0x7fffu) > 0x7f80u ? 0x7fc0u : (r & 0xffffu);
  const tv_u32 hi = ((r >> 16) & 0x7fffu) > 0x7f80u ? 0x7fc0u : (r >> 16);
  return lo | (hi << 16);
}
// Exact widenings to f32, and the rounding f32 -> f16/bf16 with Cast's rules (type/convert.h): a finite value
// beyond the range saturates to +-max, a NaN becomes the canonical NaN.
template <bool CANON = true> TV_INLINE tv_u64 tv_f16_to_f32(tv_u64 a) {
  float r;
  const tv_u16 x = (tv_u16)a;
  asm("cvt.f32.f16 %0, %1;" : "=f"(r) : "h"(x));
  if (CANON && r != r) return 0x7fc00000u;
  return __float_as_uint(r);
}
template <bool CANON = true> TV_INLINE tv_u64 tv_bf16_to_f32(tv_u64 a) {
  if (CANON && (a & 0x7fff) > 0x7f80) return 0x7fc00000u;
  return (tv_u64)((tv_u32)a << 16);
}
// f32 -> f16 (BF16 false) or bf16: cvt.rn (a finite overflow gives infinity), then Cast's rules on top.
template <bool BF16> TV_INLINE tv_u64 tv_f32_to_half(tv_u64 a) {
  constexpr tv_u16 inf = BF16 ? 0x7f80 : 0x7c00, nan = BF16 ? 0x7fc0 : 0x7e00, max = inf - 1;
  const float x = __uint_as_float((tv_u32)a);
  tv_u16 r;
  if constexpr (BF16) asm("cvt.rn.bf16.f32 %0, %1;" : "=h"(r) : "f"(x));
  else asm("cvt.rn.f16.f32 %0, %1;" : "=h"(r) : "f"(x));
  if ((r & 0x7fff) > inf) return nan;
  if ((r & 0x7fff) == inf && !isinf(x)) r = (r & 0x8000) | max;
  return r;
}
TV_INLINE tv_u64 tv_f32_to_f16(tv_u64 a) { return tv_f32_to_half<false>(a); }
TV_INLINE tv_u64 tv_f32_to_bf16(tv_u64 a) { return tv_f32_to_half<true>(a); }
// Two f32 (bits) to packed f16 or bf16, lo in the low half, by one cvt.rn: the Cast rule only for values
// below the rounding limit in magnitude (no NaN, no inf), which the caller checked.
TV_INLINE tv_u32 tv_pack_f16x2(tv_u32 lo, tv_u32 hi) {
  tv_u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(__uint_as_float(hi)), "f"(__uint_as_float(lo)));
  return r;
}
TV_INLINE tv_u32 tv_pack_bf16x2(tv_u32 lo, tv_u32 hi) {
  tv_u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(__uint_as_float(hi)), "f"(__uint_as_float(lo)));
  return r;
}
)CUDA";
}

}  // namespace tilevm::codegen::cuda
