# The libtorch compatibility target and the installed CMake package. A user's project does
#   find_package(Kiln REQUIRED)
#   target_link_libraries(app PRIVATE Kiln::kiln)     # kiln/kiln.h
#   target_link_libraries(app PRIVATE Kiln::compat)   # also <torch/torch.h> (compat/)
# Included from the top-level CMakeLists.txt after the kiln and kiln_cli targets exist.

# Kiln's headers need C++20; consumers get it from the target.
target_compile_features(kiln PUBLIC cxx_std_20)

add_library(kiln_compat INTERFACE)
add_library(Kiln::compat ALIAS kiln_compat)
target_link_libraries(kiln_compat INTERFACE kiln)
target_include_directories(kiln_compat INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/compat>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}/kiln/compat>)
set_target_properties(kiln_compat PROPERTIES EXPORT_NAME compat)

# The installed `kiln` command finds libkiln wherever the prefix is.
set_target_properties(kiln_cli PROPERTIES INSTALL_RPATH "$ORIGIN/../${CMAKE_INSTALL_LIBDIR}")

install(TARGETS kiln kiln_compat EXPORT KilnTargets
  LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
  RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# *.inc: the CPU kernels' per-ISA bodies, which kiln/backend/cpu headers include.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/kiln/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln
  FILES_MATCHING PATTERN "*.h" PATTERN "*.inc"
  # Includes Gloo's headers, which users need not have: only Kiln's own sources use it.
  PATTERN "process_group_impl.h" EXCLUDE)
# Beside, not inside, the kiln include root: <torch/torch.h> is visible only to targets that
# link Kiln::compat, so Kiln and a real libtorch can share a prefix.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/compat/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/kiln/compat
  FILES_MATCHING PATTERN "*.h")
install(EXPORT KilnTargets NAMESPACE Kiln:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)

include(CMakePackageConfigHelpers)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/KilnConfig.cmake.in
  ${PROJECT_BINARY_DIR}/KilnConfig.cmake
  INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln
  PATH_VARS CMAKE_INSTALL_INCLUDEDIR)
write_basic_package_version_file(${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${PROJECT_BINARY_DIR}/KilnConfig.cmake ${PROJECT_BINARY_DIR}/KilnConfigVersion.cmake
  DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Kiln)
