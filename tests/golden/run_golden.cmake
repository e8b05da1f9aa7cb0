# Runs one golden case: CASE is a .cmd file holding a tilevm command line (without the program name),
# run in the case's folder. The exit status, stdout and stderr are compared with CASE's .expected file.
# Run with the environment variable TILEVM_UPDATE_GOLDEN=1 to rewrite the expected file instead.
#
# A case that holds only on some machines names its precondition in NAME.needs (one word); where it does not
# hold, the case prints "golden case skipped: <why>" and CTest reports it as skipped. The one precondition:
#   no-cuda-driver   libcuda.so.1 cannot be found where the dynamic loader looks (LD_LIBRARY_PATH, the
#                    ld.so cache, /lib and /usr/lib), which is where tilevm's dlopen("libcuda.so.1") looks
string(REGEX REPLACE "\\.cmd$" ".needs" needs_file ${CASE})
if(EXISTS ${needs_file})
  file(STRINGS ${needs_file} needs)
  if(NOT needs STREQUAL "no-cuda-driver")
    message(FATAL_ERROR "${needs_file}: unknown precondition '${needs}' (expected no-cuda-driver)")
  endif()
  set(driver_dirs /lib /usr/lib /lib64 /usr/lib64)
  if(DEFINED ENV{LD_LIBRARY_PATH})
    string(REPLACE ":" ";" path "$ENV{LD_LIBRARY_PATH}")
    list(PREPEND driver_dirs ${path})
  endif()
  foreach(d ${driver_dirs})
    if(d AND EXISTS ${d}/libcuda.so.1)
      message("golden case skipped: a CUDA driver is present (${d}/libcuda.so.1)")
      return()
    endif()
  endforeach()
  find_program(ldconfig NAMES ldconfig PATHS /sbin /usr/sbin)
  if(ldconfig)
    execute_process(COMMAND ${ldconfig} -p OUTPUT_VARIABLE cache ERROR_QUIET)
    if(cache MATCHES "libcuda\\.so\\.1 [^\n]*=> ([^\n]*)")
      message("golden case skipped: a CUDA driver is present (${CMAKE_MATCH_1}, in the ld.so cache)")
      return()
    endif()
  endif()
endif()
file(READ ${CASE} cmdline)
string(STRIP "${cmdline}" cmdline)
separate_arguments(args UNIX_COMMAND "${cmdline}")
get_filename_component(dir ${CASE} DIRECTORY)
string(REGEX REPLACE "\\.cmd$" ".expected" expected_file ${CASE})
execute_process(COMMAND ${TILEVM} ${args}
                WORKING_DIRECTORY ${dir}
                RESULT_VARIABLE status OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(actual "exit: ${status}\n--- stdout\n${out}--- stderr\n${err}")
# Wall-clock times ("0.043 s wall") differ from run to run: they are compared as "<time> s wall".
string(REGEX REPLACE "[0-9]+\\.[0-9]+ s wall" "<time> s wall" actual "${actual}")
if(DEFINED ENV{TILEVM_UPDATE_GOLDEN})
  file(WRITE ${expected_file} "${actual}")
  message(STATUS "updated ${expected_file}")
  return()
endif()
if(NOT EXISTS ${expected_file})
  message(FATAL_ERROR "missing ${expected_file}; actual output:\n${actual}")
endif()
file(READ ${expected_file} expected)
if(NOT actual STREQUAL expected)
  file(WRITE ${CASE}.actual "${actual}")
  message(FATAL_ERROR "golden mismatch for ${CASE}\n=== expected\n${expected}=== actual\n${actual}"
                      "(actual output written to ${CASE}.actual)")
endif()
