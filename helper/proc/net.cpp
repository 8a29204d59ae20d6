// net.cpp: slirp4netns for an isolated jail, and the proof that the host's
// own addresses are out of its reach. Linear: every step checked.
// Size: slirp4netns's start, the rules' proof and their watch belong together:
// each is half of "an isolated jail never reaches the host".
#include "proc/net.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/netfilter/nfnetlink.h>
#include <linux/netlink.h>
#include <linux/nsfs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/fsuid.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include "base/fault.hpp"
#include "base/fd_pass.hpp"
#include "priv/privdrop.hpp"
#include "host/trusted_path.hpp"
#include "host/accounts.hpp"

namespace clihost {
namespace {

constexpr int kConnectMillis = 1000;

struct Listener {
    UniqueFd fd;
    sockaddr_storage addr{};
    socklen_t len{0};
    std::string shown;
};

// A listening TCP socket of ours on `addr` (port chosen by the kernel).
bool listen_on(Listener& l, int family, const void* ip, const std::string& shown) {
    l.fd.reset(::socket(family, SOCK_STREAM | SOCK_CLOEXEC, 0));
    if (!l.fd.valid()) return false;
    if (family == AF_INET) {
        auto* a = reinterpret_cast<sockaddr_in*>(&l.addr);
        a->sin_family = AF_INET;
        std::memcpy(&a->sin_addr, ip, sizeof a->sin_addr);
        l.len = sizeof *a;
    } else {
        auto* a = reinterpret_cast<sockaddr_in6*>(&l.addr);
        a->sin6_family = AF_INET6;
        std::memcpy(&a->sin6_addr, ip, sizeof a->sin6_addr);
        l.len = sizeof *a;
    }
    if (::bind(l.fd.get(), reinterpret_cast<const sockaddr*>(&l.addr), l.len) != 0) return false;
    if (::listen(l.fd.get(), 4) != 0) return false;
    socklen_t len = l.len;
    if (::getsockname(l.fd.get(), reinterpret_cast<sockaddr*>(&l.addr), &len) != 0) return false;
    l.shown = shown;
    return true;
}

// Listeners on 127.0.0.1, ::1 (if the host has IPv6) and the host's first
// non-loopback IPv4 address that is up: the loopback and the addresses a
// service on 0.0.0.0 (sshd, another tenant's ttyd) answers on.
std::vector<Listener> host_listeners() {
    std::vector<Listener> out;
    Listener lo4;
    const in_addr loop4{htonl(INADDR_LOOPBACK)};
    if (listen_on(lo4, AF_INET, &loop4, "127.0.0.1")) out.push_back(std::move(lo4));
    Listener lo6;
    if (listen_on(lo6, AF_INET6, &in6addr_loopback, "::1")) out.push_back(std::move(lo6));
    ifaddrs* list = nullptr;
    if (::getifaddrs(&list) == 0) {
        for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
            if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
            if ((i->ifa_flags & IFF_UP) == 0 || (i->ifa_flags & IFF_LOOPBACK) != 0) continue;
            const auto* a = reinterpret_cast<const sockaddr_in*>(i->ifa_addr);
            char text[INET_ADDRSTRLEN] = {};
            if (::inet_ntop(AF_INET, &a->sin_addr, text, sizeof text) == nullptr) continue;
            Listener l;
            if (listen_on(l, AF_INET, &a->sin_addr, text)) {
                out.push_back(std::move(l));
                break;
            }
        }
        ::freeifaddrs(list);
    }
    return out;
}

// In the probe's child, whose sockets have the group as their owner group
// (what nftables' `meta skgid` reads): 0 if no listener accepted one, else
// 10 + the index of the first that did.
int try_connect_all(const std::vector<Listener>& targets) noexcept {
    for (std::size_t i = 0; i < targets.size(); ++i) {
        const Listener& t = targets[i];
        const UniqueFd s(::socket(t.addr.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
        if (!s.valid()) return 2;
        if (::connect(s.get(), reinterpret_cast<const sockaddr*>(&t.addr), t.len) == 0) return 10 + static_cast<int>(i);
        if (errno != EINPROGRESS) continue;  // refused (the rule's reset) or unreachable
        pollfd p{s.get(), POLLOUT, 0};
        if (::poll(&p, 1, kConnectMillis) != 1) continue;  // dropped: no answer
        int err = 0;
        socklen_t len = sizeof err;
        if (::getsockopt(s.get(), SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0) return 10 + static_cast<int>(i);
    }
    return 0;
}

// The probe's child: only its file system gid changes (the group's), so
// its sockets are what the rules see of slirp4netns's; it runs nothing but
// the connects, dies with us, and stays undumpable (a change of fsgid
// resets that flag to fs.suid_dumpable).
[[noreturn]] void probe_child(const std::vector<Listener>& targets, gid_t gid) noexcept {
    (void)::setfsgid(gid);
    int code = 2;
    if (static_cast<gid_t>(::setfsgid(gid)) == gid && ::prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0 &&
        ::prctl(PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0) == 0)
        code = try_connect_all(targets);
    ::_exit(code);
}

int wait_child(pid_t pid) {
    int status = 0;
    while (::waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) return -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// What slirp4netns said on stderr, without its chatter about the tap fd.
std::string slirp_message(int memfd) {
    char buf[2048];
    const ssize_t n = ::pread(memfd, buf, sizeof buf - 1, 0);
    if (n <= 0) return {};
    std::string text(buf, static_cast<std::size_t>(n)), out;
    std::size_t at = 0;
    while (at < text.size()) {
        auto nl = text.find('\n', at);
        if (nl == std::string::npos) nl = text.size();
        std::string line = text.substr(at, nl - at);
        at = nl + 1;
        if (line.empty() || line.rfind("sent tapfd", 0) == 0 || line.rfind("received tapfd", 0) == 0) continue;
        if (!out.empty()) out.append("; ");
        for (char& ch : line)
            if (ch == '"') ch = '\'';  // quoted paths read better unescaped on stderr
        out.append(line);
    }
    if (out.size() > 300) out.resize(300);
    return out;
}

bool is_namespace(int fd, int type) { return ::ioctl(fd, NS_GET_NSTYPE) == type; }

// A socket of the jail's network namespace, for asking about its devices:
// this (root, single-threaded) process enters the namespace for the one
// socket() call and returns at once. Nothing else is done in there.
UniqueFd socket_in(int netns) {
    const UniqueFd home(::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC));
    if (!home.valid() || ::setns(netns, CLONE_NEWNET) != 0) return UniqueFd();
    UniqueFd s(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
    if (::setns(home.get(), CLONE_NEWNET) != 0) {
        // Never carry on in the jail's namespace.
        report_tenant_failure(fail(Exit::internal, "cannot return to the host's network namespace"));
        ::_exit(static_cast<int>(Exit::internal));
    }
    return s;
}

// bwrap brings the jail's loopback up (an address, then the link) after it
// has reported its child's pid; slirp4netns brings it up too, and the
// kernel then adds 127.0.0.1 itself, so bwrap's own request would fail
// ("loopback: Failed RTM_NEWADDR"). slirp4netns starts once lo is up.
// The watcher hangs up when bwrap ended first (it then reports why).
Status wait_loopback_up(int netns, int chan, int seconds) {
    const UniqueFd s = socket_in(netns);
    if (!s.valid()) return fail(Exit::internal, "cannot look at the jail's network namespace");
    const auto deadline = std::time(nullptr) + seconds;
    while (std::time(nullptr) <= deadline) {
        ifreq ifr{};
        std::memcpy(ifr.ifr_name, "lo", 3);
        if (::ioctl(s.get(), SIOCGIFFLAGS, &ifr) != 0) return fail(Exit::internal, "cannot look at the jail's loopback");
        if ((ifr.ifr_flags & IFF_UP) != 0) return ok_status();
        pollfd p{chan, POLLIN, 0};
        if (::poll(&p, 1, 1) > 0 && (p.revents & (POLLHUP | POLLIN)) != 0)
            return fail(Exit::host, std::string(kJailEndedEarly));
    }
    return fail(Exit::host, "the jail's loopback did not come up");
}

// slirp4netns's process: already `net`. Places its descriptors (net.hpp)
// and execs it with an empty environment. Returns only on failure.
int exec_slirp(int userns, int netns, int ready, int exit_read, int err) noexcept {
    try {
        // Copies above the targets first, so no placement overwrites a source.
        int high[5];
        const int src[5] = {userns, netns, ready, exit_read, err};
        for (int i = 0; i < 5; ++i)
            if ((high[i] = ::fcntl(src[i], F_DUPFD_CLOEXEC, 10)) < 0) return 4;
        const int null = ::open("/dev/null", O_RDWR | O_CLOEXEC);
        if (null < 0 || ::dup2(null, 0) != 0 || ::dup2(null, 1) != 1 || ::dup2(high[4], 2) != 2) return 4;
        for (int i = 0; i < 4; ++i)
            if (::dup2(high[i], 3 + i) != 3 + i) return 4;
        // Nothing else of the supervisor (PAM's, syslog's) reaches it, and it
        // shares no process group or session with a helper process.
        if (::syscall(SYS_close_range, 7U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */) != 0 || ::setsid() < 0) return 4;
        const auto args = user_net_argv();
        std::vector<char*> argv;
        argv.reserve(args.size() + 1);
        for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
        argv.push_back(nullptr);
        char* no_env[] = {nullptr};
        ::execve(argv[0], argv.data(), no_env);
    } catch (...) {
    }
    return 4;
}

}  // namespace

Result<TenantCreds> user_net_creds(uid_t tenant_uid) {
    SystemAccountDb db;
    const auto gid = db.group_by_name(std::string(kNetGroup));
    if (!gid || *gid == 0)
        return fail(Exit::host, "network = isolated needs the group " + std::string(kNetGroup) +
                                    " (install/quickstart.sh and the .deb create it)");
    return TenantCreds{tenant_uid, *gid, {*gid}};
}

Status host_addresses_blocked(const TenantCreds& net) {
    const auto targets = host_listeners();
    if (targets.empty()) return fail(Exit::internal, "cannot listen on the host's loopback to probe the rules");
    // The rules match the group; what uid made the socket does not matter
    // to them, so the child changes nothing but its fsgid (this process's
    // credentials, its parent-death signal and dumpable flag, never change).
    const pid_t pid = ::fork();
    if (pid < 0) return fail(Exit::internal, std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) probe_child(targets, net.gid);
    const int code = wait_child(pid);
    if (code == 0) return ok_status();
    if (code >= 10 && static_cast<std::size_t>(code - 10) < targets.size())
        return fail(Exit::host, "network = isolated, but the host-address rules are not in force: the group " +
                                    std::string(kNetGroup) + " reached " + targets[static_cast<std::size_t>(code - 10)].shown +
                                    " (load " + std::string(kNetRules) + "; install/quickstart.sh does)");
    return fail(Exit::internal, "the host-address probe failed");
}

Status tun_usable(const TenantCreds& net) {
    const pid_t self = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return fail(Exit::internal, std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0)
        run_as_tenant(net, self, SIGKILL, []() noexcept {
            const int fd = ::open("/dev/net/tun", O_RDWR | O_CLOEXEC);
            return fd >= 0 ? 0 : (errno == EACCES || errno == EPERM ? 10 : 11);
        });
    const int code = wait_child(pid);
    if (code == 0) return ok_status();
    if (code == 10)
        return fail(Exit::host, "/dev/net/tun cannot be opened by the jails' network process (permission denied): "
                                "make it mode 0666, as Debian's udev does");
    return fail(Exit::host, "/dev/net/tun cannot be opened by the jails' network process");
}

Result<TenantCreds> require_isolation(uid_t tenant_uid) {
    if (auto st = check_trusted_executable("slirp4netns", std::string(kSlirp)); !st)
        return fail(Exit::host, "network = isolated needs slirp4netns: " + st.error().message);
    auto net = user_net_creds(tenant_uid);
    if (!net) return net.error();
    if (auto st = host_addresses_blocked(net.value()); !st) return st.error();
    return net;
}

Status send_namespaces(int chan, pid_t jail_child, int seconds, int bwrap_pidfd) {
    const std::string path = "/proc/" + std::to_string(jail_child) + "/ns/net";
    const UniqueFd netns(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    // No such process (or a zombie): the jail's child ended already, bwrap
    // failed during its setup, and its own status says why.
    if (!netns.valid() && (errno == ENOENT || errno == ESRCH)) return fail(Exit::host, std::string(kJailEndedEarly));
    if (!netns.valid()) return fail(Exit::internal, "cannot open the jail's network namespace");
    const UniqueFd userns(::ioctl(netns.get(), NS_GET_USERNS));
    if (!userns.valid()) return fail(Exit::internal, "cannot find the user namespace of the jail's network");
    // One byte, with the jail's network namespace and its owning user namespace.
    const int fds[2] = {netns.get(), userns.get()};
    if (!send_with_fds(chan, "n", fds)) return fail(Exit::internal, "cannot pass the jail's namespaces on");
    // The go-ahead, or bwrap's end (it failed during its setup: its own
    // status says why), whichever comes first.
    pollfd p[2] = {{chan, POLLIN, 0}, {bwrap_pidfd, POLLIN, 0}};
    int r;
    while ((r = ::poll(p, 2, seconds * 1000)) < 0 && errno == EINTR) {}
    char go = 0;
    if (r > 0 && (p[0].revents & POLLIN) != 0 && ::read(chan, &go, 1) == 1 && go == 'g') return ok_status();
    if (r > 0 && p[1].revents != 0) return fail(Exit::host, std::string(kJailEndedEarly));
    return fail(Exit::host, "the jail's network did not start");
}

Result<UserNet> attach_user_net(int chan, const TenantCreds& net, int seconds, const TenantCgroup* cgroup) {
    // 1. The namespaces, from the watcher.
    pollfd p{chan, POLLIN, 0};
    int r;
    while ((r = ::poll(&p, 1, seconds * 1000)) < 0 && errno == EINTR) {}
    if (r != 1) return fail(Exit::host, "the jail did not start within " + std::to_string(seconds) + " s");
    Received m = receive_with_fds(chan, 1);
    if (m.n != 1 || m.truncated || m.data != "n" || m.fds.size() != 2) return fail(Exit::host, std::string(kJailEndedEarly));
    const UniqueFd netns(std::move(m.fds[0])), userns(std::move(m.fds[1]));
    // Only namespaces are handed on, of the kinds expected.
    if (!is_namespace(netns.get(), CLONE_NEWNET) || !is_namespace(userns.get(), CLONE_NEWUSER))
        return fail(Exit::internal, "the jail's watcher passed something other than its namespaces");
    if (auto st = wait_loopback_up(netns.get(), chan, seconds); !st) return st.error();
    // 2. slirp4netns, as the tenant with the network group.
    int ready[2], exitp[2];
    if (::pipe2(ready, O_CLOEXEC) != 0) return fail(Exit::internal, "pipe failed");
    const UniqueFd ready_read(ready[0]);
    UniqueFd ready_write(ready[1]);
    if (::pipe2(exitp, O_CLOEXEC) != 0) return fail(Exit::internal, "pipe failed");
    UniqueFd exit_read(exitp[0]), exit_write(exitp[1]);
    const UniqueFd err(static_cast<int>(::syscall(SYS_memfd_create, "clihost-jail-slirp", MFD_CLOEXEC)));
    if (!err.valid()) return fail(Exit::internal, "memfd_create failed");
    auto leaf = cgroup != nullptr ? cgroup->open_net() : Result<std::vector<UniqueFd>>(std::vector<UniqueFd>{});
    if (!leaf) return fail(Exit::host, "cannot place the jail's network: " + leaf.error().message);
    const pid_t self = ::getpid();
    const pid_t pid = ::fork();
    if (pid < 0) return fail(Exit::internal, std::string("fork failed: ") + std::strerror(errno));
    if (pid == 0) {
        // Into the net leaf first, still root: nothing of it is charged to
        // the supervisor's leaf. A failure is its end (no readiness).
        for (const auto& fd : leaf.value())
            if (::write(fd.get(), "0", 1) != 1) ::_exit(4);
        run_as_tenant(net, self, SIGKILL, [&]() noexcept {
            return exec_slirp(userns.get(), netns.get(), ready_write.get(), exit_read.get(), err.get());
        });
    }
    exit_read.reset();
    // 3. Its readiness ("1" on the ready pipe), or its end.
    // Our copy of its write end goes, so its death reads as end of file.
    ready_write.reset();
    pollfd rp{ready_read.get(), POLLIN, 0};
    while ((r = ::poll(&rp, 1, seconds * 1000)) < 0 && errno == EINTR) {}
    char one = 0;
    if (r != 1 || ::read(ready_read.get(), &one, 1) != 1 || one != '1') {
        ::kill(pid, SIGKILL);
        (void)wait_child(pid);
        const std::string said = slirp_message(err.get());
        return fail(Exit::host, "the jail's network did not start" + (said.empty() ? "" : ": slirp4netns: " + said));
    }
    // 4. The jail may run.
    const char go = 'g';
    if (::write(chan, &go, 1) != 1) {
        ::kill(pid, SIGKILL);
        (void)wait_child(pid);
        return fail(Exit::host, std::string(kJailEndedEarly));
    }
    return UserNet{pid, std::move(exit_write)};
}

Result<UniqueFd> watch_host_rules() {
    UniqueFd fd(::socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC | SOCK_NONBLOCK, NETLINK_NETFILTER));
    sockaddr_nl sa{};
    sa.nl_family = AF_NETLINK;
    const int group = NFNLGRP_NFTABLES;
    if (!fd.valid() || ::bind(fd.get(), reinterpret_cast<sockaddr*>(&sa), sizeof sa) != 0 ||
        ::setsockopt(fd.get(), SOL_NETLINK, NETLINK_ADD_MEMBERSHIP, &group, sizeof group) != 0)
        return fail(Exit::host, std::string("cannot watch the host-address rules (nftables events): ") + std::strerror(errno));
    return fd;
}

bool drain_rule_events(int watch) {
    bool any = false;
    char buf[8192];
    while (true) {
        const ssize_t n = ::recv(watch, buf, sizeof buf, 0);
        if (n > 0 || (n < 0 && errno == ENOBUFS)) any = true;
        else if (!(n < 0 && errno == EINTR)) return any;
    }
}

Result<UniqueFd> make_empty_netns() {
    int sv[2] = {-1, -1};
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
        return fail(Exit::internal, "socketpair failed");
    const UniqueFd ours(sv[0]);
    UniqueFd theirs(sv[1]);
    const pid_t child = ::fork();
    if (child == 0) {
        const int ns = fault::fail("attach_netns") || ::unshare(CLONE_NEWNET) != 0
                           ? -1
                           : ::open("/proc/self/ns/net", O_RDONLY | O_CLOEXEC);
        const int fds[1] = {ns};
        ::_exit(ns >= 0 && send_with_fds(theirs.get(), "netns", fds) ? 0 : 1);
    }
    const int fork_errno = errno;
    theirs.reset();
    int status = -1;
    if (child > 0)
        while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    if (child < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return fail(Exit::internal, "cannot make the attach jails' network namespace" +
                                        (child < 0 ? ": " + std::string(std::strerror(fork_errno)) : std::string()));
    Received got = receive_with_fds(ours.get(), 16, MSG_DONTWAIT);
    if (got.n <= 0 || got.truncated || got.data != "netns" || got.fds.size() != 1)
        return fail(Exit::internal, "the attach jails' network namespace did not come back");
    UniqueFd ns = std::move(got.fds[0]);
    // A network namespace, and not this process's own.
    struct stat made {}, own {};
    if (::ioctl(ns.get(), NS_GET_NSTYPE) != CLONE_NEWNET || ::fstat(ns.get(), &made) != 0 ||
        ::stat("/proc/self/ns/net", &own) != 0 || (made.st_ino == own.st_ino && made.st_dev == own.st_dev))
        return fail(Exit::internal, "the attach jails' network namespace is not a new one");
    return ns;
}

}  // namespace clihost
