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
    /** Records published on "dev.cuhandle" while {@code body} runs, with the name of the thread that published each. */
    private static List<String[]> published(Runnable body) throws InterruptedException {
        Native.ensureLoaded();
        Logger jul = Logger.getLogger("dev.cuhandle");
        List<String[]> records = new CopyOnWriteArrayList<>();
        Handler capture = new Handler() {
            @Override
            public void publish(LogRecord record) {
                records.add(new String[] {record.getLevel().getName(), String.valueOf(record.getMessage()), Thread.currentThread().getName()});
            }

            @Override
            public void flush() {}

            @Override
            public void close() {}
        };
        jul.addHandler(capture);
        try {
            body.run();
            assertTrue(NativeLog.awaitPublished(10_000), "records are published by the logging thread");
        } finally {
            jul.removeHandler(capture);
        }
        return records;
    }

    @Test
    void rustLogRecordsArriveOnTheDevCuhandleLoggerWithTheirLevel() throws InterruptedException {
        List<String[]> records = published(() -> {
            NativeTestApi.log(2, "native warning for the logging test");
            NativeTestApi.log(1, "native error for the logging test");
            // JUL's default level is INFO, so the bridge was configured to drop debug in Rust.
            NativeTestApi.log(4, "native debug that must not arrive");
        });
        // Other records (e.g. a cleaner's leak warning from another test) may arrive meanwhile.
        records.removeIf(r -> !r[1].contains("logging test") && !r[1].contains("must not arrive"));
        assertEquals(2, records.size(), records.stream().map(r -> String.join("|", r)).collect(java.util.stream.Collectors.toList()).toString());
        assertEquals(Level.WARNING.getName(), records.get(0)[0]);
        assertTrue(records.get(0)[1].contains("native warning for the logging test"));
        assertEquals(Level.SEVERE.getName(), records.get(1)[0]);
    }

    /**
     * Rule L4/L5: a handler never runs on the thread that made the native call (it could call back
     * into cuhandle, e.g. close the handle whose call is logging, and wait for itself), and never
     * while a native lock is held.
     */
    @Test
    void handlersRunOnTheLoggingThreadNotOnTheCallingThread() throws InterruptedException {
        List<String[]> records = published(() -> NativeTestApi.log(2, "native record for the thread test"));
        records.removeIf(r -> !r[1].contains("thread test"));
        assertEquals(1, records.size());
        assertEquals("cuhandle-log", records.get(0)[2]);
    }

    /**
     * Issue 26 (7): strings cross in both directions in the JVM's modified UTF-8: text outside the basic plane and
     * NUL arrive unchanged (a lossy decode made "😀" six U+FFFD on the way in; standard UTF-8 handed to
     * NewStringUTF is garbage on the way out).
     */
    @Test
    void textOutsideTheBasicPlaneAndNulArriveUnchanged() throws InterruptedException {
        String text = "native 😀 warning for the encoding test: 名前, \u0000 and \uD83D\uDE80";
        List<String[]> records = published(() -> NativeTestApi.log(2, text));
        records.removeIf(r -> !r[1].contains("for the encoding test"));
        assertEquals(1, records.size());
        assertEquals(text, records.get(0)[1]);
    }
}
