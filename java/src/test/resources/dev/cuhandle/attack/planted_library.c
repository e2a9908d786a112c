/* Issue 26's attacker library: loading it runs its constructor, which records the load in the file
 * named by CUHANDLE_ATTACK_MARKER. The security tests build it with cc and check the file never
 * appears: no other local user's code may run in a cuhandle process. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor)) static void planted(void) {
    const char *marker = getenv("CUHANDLE_ATTACK_MARKER");
    if (marker) {
        int fd = open(marker, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (fd >= 0) {
            (void)write(fd, "planted code ran\n", 17);
            close(fd);
        }
    }
}
