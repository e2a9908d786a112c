package dev.cuhandle;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;

/** The WARNING (and more severe) records published on logger "dev.cuhandle" (JUL here) while it is open. */
final class LogCapture implements AutoCloseable {
    private final Logger jul = Logger.getLogger("dev.cuhandle");
    private final List<String> warnings = new CopyOnWriteArrayList<>();
    private final Handler handler = new Handler() {
        @Override
        public void publish(LogRecord record) {
            if (record.getLevel().intValue() >= Level.WARNING.intValue()) {
                warnings.add(String.valueOf(record.getMessage()));
            }
        }

        @Override
        public void flush() {}

        @Override
        public void close() {}
    };

    LogCapture() {
        jul.addHandler(handler);
    }

    /** The warnings so far that contain {@code text}. */
    List<String> warningsContaining(String text) {
        return warnings.stream().filter(w -> w.contains(text)).collect(java.util.stream.Collectors.toList());
    }

    @Override
    public void close() {
        jul.removeHandler(handler);
    }
}
