// The seccomp program, two ways. (1) Loaded for real in a forked child: the
// denied terminal ioctls fail with EPERM (also with high bits set in the
// command) through the native ABI and, on x86_64, through the i386 (int 0x80)
// and x32 (syscall number | 0x40000000) entry points, which reach the filter
// with their own arch/nr values; other ioctls work. (2) Run by a small
// classic-BPF interpreter over hand-made seccomp_data, for what the kernel
// cannot be made to send from this machine (a foreign arch must be killed;
// the i386 branch where the kernel has no IA-32 entry at all).
//
// Host features, probed in a child before the tests that need them: a kernel
// built without IA-32 emulation, or booted with it off, has no i386 entry
// (int 0x80 raises SIGSEGV in any program), so the i386 tests skip there and
// name the reason; the x32 tests hold on every kernel (the filter sees an x32
// call before the kernel refuses it with ENOSYS where x32 is off), and their
// control expects exactly what the probe found: 0 with x32, ENOSYS without.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/ioctl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>
#include <new>
#include <optional>
#include <string>

#include "priv/seccomp_filter.hpp"

using namespace clihost;

namespace {

// Runs `probe` in a child under the filter; returns the child's exit code.
template <class F>
int under_filter(F probe) {
    const pid_t pid = fork();
    if (pid == 0) {
        auto prog = terminal_injection_filter();
        sock_fprog fprog{static_cast<unsigned short>(prog.size()), prog.data()};
        if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) _exit(100);
        if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &fprog) != 0) _exit(101);
        _exit(probe());
    }
    int status = 0;
    waitpid(pid, &status, 0);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 200 + WTERMSIG(status);
}

int open_pty() {
    const int fd = posix_openpt(O_RDWR | O_NOCTTY);
    if (fd < 0 || grantpt(fd) != 0 || unlockpt(fd) != 0) return -1;
    return open(ptsname(fd), O_RDWR | O_NOCTTY);
}

}  // namespace

TEST(SeccompFilter, TiocstiIsDenied) {
    EXPECT_EQ(under_filter([] {
                  const int fd = open_pty();
                  char c = 'x';
                  return (ioctl(fd, TIOCSTI, &c) == -1 && errno == EPERM) ? 0 : 1;
              }),
              0);
}

TEST(SeccompFilter, TiocstiWithHighBitsSetIsDenied) {
    EXPECT_EQ(under_filter([] {
                  const int fd = open_pty();
                  char c = 'x';
                  const unsigned long cmd = (1UL << 32) | TIOCSTI;
                  return (syscall(SYS_ioctl, fd, cmd, &c) == -1 && errno == EPERM) ? 0 : 1;
              }),
              0);
}

TEST(SeccompFilter, TioclinuxIsDenied) {
    EXPECT_EQ(under_filter([] {
                  const int fd = open_pty();
                  char sub = 0;
                  return (ioctl(fd, TIOCLINUX, &sub) == -1 && errno == EPERM) ? 0 : 1;
              }),
              0);
}

TEST(SeccompFilter, OrdinaryTerminalIoctlsStillWork) {
    EXPECT_EQ(under_filter([] {
                  const int fd = open_pty();
                  winsize ws{};
                  return ioctl(fd, TIOCGWINSZ, &ws) == 0 ? 0 : 1;
              }),
              0);
}

TEST(SeccompFilter, WithoutTheFilterTiocstiIsNotRefusedBySeccomp) {
    // Control: the denial above comes from the filter, not from the pty.
    // On a tty that is not ours the kernel allows TIOCSTI only with
    // CAP_SYS_ADMIN, so the control needs root (as the test suite runs in CI).
    if (geteuid() != 0) GTEST_SKIP() << "control needs CAP_SYS_ADMIN";
    const int fd = open_pty();
    ASSERT_GE(fd, 0);
    char c = 'x';
    EXPECT_EQ(ioctl(fd, TIOCSTI, &c), 0);
}

TEST(SeccompFilter, ProgramFdHoldsTheProgram) {
    auto fd = seccomp_program_fd();
    ASSERT_TRUE(fd.ok()) << fd.error().message;
    const auto prog = terminal_injection_filter();
    std::vector<sock_filter> read_back(prog.size() + 1);
    const auto n = read(fd.value().get(), read_back.data(), read_back.size() * sizeof(sock_filter));
    ASSERT_EQ(n, static_cast<ssize_t>(prog.size() * sizeof(sock_filter)));
    EXPECT_EQ(0, memcmp(read_back.data(), prog.data(), static_cast<size_t>(n)));
    // sealed: it cannot be rewritten
    EXPECT_EQ(write(fd.value().get(), "x", 1), -1);
}

