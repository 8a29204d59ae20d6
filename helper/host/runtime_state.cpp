// runtime_state.cpp: records of live supervisors, and their verification.
// Size: the runtime directory's whole state in one place (records, locks,
// refusal counts, recorded settings, the PAM confdir).
#include "host/runtime_state.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <ctime>

#include "decide/config.hpp"
#include "version.hpp"

namespace clihost {
namespace {

constexpr std::size_t kMaxRecord = 512;

std::string netns_name(uid_t uid) { return std::to_string(uid) + ".netns"; }

std::string read_fd(int fd, std::size_t max) {
    std::string text;
    char buf[1024];
    while (text.size() < max) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        text.append(buf, static_cast<std::size_t>(n));
    }
    return text;
}

std::string read_proc(const std::string& path, std::size_t max) {
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
    return fd.valid() ? read_fd(fd.get(), max) : std::string();
}

template <class T>
bool parse_number(std::string_view s, T& out) {
    auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
    return !s.empty() && ec == std::errc{} && p == s.data() + s.size();
}

std::vector<std::string_view> words(std::string_view s) {
    std::vector<std::string_view> out;
    std::size_t pos = 0;
    while (pos < s.size()) {
        const auto end = s.find(' ', pos);
        out.push_back(s.substr(pos, end == std::string_view::npos ? std::string_view::npos : end - pos));
        if (end == std::string_view::npos) break;
        pos = end + 1;
    }
    return out;
}

std::string record_name(uid_t uid) { return std::to_string(uid) + ".state"; }
std::string refusals_name(uid_t uid) { return std::to_string(uid) + ".refused"; }
std::string settings_name(uid_t uid) { return std::to_string(uid) + ".settings"; }

std::string session_mark_name(uid_t uid) { return std::to_string(uid) + ".session"; }
std::string settings_header(const SupervisorRecord& r) {
    return "v1 " + std::to_string(r.pid) + " " + std::to_string(r.start_ticks) + "\n";
}
constexpr std::size_t kMaxSettingsFile = kMaxConfigBytes + 8192;

}  // namespace

std::string endpoint_name(uid_t uid) { return std::to_string(uid) + ".sock"; }

std::string format_record(const SupervisorRecord& r) {
    // Appended, not `"v" + std::to_string(...)`: GCC 12 -O3 false -Wrestrict (bug 105329).
    std::string out("v");
    out.append(std::to_string(r.version)).append(" ").append(r.tenant).append(" ").append(std::to_string(r.uid));
    out.append(" ").append(std::to_string(r.pid)).append(" ").append(std::to_string(r.start_ticks));
    out.append(" ").append(r.boot_id).append(" ").append(std::to_string(r.started));
    if (r.version >= 2) out.append(" ").append(endpoint_name(r.uid));
    return out.append("\n");
}

Result<SupervisorRecord> parse_record(std::string_view text) {
    auto bad = [] { return fail(Exit::internal, "malformed session record"); };
    if (text.size() > kMaxRecord || text.empty() || text.back() != '\n') return bad();
    const auto w = words(text.substr(0, text.size() - 1));
    SupervisorRecord r;
    if (w.size() == 7 && w[0] == "v1") r.version = 1;
    else if (w.size() == 8 && w[0] == "v2") r.version = 2;
    else if (w.size() == 8 && w[0] == "v3") r.version = 3;
    else if (w.size() == 8 && w[0] == "v4") r.version = 4;
    else return bad();
    r.tenant = std::string(w[1]);
    unsigned long uid = 0;
    long pid = 0;
    if (!is_valid_account_name(r.tenant) || !parse_number(w[2], uid) || uid == 0 || uid >= 0xffffffffUL ||
        !parse_number(w[3], pid) || pid <= 1 || pid > 0x3fffffff || !parse_number(w[4], r.start_ticks) ||
        !parse_number(w[6], r.started))
        return bad();
    r.uid = static_cast<uid_t>(uid);
    r.pid = static_cast<pid_t>(pid);
    r.boot_id = std::string(w[5]);
    if (r.version >= 2 && w[7] != endpoint_name(r.uid)) return bad();
    if (r.boot_id.empty() || r.boot_id.size() > 64) return bad();
    for (char c : r.boot_id)
        if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || c == '-')) return bad();
    return r;
}

std::optional<unsigned long long> parse_stat_start_time(std::string_view stat) {
    const auto close = stat.rfind(')');
    if (close == std::string_view::npos || close + 2 > stat.size()) return std::nullopt;
    // After ") ": field 3 (state) onwards; the start time is field 22.
    const auto w = words(stat.substr(close + 2));
    if (w.size() < 20) return std::nullopt;
    unsigned long long t = 0;
    if (!parse_number(w[19], t)) return std::nullopt;
    return t;
}

