package dev.cuhandle.bench;

import com.sun.management.GarbageCollectionNotificationInfo;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.util.ArrayList;
import java.util.List;
import javax.management.NotificationEmitter;
import javax.management.openmbean.CompositeData;

/**
 * The JVM's stop-the-world collections while a benchmark runs, so that a slow round can be told
 * apart from a garbage-collector pause: a round whose interval overlaps one was stopped by the JVM,
 * not by the code it timed. Times are JVM uptime in milliseconds ({@link #uptimeMillis()}, the
 * clock of {@code -Xlog:gc}'s uptime decorator). The collectors' notifications count from the JVM's
 * start time instead ({@code RuntimeMXBean.getStartTime()}), tens of milliseconds earlier (37 ms on
 * the development machine), so their times are shifted onto uptime when recorded. Concurrent cycles
 * are left out: they do not stop the application.
 */
final class GcPauses {
    /** Rounding of the millisecond clocks on both sides. */
    private static final long SLACK_MS = 1;
    private final List<long[]> pauses = new ArrayList<>();

    private GcPauses() {}

    /** Starts recording. */
    static GcPauses record() {
        GcPauses recorder = new GcPauses();
        // Notification times + this = uptime.
        long shift = uptimeMillis() - (System.currentTimeMillis() - ManagementFactory.getRuntimeMXBean().getStartTime());
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            // G1's and ZGC's concurrent cycles ("G1 Concurrent GC", "ZGC Cycles") run beside the application.
            if (!(gc instanceof NotificationEmitter) || gc.getName().contains("Concurrent") || gc.getName().endsWith("Cycles")) {
                continue;
            }
            ((NotificationEmitter) gc).addNotificationListener((notification, handback) -> {
                if (!GarbageCollectionNotificationInfo.GARBAGE_COLLECTION_NOTIFICATION.equals(notification.getType())) {
                    return;
                }
                GarbageCollectionNotificationInfo info = GarbageCollectionNotificationInfo.from((CompositeData) notification.getUserData());
                synchronized (recorder.pauses) {
                    recorder.pauses.add(new long[] {info.getGcInfo().getStartTime() + shift, info.getGcInfo().getEndTime() + shift});
                }
            }, null, null);
        }
        return recorder;
    }

    /** JVM uptime now, in milliseconds. */
    static long uptimeMillis() {
        return ManagementFactory.getRuntimeMXBean().getUptime();
    }

    /**
     * Whether a round that ended at uptime {@code endMillis} after {@code micros} overlaps a
     * recorded pause. Notifications arrive after their collection: call it once the rounds are over.
     */
    boolean overlapsPause(long endMillis, double micros) {
        long start = endMillis - (long) Math.ceil(micros / 1000) - SLACK_MS;
        synchronized (pauses) {
            for (long[] p : pauses) {
                if (p[0] <= endMillis + SLACK_MS && p[1] >= start) {
                    return true;
                }
            }
        }
        return false;
    }
}
