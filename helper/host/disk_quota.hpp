// disk_quota.hpp: the facts of a tenant's home that quota_verdict judges
// (decide/quota_verdict.hpp), asked from the kernel: the home opened without
// following links, its mount from mountinfo, its project, and quotactl_fd's
// quota state and the tenant's own limits.
#pragma once

#include <sys/types.h>

#include <string>

#include "decide/quota_verdict.hpp"

namespace clihost {

// Reads the facts as the calling process can (root: all of them).
QuotaFacts read_quota_facts(const std::string& home, const std::string& tenant, uid_t uid);

}  // namespace clihost
