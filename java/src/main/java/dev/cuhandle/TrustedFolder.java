package dev.cuhandle;

import java.io.FileInputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;

/**
 * Whether a folder may hold what this process loads (compiled kernels, the native library): no other user may be
 * able to put or replace a file there, or the file would run as this process's code. The checks are those of
 * OpenSSH's {@code safe_path} and pip's {@code check_path_owner}; what passes is used only through the path that
 * was checked ({@link Checked#path}), never looked up again by the name it was given (docs/design.md, rule F1):
 *
 * <ul>
 *   <li>links are not taken on trust: every symbolic link on the way as written must belong to this user or root
 *       (another user's link in {@code /tmp} could lead anywhere);
 *   <li>the folder is then resolved once ({@code toRealPath}), and each folder of that resolved path, from the root
 *       down, is read without following links: it must be a directory (a link there means the path changed while
 *       it was checked), owned by this process's user or root, and writable by group or others only when sticky
 *       (as {@code /tmp}: there nobody can rename or delete another user's entry). Where the path as written has no
 *       link and resolves to itself, these are the folders the first step read, and their attributes from that
 *       read are used (read root-down: once a folder passed, no other user can replace what is below it);
 *   <li>the folder itself is owned by this process's user ({@link Use#CACHE}: root owning it is not enough, and
 *       sticky does not excuse group or other write) or by this user or root ({@link Use#EXTRACTION}: a sticky
 *       {@code /tmp} is fine, since the file is created exclusively with mode 0600).
 * </ul>
 *
 * Why using the checked path is race-free: each folder on it was checked after its parent, and a parent that passed
 * lets nobody else rename or replace its entries (owned by this user or root, others may write only where sticky,
 * and the entry itself is this user's or root's). So once checked, every folder of the path stays the one that was
 * checked, whatever another user does later; only the path as first written could lead elsewhere on a second
 * look-up, which is why nothing looks it up again.
 *
 * Files inside are checked with {@link #fileProblem}: a regular file (not a link), owned by this user, not writable
 * by group or others. Linux only, as the library is (the owner and mode come from the {@code unix} attribute view).
 */
final class TrustedFolder {
    /** What the folder is for: the rules differ only for the folder itself. */
    enum Use {
        /** The compile cache: kept for later processes, so owned by this user alone. */
        CACHE,
        /** The parent of the extracted library: the file is created exclusively, so a sticky shared folder is fine. */
        EXTRACTION
    }

    private static final int S_IFMT = 0170000;
    private static final int S_IFDIR = 0040000;
    private static final int S_IFLNK = 0120000;
    private static final int S_IFREG = 0100000;
    private static final int S_ISVTX = 01000;
    private static final int GROUP_OR_OTHER_WRITE = 0022;
    private static final int ROOT = 0;

    private TrustedFolder() {}

    /** This process's effective user id ({@code /proc/self/status}), or -1 when it cannot be read. */
    static int currentUid() {
        return CurrentUid.VALUE;
    }

    private static final class CurrentUid {
        static final int VALUE = read();

        /**
         * The second field of the "Uid:" line: real, effective, saved, file-system ids. Split by hand: this runs
         * on every cold start, and a regular expression there (the first lambda of the JVM, inside
         * {@code Pattern}) cost a fresh JVM about 15 ms of {@code java.lang.invoke} set-up (issue 35).
         */
        private static int read() {
            // A FileInputStream and not Files.readAllLines: its classes are loaded already in every JVM, where the
            // reader loads about twenty (file channel, charset decoder, buffered reader) on the cold-start path.
            try (FileInputStream in = new FileInputStream("/proc/self/status")) {
                String status = "\n" + new String(in.readAllBytes(), StandardCharsets.US_ASCII);
                int line = status.indexOf("\nUid:");
                if (line >= 0) {
                    int end = status.indexOf('\n', line + 1);
                    return secondField(status.substring(line + 5, end < 0 ? status.length() : end));
                }
            } catch (IOException | RuntimeException e) {
                // Reported as the reason the folder cannot be trusted.
            }
            return -1;
        }
    }

