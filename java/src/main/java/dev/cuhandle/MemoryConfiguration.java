package dev.cuhandle;

/**
 * The memory settings ({@code -Dcuhandle.pool.releaseThreshold}, {@code -Dcuhandle.pool.enabled}; see
 * docs/guide/configuration.md), read once and handed to the native library when it loads. Kept apart from
 * {@link MemoryStats}, which is only a value.
 */
final class MemoryConfiguration {
    static final String RELEASE_THRESHOLD_PROPERTY = "cuhandle.pool.releaseThreshold";
    static final String POOL_ENABLED_PROPERTY = "cuhandle.pool.enabled";

    private MemoryConfiguration() {}

    /** Hands the memory properties to the native library (once, when it loads). */
    static void configure() {
        NativeApi.configureMemory(releaseThreshold(System.getProperty(RELEASE_THRESHOLD_PROPERTY)), poolsEnabled());
    }

    /** Whether stream-ordered pools may be used ({@code -Dcuhandle.pool.enabled}, default true). */
    static boolean poolsEnabled() {
        return !"false".equalsIgnoreCase(System.getProperty(POOL_ENABLED_PROPERTY, "true").trim());
    }

    /** The threshold a property value asks for: bytes, or -1 for unlimited (also for a value that is no number, with a warning). */
    static long releaseThreshold(String value) {
        if (value == null || value.trim().isEmpty() || value.trim().equalsIgnoreCase("unlimited")) {
            return -1;
        }
        try {
            long bytes = Long.parseLong(value.trim());
            if (bytes >= 0) {
                return bytes;
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        NativeLog.logger().log(System.Logger.Level.WARNING, "-D" + RELEASE_THRESHOLD_PROPERTY + "=" + value
                + " is not a number of bytes >= 0 or 'unlimited'; using unlimited");
        return -1;
    }
}
