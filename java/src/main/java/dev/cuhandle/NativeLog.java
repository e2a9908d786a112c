package dev.cuhandle;

/** Receives the native layer's log records and forwards them to {@code System.Logger "dev.cuhandle"}. */
final class NativeLog {
    static final System.Logger LOGGER = System.getLogger("dev.cuhandle");

    private static final System.Logger.Level[] LEVELS = {
        System.Logger.Level.OFF,
        System.Logger.Level.ERROR,
        System.Logger.Level.WARNING,
        System.Logger.Level.INFO,
        System.Logger.Level.DEBUG,
        System.Logger.Level.TRACE,
    };

    private NativeLog() {}

    /** Called from Rust; {@code level} follows Rust's {@code log::Level} (1 = error .. 5 = trace). */
    static void log(int level, String message) {
        LOGGER.log(LEVELS[Math.max(1, Math.min(5, level))], message);
    }

    /** The most verbose Rust level Java currently enables, so disabled records cost nothing. */
    static int enabledNativeLevel() {
        for (int level = 5; level >= 1; level--) {
            if (LOGGER.isLoggable(LEVELS[level])) {
                return level;
            }
        }
        return 0;
    }
}
