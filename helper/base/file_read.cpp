// file_read.cpp: read(2) until EOF, EINTR retried, the bound checked as the text grows.
#include "base/file_read.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "base/unique_fd.hpp"

namespace clihost {

Result<std::string> read_bounded(int fd, std::size_t max, const std::string& what) {
    std::string text;
    char buf[8192];
    while (true) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(Exit::host, "cannot read " + what);
        if (n == 0) return text;
        text.append(buf, static_cast<std::size_t>(n));
        if (text.size() > max) return fail(Exit::host, what + " is too large");
    }
}

Result<std::string> read_bounded(const std::string& path, std::size_t max) {
    const UniqueFd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
    if (!fd.valid()) return fail(Exit::host, "cannot open " + path + ": " + std::strerror(errno));
    return read_bounded(fd.get(), max, path);
}

}  // namespace clihost
