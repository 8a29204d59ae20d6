# Read by cpack (CPACK_PROJECT_CONFIG_FILE) before it packages anything: the
# .deb is made from a Release build only, the build a distribution makes, so
# that the tested package and a packager's build are the same code.
if(NOT CPACK_CLIHOST_JAIL_BUILD_TYPE STREQUAL "Release")
  message(FATAL_ERROR "clihost-jail: the package is made from a Release build "
    "(this build is '${CPACK_CLIHOST_JAIL_BUILD_TYPE}'): configure with -DCMAKE_BUILD_TYPE=Release")
endif()
