# Sanitizer and fuzzing builds, each in its own build directory (README.md, "Fuzzing and sanitizers").
#
#   -DTILEVM_SANITIZE=ON   AddressSanitizer + UndefinedBehaviorSanitizer over the library, the tools and the
#                          tests, with g++ (e.g. build-asan). Any report aborts the test.
#   -DTILEVM_FUZZ=ON       the same with clang, plus the fuzzer's coverage instrumentation in every object and
#                          the libFuzzer targets of fuzz/ (build-fuzz): scripts/test-sanitizers.sh runs the
#                          tests there and then scripts/fuzz.sh, so CI compiles the library once for both.
#
# The flags apply to every target of the directory, so that no code a sanitizer should see is left out.
option(TILEVM_SANITIZE "build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)
option(TILEVM_FUZZ "build the libFuzzer targets of fuzz/ (needs clang; implies the sanitizers)" OFF)

if(TILEVM_SANITIZE OR TILEVM_FUZZ)
  # -fno-sanitize-recover: an undefined-behavior report fails the run instead of printing and going on.
  # Frame pointers and line tables make the reports' stacks readable at little compile cost. -O1: with the
  # sanitizers' instrumentation -O2 compiles 3 times slower than a plain -O2 file and -O1 2 times (g++ 12),
  # while the interpreter-heavy tests run about as fast (tests/CMakeLists.txt compiles the tests at -O0).
  set(TILEVM_SANITIZER_FLAGS -O1 -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer
                             -g1)
  if(TILEVM_FUZZ)
    if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
      message(FATAL_ERROR "TILEVM_FUZZ needs clang (libFuzzer): configure with -DCMAKE_CXX_COMPILER=clang++")
    endif()
    # Coverage for the fuzzer in every object; fuzz/CMakeLists.txt links the fuzzer's main into the targets.
    list(APPEND TILEVM_SANITIZER_FLAGS -fsanitize=fuzzer-no-link)
  endif()
  add_compile_options(${TILEVM_SANITIZER_FLAGS})
  add_link_options(-fsanitize=address,undefined)
  # GCC's flow analysis sees through the sanitizers' instrumentation poorly: it reports std::function
  # members inside <regex> as maybe uninitialized (GCC 12). The normal build keeps the warning an error.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    target_compile_options(tilevm_warnings INTERFACE -Wno-maybe-uninitialized)
  endif()
endif()
