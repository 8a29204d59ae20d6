// net.hpp: the isolated network of a jail (network = isolated).
//
// The jail gets a network namespace of its own (bwrap --unshare-net) and
// slirp4netns attached to it: outbound connections only, made by slirp4netns
// with ordinary sockets in the host's namespace. That process runs as the
// tenant's uid with kNetGroup as its only group, never as root; the group is
// what the host-address rules (install/nftables/clihost-jail.nft) match to
// reject its packets to any address of the host itself, loopback or not.
//
// The watcher (the tenant) starts bwrap blocked (--block-fd), reads the jail
// child's pid (--info-fd), opens its network namespace and the user
// namespace that owns it (NS_GET_USERNS: with --disable-userns bwrap nests a
// second user namespace, so the child's own is the wrong one) and passes both
// to its root parent over a socket; the parent starts slirp4netns on them,
// waits for its readiness, and tells the watcher to let the jail run.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>
#include <vector>

#include "decide/identity.hpp"
#include "decide/net_plan.hpp"
#include "host/cgroup.hpp"
#include "base/result.hpp"
#include "base/unique_fd.hpp"

namespace clihost {


// Who runs slirp4netns: the tenant's uid, kNetGroup as gid and only group.
Result<TenantCreds> user_net_creds(uid_t tenant_uid);

// Everything `network = isolated` needs before a jail starts, proven for
// real: slirp4netns installed and root-owned, the group present, and the
// host-address rules in force (a process with the group cannot connect to a
// listener of ours on the host's own addresses). Exit 3 with what is missing.
Result<TenantCreds> require_isolation(uid_t tenant_uid);

// The pieces of require_isolation, for `check`.
Status host_addresses_blocked(const TenantCreds& net);
Status tun_usable(const TenantCreds& net);

// The jail's bwrap ended before its network was attached: bwrap, or the
// watcher, has said why already (send_namespaces, attach_user_net).
inline constexpr std::string_view kJailEndedEarly = "the jail ended before its network was attached";

// Watcher side: hand the jail's namespaces to the root parent over `chan`
// and wait (at most `seconds`) for its go-ahead. kJailEndedEarly: bwrap
// (`bwrap_pidfd`) or the jail's child ended first, and bwrap's status says
// why; any other error: no go-ahead, and the watcher reports why.
Status send_namespaces(int chan, pid_t jail_child, int seconds, int bwrap_pidfd);

// Root side: a running slirp4netns. Its exit pipe is held here: when the
// process holding it ends (even by SIGKILL), slirp4netns ends too.
struct UserNet {
    pid_t pid{-1};
    UniqueFd exit_pipe;
};

// Root side: receive the namespaces from the watcher on `chan`, start
// slirp4netns on them as `net`, wait until it is ready, then send the
// go-ahead. A failure quotes slirp4netns's own message. `cgroup`: the
// tenant's, whose net leaf slirp4netns enters (as root, before it becomes
// the tenant), so that its memory and its sockets' buffers count against
// the tenant's share (limits.hpp net_memory_max), never the supervisor's
// unlimited leaf; null: none (a trial, a host without cgroups).
Result<UserNet> attach_user_net(int chan, const TenantCreds& net, int seconds, const TenantCgroup* cgroup);

// A watch on the host's nftables rules: a netlink socket in the
// NFNLGRP_NFTABLES group (root only), non-blocking. It turns readable at
// every change of any table (a flush, a delete, a reload).
Result<UniqueFd> watch_host_rules();
// Reads every pending event; true if there was any (an overflow counts).
bool drain_rule_events(int watch);

// The tenant's empty network namespace, which its attach jails join rather
// than each making one: made by a child (this process's own network never
// changes) and kept only by the descriptor returned. No name and no mount
// on the host: it ends with the supervisor holding it and the jails in it,
// also after a SIGKILL, and every new mount namespace (each bwrap's, which
// copies the host's mounts) costs the same whatever the number of tenants.
// Owned by this process's user namespace (root's), so a tenant holds no
// capability over it.
Result<UniqueFd> make_empty_netns();

}  // namespace clihost