// --- the other ioctls the filter denies, and the other ABIs -----------------

namespace {

constexpr unsigned long kDenied[] = {TIOCSTI, TIOCLINUX, TIOCSETD, TIOCEXCL};

// A harmless argument for each denied command, valid for a pty: TIOCSETD
// with N_TTY (the line discipline it already has), TIOCSTI/TIOCLINUX a byte.
struct Arg {
    char byte{0};
    int ldisc{0};  // N_TTY
    void* for_cmd(unsigned long cmd) { return cmd == TIOCSETD ? static_cast<void*>(&ldisc) : &byte; }
};

}  // namespace

TEST(SeccompFilter, TiocsetdAndTiocexclAreDenied) {
    EXPECT_EQ(under_filter([] {
                  const int fd = open_pty();
                  int ldisc = 0;
                  if (ioctl(fd, TIOCSETD, &ldisc) != -1 || errno != EPERM) return 1;
                  if (ioctl(fd, TIOCEXCL) != -1 || errno != EPERM) return 2;
                  // with high bits set in the command too
                  if (syscall(SYS_ioctl, fd, (1UL << 32) | TIOCEXCL, 0) != -1 || errno != EPERM) return 3;
                  // their harmless relatives are not
                  if (ioctl(fd, TIOCGETD, &ldisc) != 0 || ioctl(fd, TIOCNXCL) != 0) return 4;
                  return 0;
              }),
              0);
}

TEST(SeccompFilter, WithoutTheFilterTiocsetdAndTiocexclSucceed) {
    // Control: no capability is needed for either on one's own pty, so the
    // EPERM above is the filter's.
    const int fd = open_pty();
    ASSERT_GE(fd, 0);
    int ldisc = 0;  // N_TTY
    EXPECT_EQ(ioctl(fd, TIOCSETD, &ldisc), 0) << strerror(errno);
    EXPECT_EQ(ioctl(fd, TIOCEXCL), 0) << strerror(errno);
    EXPECT_EQ(ioctl(fd, TIOCNXCL), 0) << strerror(errno);
    close(fd);
}

#if defined(__x86_64__)

namespace {

constexpr long kI386Ioctl = 54;
constexpr long kX32Ioctl = 0x40000000L | 514;  // __X32_SYSCALL_BIT | x32 ioctl
constexpr long kI386Getpid = 20;

// The i386 system call entry, from this 64-bit process: the kernel treats it
// as a compat call (seccomp_data.arch == AUDIT_ARCH_I386, i386 numbers).
// Arguments are truncated to 32 bits, so pointers must be below 4 GiB.
long int80(long nr, long a, long b, long c) {
    long ret;
    asm volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a), "c"(b), "d"(c) : "memory");
    return ret;
}

// An x32 system call (arch AUDIT_ARCH_X86_64, number with bit 30 set). The
// filter sees it even where the kernel then refuses x32 (ENOSYS, Debian's
// default), and where x32 is enabled it is a working ioctl.
long x32_syscall(long nr, long a, long b, long c) {
    long ret;
    asm volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}

// A page below 4 GiB for the i386 calls' pointer arguments.
Arg* low_arg() {
    void* p = mmap(nullptr, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_32BIT, -1, 0);
    return p == MAP_FAILED ? nullptr : new (p) Arg{};
}

// Whether this kernel has an i386 entry: an i386 getpid in a child, with
// SIGSEGV at its default action (a sanitizer's handler would turn the fault
// into an abort). Empty where the entry works; the kernel's reason where
// int 0x80 raised SIGSEGV. Anything else (a wrong pid, another signal) is no
// reason to skip: the tests run and fail with what they see.
std::string missing_i386_entry() {
    const pid_t pid = fork();
    if (pid < 0) return {};
    if (pid == 0) {
        struct sigaction dfl {};
        dfl.sa_handler = SIG_DFL;
        if (sigaction(SIGSEGV, &dfl, nullptr) != 0) _exit(2);
        _exit(int80(kI386Getpid, 0, 0, 0) == getpid() ? 0 : 1);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV)
        return "this kernel has no IA-32 (i386) system call entry: int $0x80 raised SIGSEGV in a child "
               "(the kernel was built without IA-32 emulation, or runs with it off: ia32_emulation=0); "
               "the filter's i386 branch is covered by SeccompProgram.EachAbiDeniesEachCommandAlsoWithHighBits";
    return {};
}

