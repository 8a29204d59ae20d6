// Which PAM service files libpam may read from the helper's own directory
// (RUNTIME/pam.d): only those that name no other file, since an include is
// resolved beside the service and the link stands there alone.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "priv/pam_session.hpp"

using namespace clihost;

TEST(PamService, TheShippedServiceNamesNoOtherFile) {
    std::ifstream in(std::string(CLIHOST_JAIL_SOURCE_DIR) + "/pam/clihost-jail");
    ASSERT_TRUE(in.good());
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_FALSE(pam_service_names_other_files(text.str()));
}

TEST(PamService, IncludesInEveryFormNameOtherFiles) {
    for (const char* text : {
             "@include common-session\n",
             "account required pam_unix.so\n@include common-account",  // no final newline
             "  @INCLUDE common-auth\n",
             "auth include system-auth\n",
             "auth\tIncLude\tsystem-auth\n",
             "-session substack system-session\n",
             "account required pam_unix.so \\\n  include x\n",  // continued line: a token of its own
         })
        EXPECT_TRUE(pam_service_names_other_files(text)) << text;
}

TEST(PamService, ModulesCommentsAndLookalikesNameNoOtherFile) {
    for (const char* text : {
             "",
             "# @include common-session\n",
             "account required pam_unix.so # include other\n",
             "session [success=1 default=ignore] pam_succeed_if.so service in crond\n",
             "session optional pam_exec.so /usr/local/bin/included\n",
             "auth required pam_env.so readenv=1 envfile=/etc/include\n",
             "-session optional pam_systemd.so\n",
         })
        EXPECT_FALSE(pam_service_names_other_files(text)) << text;
}
