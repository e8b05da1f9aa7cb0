# The library, one static library per layer (docs/design.md), each linking only the layers below it.
#
#   tilevm_layer(NAME [DEPS lower layers...])
#
# builds src/NAME/**/*.cpp into tilevm_NAME. Nothing stops a .cpp file from including any header of
# include/tilevm, so the layering is enforced at link time instead: tilevm_layer_check_NAME links the whole
# archive of tilevm_NAME (every object, used or not) against its declared dependencies only. A function of a
# higher layer called from this one is then an undefined reference and the build fails, naming the symbol.
#
# All code is position-independent, so that a shared library (the Python extension) can link these archives.
set(CMAKE_POSITION_INDEPENDENT_CODE ON)

add_library(tilevm_headers INTERFACE)
target_include_directories(tilevm_headers INTERFACE $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
                                                    $<INSTALL_INTERFACE:include>)
# fmt's headers only: its compiled part is built once into tilevm_support (src/support/fmt_library.cpp), so
# the tools need no shared library beyond glibc and libstdc++, and a binary built here runs on the GPU machine,
# which has no libfmt.
get_target_property(TILEVM_FMT_INCLUDES fmt::fmt INTERFACE_INCLUDE_DIRECTORIES)
target_include_directories(tilevm_headers SYSTEM INTERFACE ${TILEVM_FMT_INCLUDES})
target_compile_definitions(tilevm_headers INTERFACE TILEVM_VERSION="${PROJECT_VERSION}")
target_link_libraries(tilevm_headers INTERFACE ${CMAKE_DL_LIBS} Threads::Threads)

set(TILEVM_LAYERS)
function(tilevm_layer name)
  cmake_parse_arguments(LAYER "" "" "DEPS" ${ARGN})
  file(GLOB_RECURSE sources CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/${name}/*.cpp)
  add_library(tilevm_${name} STATIC ${sources})
  add_library(tilevm::${name} ALIAS tilevm_${name})
  set_target_properties(tilevm_${name} PROPERTIES EXPORT_NAME ${name})
  target_link_libraries(tilevm_${name} PUBLIC tilevm_headers PRIVATE $<BUILD_INTERFACE:tilevm_warnings>)
  foreach(dep IN LISTS LAYER_DEPS)
    target_link_libraries(tilevm_${name} PRIVATE tilevm_${dep})
  endforeach()
  add_executable(tilevm_layer_check_${name} ${PROJECT_SOURCE_DIR}/cmake/layer_check.cpp)
  target_link_libraries(tilevm_layer_check_${name} PRIVATE "$<LINK_LIBRARY:WHOLE_ARCHIVE,tilevm_${name}>")
  set_target_properties(tilevm_layer_check_${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY
                                                              ${CMAKE_BINARY_DIR}/layer_check)
  set(TILEVM_LAYERS ${TILEVM_LAYERS} tilevm_${name} PARENT_SCOPE)
endfunction()
