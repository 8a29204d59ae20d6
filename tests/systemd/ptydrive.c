/* ptydrive LOG TYPEFILE PROGRAM [ARG...]: the systemd suite's stand-in for
 * ttyd. Runs PROGRAM on a new pseudo-terminal (as ttyd runs the helper for a
 * connection), copies everything it prints to LOG (truncated at start), and
 * once, a second after TYPEFILE appears, types its content and removes it.
 * Exits with PROGRAM's status (128+N if a signal N ended it). */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: ptydrive LOG TYPEFILE PROGRAM [ARG...]\n");
        return 2;
    }
    int log = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (log < 0) {
        perror(argv[1]);
        return 2;
    }
    struct winsize ws = {.ws_row = 30, .ws_col = 100};
    int master = -1;
    pid_t child = forkpty(&master, NULL, NULL, &ws);
    if (child < 0) {
        perror("forkpty");
        return 2;
    }
    if (child == 0) {
        execv(argv[3], argv + 3);
        _exit(127);
    }
    double seen = 0;
    char buf[4096];
    for (;;) {
        struct pollfd p = {.fd = master, .events = POLLIN};
        int n = poll(&p, 1, 100);
        if (n > 0) {
            ssize_t got = read(master, buf, sizeof buf);
            if (got <= 0) break; /* EIO: the program and its children closed the terminal */
            if (write(log, buf, (size_t)got) != got) break;
        }
        struct stat st;
        if (stat(argv[2], &st) == 0) {
            if (seen == 0) seen = now();
            if (now() - seen > 1.0) {
                int fd = open(argv[2], O_RDONLY | O_CLOEXEC);
                ssize_t len = fd >= 0 ? read(fd, buf, sizeof buf) : -1;
                if (fd >= 0) close(fd);
                if (len > 0 && write(master, buf, (size_t)len) != len) break;
                unlink(argv[2]);
                seen = 0;
            }
        }
    }
    int status = 0;
    while (waitpid(child, &status, 0) < 0 && errno == EINTR) {}
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