    /**
     * cuhandle's per-user cache folder {@code name} (not yet checked): {@code $XDG_CACHE_HOME/cuhandle/name}, or
     * {@code ~/.cache/cuhandle/name} where {@code XDG_CACHE_HOME} is unset or relative (ignored, as the XDG
     * specification says); null when {@code user.home} is no absolute folder either. The compile cache and the
     * library cache both live here; each caller says in its own way why it has none.
     */
    static Path userCacheFolder(String name) {
        String xdg = System.getenv("XDG_CACHE_HOME");
        if (xdg != null && !xdg.isEmpty() && Paths.get(xdg).isAbsolute()) {
            return Paths.get(xdg, "cuhandle", name);
        }
        Path home = Paths.get(System.getProperty("user.home", ""));
        return home.isAbsolute() ? home.resolve(".cache").resolve("cuhandle").resolve(name) : null;
    }

    /** The outcome of {@link #check}: the resolved folder to use, or why there is none. */
    static final class Checked {
        /** The folder as resolved once and checked, with no link on the way; null when {@link #problem} is set. */
        final Path path;
        /** Why the folder cannot be trusted, naming the path and what is wrong with it; null when it can. */
        final String problem;

        private Checked(Path path, String problem) {
            this.path = path;
            this.problem = problem;
        }

        static Checked refused(String problem) {
            return new Checked(null, problem);
        }
    }

    /**
     * Checks {@code folder} for {@code use} once. The folder must exist and be named from the root: a relative name
     * would depend on the working directory. Callers use {@link Checked#path} for every later step (create, write,
     * verify, load, read, list, delete).
     */
    static Checked check(Path folder, Use use) {
        if (!folder.isAbsolute()) {
            return Checked.refused(folder + " is not an absolute path (a relative one would depend on the working directory); name the folder from the root");
        }
        int uid = currentUid();
        if (uid < 0) {
            return Checked.refused("this process's user id cannot be read from /proc/self/status, so no owner can be checked");
        }
        try {
            // Each folder's own problem is noted on the way: where no link is met and the path resolves to itself (the
            // usual case), these are the folders the loop below would read again, and this answer is its answer.
            boolean linked = false;
            String firstProblem = null;
            for (Path p : prefixes(folder)) {
                Map<String, Object> a = attributes(p);
                if (type(a) == S_IFLNK) {
                    if (owner(a) != uid && owner(a) != ROOT) {
                        return Checked.refused(p + " is a symbolic link owned by user " + owner(a) + ": another user's link could lead anywhere");
                    }
                    linked = true;
                } else if (firstProblem == null) {
                    firstProblem = problemOf(p, folder, a, uid, use);
                }
            }
            Path real = folder.toRealPath();
            if (!linked && real.equals(folder)) {
                return firstProblem != null ? Checked.refused(firstProblem) : new Checked(real, null);
            }
            for (Path p : prefixes(real)) {
                Map<String, Object> a = attributes(p);
                String problem = type(a) == S_IFLNK
                        ? p + " became a symbolic link after " + folder + " was resolved to " + real + ": the path changed while it was checked"
                        : problemOf(p, real, a, uid, use);
                if (problem != null) {
                    return Checked.refused(problem);
                }
            }
            return new Checked(real, null);
        } catch (UnsupportedOperationException e) {
            return Checked.refused("owners and permissions cannot be read on this system (" + e.getMessage() + ")");
        } catch (IOException e) {
            return Checked.refused("checking " + folder + " failed: " + e);
        }
    }

    /**
     * Why {@code p}, a folder on the way to {@code folder} or {@code folder} itself, with attributes {@code a}, fails
     * {@link #check}: the folder's own rules for {@code use}, or those of a folder above it; null when it passes.
     */
    private static String problemOf(Path p, Path folder, Map<String, Object> a, int uid, Use use) {
        return p.equals(folder) ? folderProblem(p, a, uid, use) : aboveProblem(p, a, uid);
    }