std::optional<char> parse_stat_state(std::string_view stat) {
    const auto close = stat.rfind(')');
    if (close == std::string_view::npos || close + 2 >= stat.size() || stat[close + 1] != ' ') return std::nullopt;
    return stat[close + 2];
}

std::optional<unsigned long long> own_start_ticks() {
    return parse_stat_start_time(read_proc("/proc/self/stat", 4096));
}

std::string current_boot_id() {
    std::string id = read_proc("/proc/sys/kernel/random/boot_id", 128);
    while (!id.empty() && (id.back() == '\n' || id.back() == ' ')) id.pop_back();
    return id;
}

bool record_is_live(const SupervisorRecord& r) {
    if (r.boot_id != current_boot_id()) return false;
    const std::string proc = "/proc/" + std::to_string(r.pid);
    const std::string stat = read_proc(proc + "/stat", 4096);
    const auto ticks = parse_stat_start_time(stat);
    if (!ticks || *ticks != r.start_ticks) return false;
    // A supervisor that was killed stays a zombie, its /proc entry and start
    // time intact, until its parent (init, or a subreaper) reaps it, which
    // need not be at once: it serves nobody, and a new one may start.
    const auto state = parse_stat_state(stat);
    if (!state || *state == 'Z' || *state == 'X') return false;
    struct stat st {};
    // A supervisor runs as root: /proc/PID is root's (a tenant's process,
    // even one that reused the pid, would own its /proc/PID).
    // (Not the binary's inode: an upgrade replaces the binary while its
    // supervisors run on, and they must still be found, not doubled.)
    return ::stat(proc.c_str(), &st) == 0 && st.st_uid == 0;
}

UniqueFd open_supervisor(const SupervisorRecord& r) {
    UniqueFd fd(static_cast<int>(::syscall(SYS_pidfd_open, r.pid, 0)));
    // Verified after opening: if the pid was reused between the check and
    // the open, the start time no longer matches and the pidfd is dropped.
    if (!fd.valid() || !record_is_live(r)) return UniqueFd();
    return fd;
}

Result<RuntimeDir> RuntimeDir::open() {
    const std::string path = CLIHOST_JAIL_RUNTIME_DIR;
    // The directory's parent (/run) is root's; the directory is made 0700
    // by root and must still be exactly that when used.
    if (::mkdir(path.c_str(), 0700) != 0 && errno != EEXIST)
        return fail(Exit::host, "cannot create " + path + ": " + std::strerror(errno));
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return fail(Exit::host, "cannot open " + path + ": " + std::strerror(errno));
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return fail(Exit::host, "cannot stat " + path);
    if (st.st_uid != 0 || (st.st_mode & 07777) != 0700)
        return fail(Exit::host, path + " is not a root-owned directory of mode 0700");
    return RuntimeDir(std::move(fd));
}

