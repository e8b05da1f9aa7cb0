// A structure-aware mutator for the .tile targets (libFuzzer's LLVMFuzzerCustomMutator), used in the
// TILEVM_FUZZ build only (the replay build has no LLVMFuzzerMutate).
//
// libFuzzer's byte mutations seldom keep a program parseable, and the bugs of issue 18 sat behind valid
// programs with extreme numbers (constants that overflow, tiles of 2^30 elements, strides that leave a
// buffer). So half of the mutations work on the program's tokens, as the pipeline fuzz test does:
// - a number becomes an extreme or neighbouring value (0, 1, 2^31, 2^63 - 1, n + 1, 2n, ...);
// - a name or number becomes another token of the same program;
// - a line is dropped, duplicated or moved.
// The other half are libFuzzer's own, with the dictionary of the programs' words (scripts/fuzz.sh).
#pragma once

#ifdef TILEVM_LIBFUZZER

#include <cctype>
#include <cstring>
#include <random>
#include <string>
#include <vector>

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t max_size);

namespace tilevm::fuzz {

struct Token {
  size_t begin = 0, end = 0;
  bool number = false;
};

inline std::vector<Token> tokens_of(const std::string& text) {
  std::vector<Token> out;
  for (size_t k = 0; k < text.size();) {
    const auto c = static_cast<unsigned char>(text[k]);
    if (std::isalnum(c) || c == '_') {
      size_t e = k;
      while (e < text.size() &&
             (std::isalnum(static_cast<unsigned char>(text[e])) || text[e] == '_' || text[e] == '.'))
        ++e;
      out.push_back({k, e, static_cast<bool>(std::isdigit(c))});
      k = e;
    } else {
      ++k;
    }
  }
  return out;
}

inline std::string extreme_number(std::minstd_rand& rng, const std::string& old) {
  static const char* kValues[] = {"0",
                                  "1",
                                  "2",
                                  "3",
                                  "7",
                                  "8",
                                  "31",
                                  "32",
                                  "64",
                                  "255",
                                  "256",
                                  "1023",
                                  "1024",
                                  "1025",
                                  "4096",
                                  "65535",
                                  "65536",
                                  "2147483647",
                                  "2147483648",
                                  "4294967295",
                                  "4294967296",
                                  "1073741824",
                                  "9223372036854775807",
                                  "9223372036854775808",
                                  "0.5",
                                  "1e38",
                                  "1e39",
                                  "65504.0"};
  const size_t n = sizeof(kValues) / sizeof(kValues[0]);
  const unsigned pick = rng() % (n + 3);
  if (pick < n) return kValues[pick];
  long long v = 0;
  try {
    v = std::stoll(old);
  } catch (...) {
    return kValues[rng() % n];
  }
  // Wrapping on purpose (an extreme number is the point), in unsigned arithmetic: signed overflow is
  // undefined, and UBSan stopped the mutator itself on `v * 2`.
  const auto u = static_cast<unsigned long long>(v);
  if (pick == n) return std::to_string(static_cast<long long>(u + 1));
  if (pick == n + 1) return std::to_string(v > 0 ? v - 1 : static_cast<long long>(u + 2));
  return std::to_string(static_cast<long long>(u * 2));
}

inline std::string mutate_tokens(const std::string& text, std::minstd_rand& rng) {
  const std::vector<Token> tokens = tokens_of(text);
  if (tokens.empty()) return text;
  switch (rng() % 3) {
    case 0: {  // a number becomes an extreme one
      std::vector<Token> numbers;
      for (const Token& t : tokens)
        if (t.number) numbers.push_back(t);
      if (numbers.empty()) return text;
      const Token& t = numbers[rng() % numbers.size()];
      return text.substr(0, t.begin) + extreme_number(rng, text.substr(t.begin, t.end - t.begin)) +
             text.substr(t.end);
    }
    case 1: {  // a token becomes another token of the program
      const Token& t = tokens[rng() % tokens.size()];
      const Token& with = tokens[rng() % tokens.size()];
      return text.substr(0, t.begin) + text.substr(with.begin, with.end - with.begin) + text.substr(t.end);
    }
    default: {  // a line is dropped, duplicated or moved
      std::vector<std::string> lines;
      for (size_t k = 0; k <= text.size();) {
        const size_t e = std::min(text.find('\n', k), text.size());
        lines.push_back(text.substr(k, e - k));
        k = e + 1;
      }
      const size_t a = rng() % lines.size(), b = rng() % lines.size();
      const unsigned how = rng() % 3;
      if (how == 0 && lines.size() > 1) {
        lines.erase(lines.begin() + static_cast<std::ptrdiff_t>(a));
      } else if (how == 1) {
        lines.insert(lines.begin() + static_cast<std::ptrdiff_t>(b), lines[a]);
      } else {
        std::swap(lines[a], lines[b]);
      }
      std::string out;
      for (size_t k = 0; k < lines.size(); ++k) out += (k ? "\n" : "") + lines[k];
      return out;
    }
  }
}

}  // namespace tilevm::fuzz

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t max_size, unsigned int seed) {
  std::minstd_rand rng(seed);
  if (rng() % 2 == 0) return LLVMFuzzerMutate(data, size, max_size);
  const std::string out =
      tilevm::fuzz::mutate_tokens(std::string(reinterpret_cast<const char*>(data), size), rng);
  if (out.size() > max_size) return LLVMFuzzerMutate(data, size, max_size);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}

#endif  // TILEVM_LIBFUZZER
