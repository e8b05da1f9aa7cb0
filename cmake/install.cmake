# Install rules and the CMake package: after `cmake --install build --prefix P`, a C++ project finds tilevm
# with `find_package(tilevm CONFIG)` (CMAKE_PREFIX_PATH=P) and links `tilevm::tilevm` (every layer) or one
# layer, e.g. `tilevm::interp`. examples/cmake_consumer/ is such a project; tests/CMakeLists.txt builds it
# against an installed copy.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/tilevm DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
set_target_properties(tilevm_headers PROPERTIES EXPORT_NAME headers)
install(TARGETS tilevm tilevm_headers ${TILEVM_LAYERS} EXPORT tilevmTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
install(TARGETS tilevm_cli RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(EXPORT tilevmTargets NAMESPACE tilevm:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tilevm)

configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/tilevmConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/tilevmConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tilevm)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/tilevmConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/tilevmConfig.cmake ${PROJECT_BINARY_DIR}/tilevmConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/tilevm)