// Whether this kernel runs x32 system calls: an x32 getpid returns the pid
// where x32 is enabled, -ENOSYS where it is not (Debian's default). Probed in
// a child like the i386 entry; -1 if the probe itself failed.
constexpr long kX32Getpid = 0x40000000L | 39;
int x32_entry_available() {
    const pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        const long r = x32_syscall(kX32Getpid, 0, 0, 0);
        _exit(r == getpid() ? 0 : r == -ENOSYS ? 1 : 2);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {}
    if (!WIFEXITED(status) || WEXITSTATUS(status) > 1) return -1;
    return WEXITSTATUS(status) == 0 ? 1 : 0;
}

}  // namespace

TEST(SeccompFilter, I386EntryDeniesEachCommand) {
    if (const std::string why = missing_i386_entry(); !why.empty()) GTEST_SKIP() << why;
    EXPECT_EQ(under_filter([] {
                  const int fd = open_pty();
                  Arg* arg = low_arg();
                  if (fd < 0 || arg == nullptr) return 90;
                  if (int80(kI386Getpid, 0, 0, 0) != getpid()) return 91;  // the entry point works at all
                  int i = 1;
                  for (unsigned long cmd : kDenied) {
                      if (int80(kI386Ioctl, fd, static_cast<long>(cmd), reinterpret_cast<long>(arg->for_cmd(cmd))) !=
                          -EPERM)
                          return i;
                      ++i;
                  }
                  winsize* ws = reinterpret_cast<winsize*>(arg);
                  return int80(kI386Ioctl, fd, TIOCGWINSZ, reinterpret_cast<long>(ws)) == 0 ? 0 : 10;
              }),
              0);
}

TEST(SeccompFilter, WithoutTheFilterTheI386EntryReachesTheTty) {
    // Control: the same i386 calls succeed without the filter (TIOCSTI needs
    // CAP_SYS_ADMIN on a tty that is not the controlling one, so it is left out).
    if (const std::string why = missing_i386_entry(); !why.empty()) GTEST_SKIP() << why;
    const int fd = open_pty();
    Arg* arg = low_arg();
    ASSERT_GE(fd, 0);
    ASSERT_NE(arg, nullptr);
    ASSERT_EQ(int80(kI386Getpid, 0, 0, 0), getpid()) << "IA32 emulation is off: the i386 branch cannot be proven";
    EXPECT_EQ(int80(kI386Ioctl, fd, TIOCSETD, reinterpret_cast<long>(arg->for_cmd(TIOCSETD))), 0);
    EXPECT_EQ(int80(kI386Ioctl, fd, TIOCEXCL, 0), 0);
    EXPECT_EQ(int80(kI386Ioctl, fd, TIOCNXCL, 0), 0);
    close(fd);
}

TEST(SeccompFilter, X32EntryDeniesEachCommand) {
    const int x32 = x32_entry_available();
    ASSERT_NE(x32, -1) << "the x32 probe failed";
    // Not denied: 0 where x32 is enabled, ENOSYS where the kernel has it off.
    const long not_denied = x32 == 1 ? 0 : -ENOSYS;
    EXPECT_EQ(under_filter([not_denied] {
                  const int fd = open_pty();
                  Arg arg;
                  if (fd < 0) return 90;
                  int i = 1;
                  for (unsigned long cmd : kDenied) {
                      if (x32_syscall(kX32Ioctl, fd, static_cast<long>(cmd), reinterpret_cast<long>(arg.for_cmd(cmd))) !=
                          -EPERM)
                          return i;
                      ++i;
                  }
                  winsize ws{};
                  const long r = x32_syscall(kX32Ioctl, fd, TIOCGWINSZ, reinterpret_cast<long>(&ws));
                  return r == not_denied ? 0 : 10;
              }),
              0);
}

TEST(SeccompFilter, WithoutTheFilterTheX32EntryIsNotRefusedWithEperm) {
    // Control: without the filter an x32 TIOCEXCL is a working ioctl where x32
    // is enabled and ENOSYS where it is disabled (as the probe found): never
    // EPERM, so the EPERM above is the filter's.
    const int x32 = x32_entry_available();
    ASSERT_NE(x32, -1) << "the x32 probe failed";
    const int fd = open_pty();
    ASSERT_GE(fd, 0);
    const long r = x32_syscall(kX32Ioctl, fd, TIOCEXCL, 0);
    EXPECT_EQ(r, x32 == 1 ? 0 : -ENOSYS) << (x32 == 1 ? "x32 enabled" : "x32 off in this kernel");
    ioctl(fd, TIOCNXCL);
    close(fd);
}

#endif  // __x86_64__

// --- the program run by an interpreter ---------------------------------------

