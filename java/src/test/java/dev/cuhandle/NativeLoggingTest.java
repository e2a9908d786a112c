package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.logging.Handler;
import java.util.logging.Level;
import java.util.logging.LogRecord;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;

/** Rust `log` records reach System.Logger "dev.cuhandle" (JUL here); levels below the enabled one are dropped in Rust. */
class NativeLoggingTest {
    @Test
    void rustLogRecordsArriveOnTheDevCuhandleLoggerWithTheirLevel() throws InterruptedException {
        Native.ensureLoaded();
        Logger jul = Logger.getLogger("dev.cuhandle");
        List<LogRecord> records = new CopyOnWriteArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                records.add(record);
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        jul.addHandler(capture);
        try {
            NativeTestApi.log(2, "native warning for the logging test");
            NativeTestApi.log(1, "native error for the logging test");
            // JUL's default level is INFO, so the bridge was configured to drop debug in Rust.
            NativeTestApi.log(4, "native debug that must not arrive");
            assertTrue(NativeLog.awaitPublished(10_000), "records are published by the logging thread");
        } finally {
            jul.removeHandler(capture);
        }
        // Other records (e.g. a cleaner's leak warning from another test) may arrive meanwhile.
        records.removeIf(r -> r.getMessage() == null || !r.getMessage().contains("logging test") && !r.getMessage().contains("must not arrive"));
        assertEquals(2, records.size(), records.toString());
        assertEquals(Level.WARNING, records.get(0).getLevel());
        assertTrue(records.get(0).getMessage().contains("native warning for the logging test"));
        assertEquals(Level.SEVERE, records.get(1).getLevel());
    }

    /**
     * Rule L4/L5: a handler never runs on the thread that made the native call (it could call back
     * into cuhandle, e.g. close the handle whose call is logging, and wait for itself), and never
     * while a native lock is held.
     */
    @Test
    void handlersRunOnTheLoggingThreadNotOnTheCallingThread() throws InterruptedException {
        Native.ensureLoaded();
        Logger jul = Logger.getLogger("dev.cuhandle");
        List<String> threads = new CopyOnWriteArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                if (record.getMessage() != null && record.getMessage().contains("thread test")) {
                    threads.add(Thread.currentThread().getName());
                }
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        jul.addHandler(capture);
        try {
            NativeTestApi.log(2, "native record for the thread test");
            assertTrue(NativeLog.awaitPublished(10_000));
        } finally {
            jul.removeHandler(capture);
        }
        assertEquals(List.of("cuhandle-log"), threads);
    }
}
