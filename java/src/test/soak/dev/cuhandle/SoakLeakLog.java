package dev.cuhandle;

import java.util.concurrent.atomic.AtomicLong;
import java.util.logging.Filter;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/**
 * Counts (and keeps off the console) the cleaner's "DeviceBuffer was not closed" warnings, and
 * counts every other warning of {@code dev.cuhandle}, which still goes to the console.
 */
final class SoakLeakLog implements Filter {
    /** The start of the cleaner's warning about a buffer that was not closed. */
    static final String LEAK_WARNING = "DeviceBuffer was not closed";

    final AtomicLong leakWarnings = new AtomicLong();
    final AtomicLong otherWarnings = new AtomicLong();
    private Logger jul;
    private Filter previous;
    private Level previousLevel;
    private boolean levelChanged;

    static SoakLeakLog install() {
        SoakLeakLog l = new SoakLeakLog();
        l.jul = Logger.getLogger("dev.cuhandle"); // held strongly while installed
        l.previous = l.jul.getFilter();
        l.previousLevel = l.jul.getLevel();
        if (!l.jul.isLoggable(Level.WARNING)) {
            l.jul.setLevel(Level.WARNING); // the leak warnings are how the soak sees the cleaner work
            l.levelChanged = true;
        }
        l.jul.setFilter(l);
        return l;
    }

    void uninstall() {
        jul.setFilter(previous);
        if (levelChanged) {
            jul.setLevel(previousLevel);
        }
    }

    @Override
    public boolean isLoggable(LogRecord record) {
        String m = record.getMessage();
        if (m != null && m.startsWith(LEAK_WARNING)) {
            leakWarnings.incrementAndGet();
            return false;
        }
        if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
            otherWarnings.incrementAndGet();
        }
        return previous == null || previous.isLoggable(record);
    }
}