namespace {

// Classic BPF, only the instructions a seccomp program of ours may use; any
// other instruction, an out-of-range load or jump, or falling off the end is
// a test failure (nullopt).
std::optional<__u32> run_bpf(const std::vector<sock_filter>& prog, const seccomp_data& d) {
    unsigned char bytes[sizeof(seccomp_data)];
    std::memcpy(bytes, &d, sizeof d);
    __u32 acc = 0;
    for (std::size_t pc = 0; pc < prog.size(); ++pc) {
        const sock_filter& in = prog[pc];
        switch (in.code) {
            case BPF_LD | BPF_W | BPF_ABS:
                if (in.k % 4 != 0 || in.k + 4 > sizeof bytes) return std::nullopt;
                std::memcpy(&acc, bytes + in.k, 4);
                break;
            case BPF_JMP | BPF_JEQ | BPF_K:
                pc += acc == in.k ? in.jt : in.jf;
                if (pc + 1 >= prog.size()) return std::nullopt;
                break;
            case BPF_RET | BPF_K:
                return in.k;
            default:
                return std::nullopt;
        }
    }
    return std::nullopt;
}

seccomp_data call(__u32 arch, int nr, __u64 arg1) {
    seccomp_data d{};
    d.arch = arch;
    d.nr = nr;
    d.args[0] = 0;
    d.args[1] = arg1;
    return d;
}

constexpr __u32 kEperm = SECCOMP_RET_ERRNO | EPERM;

struct Abi {
    const char* name;
    __u32 arch;
    int ioctl_nr;
    int write_nr;
};

#if defined(__x86_64__)
constexpr Abi kAbis[] = {{"x86_64", AUDIT_ARCH_X86_64, 16, 1},
                         {"x32", AUDIT_ARCH_X86_64, 0x40000000 | 514, 0x40000000 | 1},
                         {"i386", AUDIT_ARCH_I386, 54, 4}};
constexpr __u32 kForeignArch = AUDIT_ARCH_AARCH64;
#elif defined(__aarch64__)
constexpr Abi kAbis[] = {{"aarch64", AUDIT_ARCH_AARCH64, 29, 64}, {"arm", AUDIT_ARCH_ARM, 54, 4}};
constexpr __u32 kForeignArch = AUDIT_ARCH_X86_64;
#endif

}  // namespace

TEST(SeccompProgram, EachAbiDeniesEachCommandAlsoWithHighBits) {
    const auto prog = terminal_injection_filter();
    for (const Abi& abi : kAbis)
        for (unsigned long cmd : kDenied) {
            EXPECT_EQ(run_bpf(prog, call(abi.arch, abi.ioctl_nr, cmd)), kEperm) << abi.name << " " << cmd;
            EXPECT_EQ(run_bpf(prog, call(abi.arch, abi.ioctl_nr, (__u64{0xffffffff} << 32) | cmd)), kEperm)
                << abi.name << " " << cmd;
        }
}

TEST(SeccompProgram, OtherIoctlsAndOtherCallsAreAllowed) {
    const auto prog = terminal_injection_filter();
    for (const Abi& abi : kAbis) {
        for (unsigned long cmd : {TIOCGWINSZ, TIOCSWINSZ, TIOCNXCL, TIOCGETD, TCGETS, FIONREAD})
            EXPECT_EQ(run_bpf(prog, call(abi.arch, abi.ioctl_nr, cmd)), __u32{SECCOMP_RET_ALLOW}) << abi.name << " " << cmd;
        // The command value matters only for ioctl: write(fd, TIOCSTI, ...) is a write.
        EXPECT_EQ(run_bpf(prog, call(abi.arch, abi.write_nr, TIOCSTI)), __u32{SECCOMP_RET_ALLOW}) << abi.name;
    }
}

TEST(SeccompProgram, AForeignArchitectureIsKilled) {
    const auto prog = terminal_injection_filter();
    EXPECT_EQ(run_bpf(prog, call(kForeignArch, 16, TIOCSTI)), __u32{SECCOMP_RET_KILL_PROCESS});
    EXPECT_EQ(run_bpf(prog, call(kForeignArch, 1, 0)), __u32{SECCOMP_RET_KILL_PROCESS});
}

TEST(SeccompProgram, TheInterpreterRefusesWhatItDoesNotKnow) {
    // The interpreter itself: an unknown opcode or a jump past the end is not
    // silently taken for "allow".
    EXPECT_EQ(run_bpf({BPF_STMT(BPF_ALU | BPF_ADD | BPF_K, 1)}, seccomp_data{}), std::nullopt);
    EXPECT_EQ(run_bpf({BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 5, 5)}, seccomp_data{}), std::nullopt);
    EXPECT_EQ(run_bpf({BPF_STMT(BPF_LD | BPF_W | BPF_ABS, 64)}, seccomp_data{}), std::nullopt);
    EXPECT_EQ(run_bpf({BPF_STMT(BPF_RET | BPF_K, 7)}, seccomp_data{}), 7u);
}
