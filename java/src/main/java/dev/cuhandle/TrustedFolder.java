package dev.cuhandle;

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
 * OpenSSH's {@code safe_path} and pip's {@code check_path_owner}, made on every use:
 *
 * <ul>
 *   <li>the folder and every folder above it, as the kernel resolves them ({@code toRealPath}), are directories
 *       owned by this process's user or root, and writable by group or others only when sticky (as {@code /tmp}:
 *       there nobody can rename or delete another user's file);
 *   <li>the folder itself is owned by this process's user ({@link Use#CACHE}: root owning it is not enough, and
 *       sticky does not excuse group or other write) or by this user or root ({@link Use#EXTRACTION}: a sticky
 *       {@code /tmp} is fine, since the file is created exclusively with mode 0600);
 *   <li>links are not taken on trust: every symbolic link on the way as written must belong to this user or root
 *       (another user's link in {@code /tmp} could lead anywhere), and the folder it leads to is checked as above.
 * </ul>
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

        /** The second field of the "Uid:" line: real, effective, saved, file-system ids. */
        private static int read() {
            try {
                List<String> lines = Files.readAllLines(Paths.get("/proc/self/status"), StandardCharsets.US_ASCII);
                for (String line : lines) {
                    if (line.startsWith("Uid:")) {
                        return Integer.parseInt(line.substring(4).trim().split("\\s+")[1]);
                    }
                }
            } catch (IOException | RuntimeException e) {
                // Reported as the reason the folder cannot be trusted.
            }
            return -1;
        }
    }

    /**
     * Why {@code folder} cannot be trusted for {@code use}, or null when it can. The folder must exist.
     *
     * @return a reason naming the path and what is wrong with it, e.g. "/tmp/c is writable by group or others"
     */
    static String problem(Path folder, Use use) {
        int uid = currentUid();
        if (uid < 0) {
            return "this process's user id cannot be read from /proc/self/status, so no owner can be checked";
        }
        try {
            for (Path p : prefixes(folder.toAbsolutePath())) {
                Map<String, Object> a = attributes(p);
                if (type(a) == S_IFLNK && owner(a) != uid && owner(a) != ROOT) {
                    return p + " is a symbolic link owned by user " + owner(a) + ": another user's link could lead anywhere";
                }
            }
            Path real = folder.toRealPath();
            for (Path p : prefixes(real)) {
                String problem = p.equals(real) ? folderProblem(p, attributes(p), uid, use) : aboveProblem(p, attributes(p), uid);
                if (problem != null) {
                    return problem;
                }
            }
            return null;
        } catch (UnsupportedOperationException e) {
            return "owners and permissions cannot be read on this system (" + e.getMessage() + ")";
        } catch (IOException e) {
            return "checking " + folder + " failed: " + e;
        }
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
