# Read by cpack (CPACK_PROJECT_CONFIG_FILE) before it packages anything: the
# .deb is made from a Release build only, the build a distribution makes, so
# that the tested package and a packager's build are the same code.
if(NOT CPACK_CLIHOST_JAIL_BUILD_TYPE STREQUAL "Release")
  message(FATAL_ERROR "clihost-jail: the package is made from a Release build "
    "(this build is '${CPACK_CLIHOST_JAIL_BUILD_TYPE}'): configure with -DCMAKE_BUILD_TYPE=Release")
endif()
# And with Debian's paths: the maintainer scripts, the unit and the helper's
# messages name /usr and /etc, PAM reads only /etc/pam.d and sshd includes
# only /etc/ssh/sshd_config.d. Another prefix would put the PAM service and
# the sshd drop-in under PREFIX/etc, where neither is read.
if(NOT CPACK_CLIHOST_JAIL_INSTALL_PREFIX STREQUAL "/usr" OR NOT CPACK_CLIHOST_JAIL_SYSCONFDIR STREQUAL "/etc")
  message(FATAL_ERROR "clihost-jail: the package is made with Debian's paths "
    "(this build's prefix is '${CPACK_CLIHOST_JAIL_INSTALL_PREFIX}', its sysconfdir "
    "'${CPACK_CLIHOST_JAIL_SYSCONFDIR}'): configure with -DCMAKE_INSTALL_PREFIX=/usr")
endif()
