// The tests' one test for an AddressSanitizer build (scripts/test-sanitizers.sh), where the interpreter
// runs some 12 times slower: a long test checks a sample of its cases there, as `under_asan(3, 1)` (every
// third case under the sanitizer, every case elsewhere) says.
#pragma once

namespace tilevm::test {

#if defined(__SANITIZE_ADDRESS__)
inline constexpr bool kAddressSanitizer = true;
#else
inline constexpr bool kAddressSanitizer = false;
#endif

// `sanitized` in an AddressSanitizer build, else `normal`.
template <typename T>
constexpr T under_asan(T sanitized, T normal) {
  return kAddressSanitizer ? sanitized : normal;
}

}  // namespace tilevm::test
