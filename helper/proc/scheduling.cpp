// scheduling.cpp: this process's scheduling reset (scheduling.hpp).
#include "proc/scheduling.hpp"

#include <fcntl.h>
#include <sched.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace clihost {
namespace {

constexpr unsigned long kDefaultTimerSlackNs = 50000;  // the kernel's (include/linux/sched.h)
constexpr int kIoprioWhoProcess = 1;                    // IOPRIO_WHO_PROCESS
constexpr int kIoprioNone = 0;                          // IOPRIO_CLASS_NONE: derived from the nice value

std::string why(const char* what) {
    return std::string(what) + ": " + std::strerror(errno);
}

}  // namespace

std::vector<std::string> reset_scheduling() {
    std::vector<std::string> left;
    sched_param none{};
    none.sched_priority = 0;
    if (::sched_setscheduler(0, SCHED_OTHER, &none) != 0) left.push_back(why("scheduling policy"));
    if (::setpriority(PRIO_PROCESS, 0, 0) != 0) left.push_back(why("nice value"));
    cpu_set_t cpus;
    CPU_ZERO(&cpus);
    if (::sched_getaffinity(1, sizeof cpus, &cpus) != 0 || ::sched_setaffinity(0, sizeof cpus, &cpus) != 0)
        left.push_back(why("CPU affinity"));
    if (::syscall(SYS_ioprio_set, kIoprioWhoProcess, 0, kIoprioNone) != 0) left.push_back(why("I/O priority"));
    if (::prctl(PR_SET_TIMERSLACK, kDefaultTimerSlackNs, 0, 0, 0) != 0) left.push_back(why("timer slack"));
    const int fd = ::open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (fd < 0 || ::write(fd, "0", 1) != 1) left.push_back(why("oom_score_adj"));
    if (fd >= 0) ::close(fd);
    return left;
}

}  // namespace clihost
