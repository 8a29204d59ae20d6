// quota_verdict.hpp: whether the file system that holds a tenant's home
// limits how much of it the tenant can fill, from facts the host gathered
// (host/disk_quota.hpp). A home shares its file system with every other home
// on it, and often with / and /var/log: without a quota one tenant (or its AI
// agents' caches) can fill it for everyone, the host's logs included
// (SECURITY.md, "Known limitations"). Pure.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace clihost {

// The mount that holds a path, from /proc/self/mountinfo.
struct MountEntry {
    std::string mount_point;
    std::string fstype;
    std::string source;
    std::string options;  // the mount's options, then the superblock's, comma-separated
};

// The mount of device major:minor whose mount point contains `path` (the
// last such line: mounted on top); without one, the first of that device.
std::optional<MountEntry> mount_of_device(std::string_view mountinfo, unsigned major, unsigned minor,
                                          std::string_view path);

// One kind of quota (user or project) on the home's file system.
struct QuotaKind {
    int error{0};             // errno of the state query; 0: answered
    bool accounting{false};   // usage is counted
    bool enforced{false};     // limits are enforced
    bool has_limit{false};    // the tenant (user: its uid; project: the home's project) has a block limit
    std::uint64_t limit{0};   // bytes: the hard limit, or the soft one when there is no hard one
    std::uint64_t used{0};    // bytes
};

struct QuotaFacts {
    std::string home;
    std::string tenant;
    std::optional<MountEntry> mount;  // nothing when mountinfo did not say
    int open_error{0};                // errno of opening the home (then nothing else is known)
    QuotaKind user;
    QuotaKind project;
    std::uint32_t project_id{0};      // the home directory's project (0: none)
};

// check's line: enforced (a block limit the kernel enforces for the tenant)
// and the words, with how to turn quotas on when they are not. Pure.
struct QuotaVerdict {
    bool enforced{false};
    std::string text;
};
QuotaVerdict quota_verdict(const QuotaFacts& f);

}  // namespace clihost
