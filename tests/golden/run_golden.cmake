# Runs one golden case: CASE is a .cmd file holding a tilevm command line (without the program name),
# run in the case's folder. The exit status, stdout and stderr are compared with CASE's .expected file.
# Run with the environment variable TILEVM_UPDATE_GOLDEN=1 to rewrite the expected file instead.
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
