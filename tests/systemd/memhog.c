/* memhog MIB: allocates and touches MIB MiB, 4 MiB at a time; prints
 * "memhog: survived" only if all of it was given. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv) {
    int mib = argc > 1 ? atoi(argv[1]) : 256;
    for (int done = 0; done < mib; done += 4) {
        char *p = malloc(4 << 20);
        if (p == NULL) {
            printf("memhog: malloc refused at %d MiB\n", done);
            return 1;
        }
        memset(p, 0x5a, 4 << 20);
    }
    printf("memhog: survived %d MiB\n", mib);
    return 0;
}
