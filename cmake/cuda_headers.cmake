# The CUDA toolkit's headers (cuda.h, nvrtc.h) for the runtime (src/runtime/).
#
# tilevm includes them for the driver's and NVRTC's types and constants only: every CUDA function is resolved
# at run time with dlopen/dlsym (libcuda.so.1, libnvrtc.so.13), so the tilevm binary links neither library and
# starts on a machine without CUDA. Building needs the headers; running a GPU program needs the driver.
#
# Defines:
#   TILEVM_CUDA_INCLUDE_DIR  (cache) the folder holding cuda.h and nvrtc.h; pass -DTILEVM_CUDA_INCLUDE_DIR=...
#                            to choose one. Looked for in $CUDA_HOME, $CUDA_PATH, /usr/local/cuda, /opt/cuda,
#                            /usr (Debian's nvidia-cuda-toolkit).
#   tilevm_cuda_headers      an INTERFACE target: the include folder (as a system include, so the toolkit's
#                            headers do not trip -Werror) and TILEVM_CUDA_INCLUDE_DIR="..." as a definition
#                            (the runtime's last-resort include folder for NVRTC).
#   Threads::Threads         from find_package(Threads).

find_package(Threads REQUIRED)

set(_tilevm_cuda_hints)
foreach(var CUDA_HOME CUDA_PATH CUDAToolkit_ROOT)
  if(DEFINED ENV{${var}} AND NOT "$ENV{${var}}" STREQUAL "")
    list(APPEND _tilevm_cuda_hints "$ENV{${var}}/include")
  endif()
endforeach()
list(APPEND _tilevm_cuda_hints /usr/local/cuda/include /opt/cuda/include /usr/include)
list(REMOVE_DUPLICATES _tilevm_cuda_hints)

find_path(TILEVM_CUDA_INCLUDE_DIR NAMES cuda.h HINTS ${_tilevm_cuda_hints} NO_DEFAULT_PATH
          DOC "the CUDA toolkit's include folder (holds cuda.h and nvrtc.h)")

if(NOT TILEVM_CUDA_INCLUDE_DIR OR NOT EXISTS "${TILEVM_CUDA_INCLUDE_DIR}/cuda.h"
   OR NOT EXISTS "${TILEVM_CUDA_INCLUDE_DIR}/nvrtc.h")
  string(REPLACE ";" ", " _tilevm_cuda_looked "${_tilevm_cuda_hints}")
  message(FATAL_ERROR
    "tilevm needs the CUDA toolkit's headers cuda.h and nvrtc.h (types only; no CUDA library is linked), "
    "but they were not found together in: ${_tilevm_cuda_looked} "
    "(TILEVM_CUDA_INCLUDE_DIR=${TILEVM_CUDA_INCLUDE_DIR}). Install the CUDA toolkit (12 or 13), set CUDA_HOME, "
    "or pass -DTILEVM_CUDA_INCLUDE_DIR=/path/to/cuda/include")
endif()
message(STATUS "tilevm: CUDA headers in ${TILEVM_CUDA_INCLUDE_DIR}")

if(NOT TARGET tilevm_cuda_headers)
  add_library(tilevm_cuda_headers INTERFACE)
  target_include_directories(tilevm_cuda_headers SYSTEM INTERFACE "${TILEVM_CUDA_INCLUDE_DIR}")
  target_compile_definitions(tilevm_cuda_headers INTERFACE TILEVM_CUDA_INCLUDE_DIR="${TILEVM_CUDA_INCLUDE_DIR}")
endif()
unset(_tilevm_cuda_hints)
unset(_tilevm_cuda_looked)
