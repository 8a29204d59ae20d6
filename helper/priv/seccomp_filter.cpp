// seccomp_filter.cpp: a hand-written, table-tested BPF program (no libseccomp
// dependency for a dozen instructions).
#include "priv/seccomp_filter.hpp"

#include <fcntl.h>
#include <linux/audit.h>
#include <linux/seccomp.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

namespace clihost {
namespace {

#if defined(__x86_64__)
constexpr __u32 kNativeArch = AUDIT_ARCH_X86_64;
constexpr __u32 kNativeIoctl = __NR_ioctl;           // 16
constexpr __u32 kX32Ioctl = 0x40000000U | 514U;      // __X32_SYSCALL_BIT | x32 ioctl
constexpr __u32 kCompatArch = AUDIT_ARCH_I386;
constexpr __u32 kCompatIoctl = 54;
#elif defined(__aarch64__)
constexpr __u32 kNativeArch = AUDIT_ARCH_AARCH64;
constexpr __u32 kNativeIoctl = __NR_ioctl;           // 29
constexpr __u32 kX32Ioctl = __NR_ioctl;
constexpr __u32 kCompatArch = AUDIT_ARCH_ARM;
constexpr __u32 kCompatIoctl = 54;
#else
#error "terminal_injection_filter: add this architecture's syscall numbers"
#endif

constexpr __u32 kArgCmdLow = offsetof(struct seccomp_data, args) + sizeof(__u64);  // args[1], low half (LE)

sock_filter stmt(__u16 code, __u32 k) { return BPF_STMT(code, k); }
sock_filter jump(__u16 code, __u32 k, __u8 jt, __u8 jf) { return BPF_JUMP(code, k, jt, jf); }

}  // namespace

std::vector<sock_filter> terminal_injection_filter() {
    // Only the low 32 bits of the command are compared: the kernel truncates
    // ioctl's cmd to unsigned int, so a filter on the full 64-bit value is
    // bypassed with TIOCSTI | (1 << 32) (flatpak's CVE-2019-10063).
    return {
        /* 0 */ stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
        /* 1 */ jump(BPF_JMP | BPF_JEQ | BPF_K, kNativeArch, 2, 0),   // -> 4
        /* 2 */ jump(BPF_JMP | BPF_JEQ | BPF_K, kCompatArch, 4, 0),   // -> 7
        /* 3 */ stmt(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),      // an ABI we did not filter
        /* 4 */ stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* 5 */ jump(BPF_JMP | BPF_JEQ | BPF_K, kNativeIoctl, 3, 0),  // -> 9
        /* 6 */ jump(BPF_JMP | BPF_JEQ | BPF_K, kX32Ioctl, 2, 7),     // -> 9 : -> 14
        /* 7 */ stmt(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        /* 8 */ jump(BPF_JMP | BPF_JEQ | BPF_K, kCompatIoctl, 0, 5),  // -> 9 : -> 14
        /* 9 */ stmt(BPF_LD | BPF_W | BPF_ABS, kArgCmdLow),
        /* 10 */ jump(BPF_JMP | BPF_JEQ | BPF_K, TIOCSTI, 4, 0),      // -> 15
        /* 11 */ jump(BPF_JMP | BPF_JEQ | BPF_K, TIOCLINUX, 3, 0),    // -> 15
        // A line discipline is kernel code bound to the caller's terminal
        // (and a history of kernel bugs: n_gsm, n_hdlc); TIOCEXCL makes the
        // caller's terminal refuse every later open (a denial of service on
        // the caller's session).
        /* 12 */ jump(BPF_JMP | BPF_JEQ | BPF_K, TIOCSETD, 2, 0),     // -> 15
        /* 13 */ jump(BPF_JMP | BPF_JEQ | BPF_K, TIOCEXCL, 1, 0),     // -> 15
        /* 14 */ stmt(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
        /* 15 */ stmt(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
    };
}

Result<UniqueFd> seccomp_program_fd() {
    const auto prog = terminal_injection_filter();
    UniqueFd fd(static_cast<int>(::syscall(SYS_memfd_create, "clihost-jail-seccomp", MFD_CLOEXEC | MFD_ALLOW_SEALING)));
    if (!fd.valid()) return fail(Exit::internal, std::string("memfd_create: ") + std::strerror(errno));
    const auto bytes = prog.size() * sizeof(sock_filter);
    // (SIGXFSZ is ignored by the helper: a caller's RLIMIT_FSIZE gives EFBIG here.)
    if (::write(fd.get(), prog.data(), bytes) != static_cast<ssize_t>(bytes)) return fail(Exit::internal, std::string("cannot write the seccomp program: ") + std::strerror(errno));
    // Sealed: nothing that later shares the fd can change the program.
    if (::fcntl(fd.get(), F_ADD_SEALS, F_SEAL_WRITE | F_SEAL_GROW | F_SEAL_SHRINK | F_SEAL_SEAL) != 0)
        return fail(Exit::internal, "cannot seal the seccomp program");
    if (::lseek(fd.get(), 0, SEEK_SET) != 0) return fail(Exit::internal, "cannot rewind the seccomp program");
    return fd;
}

}  // namespace clihost
