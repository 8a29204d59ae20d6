/* forkloop N HOLD: forks up to N children that wait; at the first refused
 * fork prints "forkloop: refused after K: REASON", holds the children HOLD
 * seconds (the suite reads the cgroup meanwhile), then ends them. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 100, hold = argc > 2 ? atoi(argv[2]) : 3, made = 0;
    static pid_t kids[8192];
    if (n > 8192) n = 8192;
    while (made < n) {
        pid_t p = fork();
        if (p == 0) {
            pause();
            _exit(0);
        }
        if (p < 0) {
            printf("forkloop: refused after %d: %s\n", made, strerror(errno));
            break;
        }
        kids[made++] = p;
    }
    if (made == n) printf("forkloop: all %d forks succeeded\n", n);
    fflush(stdout);
    sleep((unsigned)hold);
    for (int i = 0; i < made; i++) kill(kids[i], SIGKILL);
    while (wait(NULL) > 0) {}
    return 0;
}