    /** Why {@code folder} cannot be trusted for {@code use}, or null when it can: {@link #check}'s problem. */
    static String problem(Path folder, Use use) {
        return check(folder, use).problem;
    }

    /**
     * Why the file at {@code file} (in a trusted folder) cannot be trusted, or null: it must be a regular file, not
     * a link, owned by this user and not writable by group or others.
     */
    static String fileProblem(Path file) throws IOException {
        Map<String, Object> a = attributes(file);
        if (type(a) != S_IFREG) {
            return file + " is not a regular file" + (type(a) == S_IFLNK ? " but a symbolic link" : "");
        }
        if (owner(a) != currentUid()) {
            return file + " is owned by user " + owner(a) + ", not by this process's user " + currentUid();
        }
        if ((mode(a) & GROUP_OR_OTHER_WRITE) != 0) {
            return file + " is writable by group or others (mode " + Integer.toOctalString(mode(a) & 07777) + ")";
        }
        return null;
    }

    /** The second of the fields separated by spaces or tabs in {@code text}: 1001 for "1000\t1001\t1001\t1001". */
    static int secondField(String text) {
        int i = 0;
        int field = 0;
        while (i < text.length()) {
            while (i < text.length() && (text.charAt(i) == ' ' || text.charAt(i) == '\t')) {
                i++;
            }
            int start = i;
            while (i < text.length() && text.charAt(i) != ' ' && text.charAt(i) != '\t') {
                i++;
            }
            if (i > start && ++field == 2) {
                return Integer.parseInt(text.substring(start, i));
            }
        }
        throw new NumberFormatException("no second field in '" + text + "'");
    }

    /** "/", "/a", "/a/b" for "/a/b". */
    private static List<Path> prefixes(Path absolute) {
        List<Path> prefixes = new ArrayList<>();
        Path p = absolute.getRoot();
        prefixes.add(p);
        for (Path name : absolute) {
            p = p.resolve(name);
            prefixes.add(p);
        }
        return prefixes;
    }

    private static String aboveProblem(Path p, Map<String, Object> a, int uid) {
        if (type(a) != S_IFDIR) {
            return p + " is not a directory (it changed while it was checked)";
        }
        if (owner(a) != uid && owner(a) != ROOT) {
            return p + ", a folder above it, is owned by user " + owner(a) + ": that user could replace what is below";
        }
        if ((mode(a) & GROUP_OR_OTHER_WRITE) != 0 && (mode(a) & S_ISVTX) == 0) {
            return p + ", a folder above it, is writable by group or others without the sticky bit (mode "
                    + Integer.toOctalString(mode(a) & 07777) + "): they could rename what is below";
        }
        return null;
    }

    private static String folderProblem(Path p, Map<String, Object> a, int uid, Use use) {
        String mode = " (mode " + Integer.toOctalString(mode(a) & 07777) + ")";
        if (type(a) != S_IFDIR) {
            return p + " is not a directory";
        }
        if (owner(a) != uid && !(use == Use.EXTRACTION && owner(a) == ROOT)) {
            return p + " is owned by user " + owner(a) + ", not by this process's user " + uid
                    + (use == Use.EXTRACTION ? " or root" : "") + ": that user could put files there";
        }
        boolean groupOrOther = (mode(a) & GROUP_OR_OTHER_WRITE) != 0;
        if (groupOrOther && (use == Use.CACHE || (mode(a) & S_ISVTX) == 0)) {
            return p + " is writable by group or others" + mode
                    + (use == Use.CACHE ? "; a cache folder must be writable by its owner alone (chmod 700)" : " and not sticky");
        }
        return null;
    }

    private static Map<String, Object> attributes(Path p) throws IOException {
        return Files.readAttributes(p, "unix:mode,uid", LinkOption.NOFOLLOW_LINKS);
    }

    private static int mode(Map<String, Object> a) {
        return (Integer) a.get("mode");
    }

    private static int type(Map<String, Object> a) {
        return mode(a) & S_IFMT;
    }

    private static int owner(Map<String, Object> a) {
        return (Integer) a.get("uid");
    }
}