Result<UniqueFd> RuntimeDir::lock_tenant(uid_t uid, int seconds) const {
    const std::string name = std::to_string(uid) + ".lock";
    UniqueFd fd(::openat(fd_.get(), name.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) return fail(Exit::internal, "cannot open the tenant's lock: " + std::string(std::strerror(errno)));
    // Polled, not blocking: a holder is always a process of the helper
    // that is root through and through, in a session of its own (a
    // starter, a supervisor until its record is written, stop's child:
    // none a caller can stop), with bounded waits of its own; a bound here
    // too keeps a request from hanging forever should that ever not hold.
    const auto deadline = std::time(nullptr) + seconds;
    while (::flock(fd.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR)
            return fail(Exit::internal, "cannot lock the tenant's state: " + std::string(std::strerror(errno)));
        if (std::time(nullptr) > deadline)
            return fail(Exit::internal, "timed out waiting for another clihost-jail on this tenant");
        ::usleep(5000);
    }
    return fd;
}

std::optional<SupervisorRecord> RuntimeDir::read(uid_t uid) const {
    UniqueFd fd(::openat(fd_.get(), record_name(uid).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return std::nullopt;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) return std::nullopt;
    auto r = parse_record(read_fd(fd.get(), kMaxRecord + 1));
    if (!r || r.value().uid != uid) return std::nullopt;
    return r.value();
}

Status RuntimeDir::write(const SupervisorRecord& r) const {
    return replace_file(record_name(r.uid), format_record(r), "the session record");
}

void RuntimeDir::remove_if(uid_t uid, pid_t pid) const {
    auto r = read(uid);
    if (!r || r->pid != pid) return;
    // The settings first: a record is never left without its settings by us.
    if (read_settings(*r)) ::unlinkat(fd_.get(), settings_name(uid).c_str(), 0);
    ::unlinkat(fd_.get(), session_mark_name(uid).c_str(), 0);
    ::unlinkat(fd_.get(), record_name(uid).c_str(), 0);
}

void RuntimeDir::mark_session_jail(uid_t uid, pid_t pid, bool running) const {
    const std::string name = session_mark_name(uid);
    if (!running) {
        ::unlinkat(fd_.get(), name.c_str(), 0);
        return;
    }
    UniqueFd fd(::openat(fd_.get(), name.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600));
    const std::string text = std::to_string(pid) + "\n";
    if (fd.valid()) (void)!::write(fd.get(), text.data(), text.size());
}

void RuntimeDir::mark_network_lost(uid_t uid, pid_t pid) const {
    const std::string text = std::to_string(pid) + "\n" + std::string(kNetworkLostMark);
    (void)replace_file(session_mark_name(uid), text, "the session jail's mark");
}

std::string RuntimeDir::session_mark(const SupervisorRecord& r) const {
    UniqueFd fd(::openat(fd_.get(), session_mark_name(r.uid).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return "";
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) return "";
    return read_fd(fd.get(), 64);
}

bool RuntimeDir::runs_session_jail(const SupervisorRecord& r) const {
    const std::string text = session_mark(r);
    const std::string pid = std::to_string(r.pid) + "\n";
    return text == pid || text == pid + std::string(kNetworkLostMark);
}

bool RuntimeDir::network_lost(const SupervisorRecord& r) const {
    return session_mark(r) == std::to_string(r.pid) + "\n" + std::string(kNetworkLostMark);
}

Status RuntimeDir::write_settings(const SupervisorRecord& r, const JailSettings& settings) const {
    const std::string text = settings_header(r) + format_settings(settings);
    if (text.size() > kMaxSettingsFile) return fail(Exit::internal, "the session jail's settings are too large");
    return replace_file(settings_name(r.uid), text, "the session jail's settings");
}

// Written whole or not at all: a temporary file renamed over `name`. A
// temporary file of a process that died before its rename (SIGKILLed) may
// be left under the name a new process of the same pid wants: it goes
// first (the directory is root's, 0700: nobody else makes files here).
Status RuntimeDir::replace_file(const std::string& name, const std::string& text, const std::string& what) const {
    auto failed = [&] {
        std::string m("cannot write ");
        m.append(what).append(": ").append(std::strerror(errno));
        return fail(Exit::internal, m);
    };
    const std::string tmp = name + ".tmp" + std::to_string(::getpid());
    if (::unlinkat(fd_.get(), tmp.c_str(), 0) != 0 && errno != ENOENT) return failed();
    UniqueFd fd(::openat(fd_.get(), tmp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600));
    if (!fd.valid()) return failed();
    if (::write(fd.get(), text.data(), text.size()) != static_cast<ssize_t>(text.size()) ||
        ::renameat(fd_.get(), tmp.c_str(), fd_.get(), name.c_str()) != 0) {
        const Error e = failed();
        ::unlinkat(fd_.get(), tmp.c_str(), 0);
        return e;
    }
    return ok_status();
}

std::optional<JailSettings> RuntimeDir::read_settings(const SupervisorRecord& r) const {
    UniqueFd fd(::openat(fd_.get(), settings_name(r.uid).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return std::nullopt;
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) return std::nullopt;
    const std::string text = read_fd(fd.get(), kMaxSettingsFile + 1);
    const std::string header = settings_header(r);
    if (text.size() > kMaxSettingsFile || text.compare(0, header.size(), header) != 0) return std::nullopt;
    auto parsed = parse_settings(std::string_view(text).substr(header.size()));
    if (!parsed) return std::nullopt;
    return std::move(parsed).value();
}

std::vector<SupervisorRecord> RuntimeDir::all() const {
    std::vector<SupervisorRecord> out;
    const int dup = ::fcntl(fd_.get(), F_DUPFD_CLOEXEC, 3);
    if (dup < 0) return out;
    DIR* d = ::fdopendir(dup);
    if (d == nullptr) {
        ::close(dup);
        return out;
    }
    ::rewinddir(d);
    while (const dirent* e = ::readdir(d)) {
        const std::string_view name(e->d_name);
        if (name.size() <= 6 || name.substr(name.size() - 6) != ".state") continue;
        unsigned long uid = 0;
        if (!parse_number(name.substr(0, name.size() - 6), uid) || uid == 0 || uid >= 0xffffffffUL) continue;
        if (auto r = read(static_cast<uid_t>(uid))) out.push_back(*r);
    }
    ::closedir(d);
    return out;
}

void RuntimeDir::remove_attach_netns(uid_t uid) const {
    const std::string name = netns_name(uid);
    const std::string path = std::string(CLIHOST_JAIL_RUNTIME_DIR) + "/" + name;
    // Detached: a jail still in the namespace keeps it until it ends; only
    // the name goes. A bound file may carry more than one mount (bounded).
    for (int i = 0; i < 8 && ::umount2(path.c_str(), MNT_DETACH | UMOUNT_NOFOLLOW) == 0; ++i) {}
    ::unlinkat(fd_.get(), name.c_str(), 0);
}

Result<std::string> RuntimeDir::pam_confdir(const std::string& service) const {
    const std::string path = std::string(CLIHOST_JAIL_RUNTIME_DIR) + "/pam.d";
    auto failed = [&](const std::string& what) {
        return fail(Exit::host, "cannot prepare " + path + ": " + what + ": " + std::strerror(errno));
    };
    // "other" is the fallback itself, never the service; a name libpam would
    // reach outside the directory cannot be one (config.cpp allows neither).
    if (service.empty() || service == "other" || service.find('/') != std::string::npos || service[0] == '.') {
        errno = EINVAL;
        return failed("service " + service);
    }
    if (::mkdirat(fd_.get(), "pam.d", 0700) != 0 && errno != EEXIST) return failed("mkdir");
    const UniqueFd dir(::openat(fd_.get(), "pam.d", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC));
    if (!dir.valid()) return failed("open");
    struct stat st {};
    if (::fstat(dir.get(), &st) != 0) return failed("stat");
    if (!S_ISDIR(st.st_mode) || st.st_uid != 0 || (st.st_mode & 07777) != 0700) {
        errno = EPERM;
        return failed("not a root-owned directory of mode 0700");
    }
    const UniqueFd other(
        ::openat(dir.get(), "other", O_RDONLY | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0600));
    if (!other.valid()) return failed("other");
    if (::fstat(other.get(), &st) != 0) return failed("stat other");
    if (!S_ISREG(st.st_mode) || st.st_uid != 0 || st.st_size != 0 || (st.st_mode & 022) != 0) {
        errno = EPERM;
        return failed("other is not an empty file of root's");
    }
    const std::string target = "/etc/pam.d/" + service;
    char link[256];
    const ssize_t n = ::readlinkat(dir.get(), service.c_str(), link, sizeof link);
    if (n == static_cast<ssize_t>(target.size()) && target.compare(0, target.size(), link, static_cast<std::size_t>(n)) == 0)
        return path;
    // Missing or naming something else: a new link put in place atomically,
    // so that a concurrent helper's libpam never finds none.
    const std::string tmp = "." + service + ".tmp" + std::to_string(::getpid());
    if (::unlinkat(dir.get(), tmp.c_str(), 0) != 0 && errno != ENOENT) return failed("unlink " + tmp);
    if (::symlinkat(target.c_str(), dir.get(), tmp.c_str()) != 0) return failed("symlink " + service);
    if (::renameat(dir.get(), tmp.c_str(), dir.get(), service.c_str()) != 0) {
        const int err = errno;
        (void)::unlinkat(dir.get(), tmp.c_str(), 0);
        errno = err;
        return failed("rename " + service);
    }
    return path;
}

RefusalRecord RuntimeDir::read_refusals(uid_t uid) const {
    UniqueFd fd(::openat(fd_.get(), refusals_name(uid).c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC));
    if (!fd.valid()) return {};
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) return {};
    return parse_refusal_record(read_fd(fd.get(), 64)).value_or(RefusalRecord{});
}

void RuntimeDir::write_refusals(uid_t uid, const RefusalRecord& r) const {
    // Best effort: a record that cannot be written costs only the delay's
    // growth, never the refusal itself.
    UniqueFd fd(::openat(fd_.get(), refusals_name(uid).c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
                         0600));
    if (!fd.valid()) return;
    const std::string text = format_refusal_record(r);
    (void)!::write(fd.get(), text.data(), text.size());
}

void RuntimeDir::clear_refusals(uid_t uid) const { ::unlinkat(fd_.get(), refusals_name(uid).c_str(), 0); }

}  // namespace clihost
