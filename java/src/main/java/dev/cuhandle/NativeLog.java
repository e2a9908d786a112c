package dev.cuhandle;

import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.BlockingQueue;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicLong;

/**
 * Receives the native layer's log records and forwards them to {@code System.Logger "dev.cuhandle"}.
 *
 * <p>Records are queued and published by a daemon thread, {@code cuhandle-log}: the native side
 * emits them while a call is in flight, and a logger handler that ran right there could call back
 * into cuhandle (say, close the handle whose call is logging, which would wait for that very
 * call, rule L5). On the logging thread such a handler just runs after the call. The thread ends
 * after a few idle seconds, so that it never pins cuhandle's class loader for long.
 */
final class NativeLog {
    /**
     * The logger, made on first use: {@code System.getLogger} sets up the logging framework, which takes
     * a fresh JVM milliseconds and must not delay loading the library (see {@link Native}).
     */
    private static final class Holder {
        static final System.Logger LOGGER = System.getLogger("dev.cuhandle");
    }

    /** The most verbose native level: used until the logger's level is known, so no record is lost. */
    static final int ALL_NATIVE_LEVELS = 5;

    private static final System.Logger.Level[] LEVELS = {
        System.Logger.Level.OFF,
        System.Logger.Level.ERROR,
        System.Logger.Level.WARNING,
        System.Logger.Level.INFO,
        System.Logger.Level.DEBUG,
        System.Logger.Level.TRACE,
    };
    /** Records beyond this many waiting are dropped (counted, and reported with the next record). */
    private static final int CAPACITY = 10_000;
    private static final long IDLE_EXIT_MILLIS = 5_000;

    private static final BlockingQueue<Record> QUEUE = new ArrayBlockingQueue<>(CAPACITY);
    private static final AtomicInteger DROPPED = new AtomicInteger();
    /** Records queued and records published, for {@link #awaitPublished}. */
    private static final AtomicLong QUEUED = new AtomicLong();
    private static final AtomicLong PUBLISHED = new AtomicLong();
    private static final Object WORKER_LOCK = new Object();
    private static Thread worker;

    private static final class Record {
        final int level;
        final String message;

        Record(int level, String message) {
            this.level = level;
            this.message = message;
        }
    }

    private NativeLog() {}

    /** The {@code System.Logger} named {@code dev.cuhandle}, made on first use. */
    static System.Logger logger() {
        return Holder.LOGGER;
    }

    /** Called from Rust; {@code level} follows Rust's {@code log::Level} (1 = error .. 5 = trace). Never blocks. */
    static void log(int level, String message) {
        if (QUEUE.offer(new Record(Math.max(1, Math.min(5, level)), message))) {
            QUEUED.incrementAndGet();
            ensureWorker();
        } else {
            DROPPED.incrementAndGet();
        }
    }

    private static void ensureWorker() {
        synchronized (WORKER_LOCK) {
            if (worker == null) {
                worker = new Thread(new Publisher(), "cuhandle-log");
                worker.setDaemon(true);
                worker.start();
            }
        }
    }

    /**
     * The logging thread's body. A class, not {@code NativeLog::publishUntilIdle}: the first native record can come
     * during the first {@code Handle.create}, where the JVM's first method reference would cost milliseconds of
     * {@code java.lang.invoke} set-up on the caller's thread (issue 35; ColdPathLambdaTest).
     */
    private static final class Publisher implements Runnable {
        @Override
        public void run() {
            publishUntilIdle();
        }
    }

    private static void publishUntilIdle() {
        while (true) {
            Record r;
            try {
                r = QUEUE.poll(IDLE_EXIT_MILLIS, TimeUnit.MILLISECONDS);
            } catch (InterruptedException e) {
                r = null;
            }
            if (r == null) {
                synchronized (WORKER_LOCK) {
                    if (QUEUE.isEmpty()) {
                        worker = null; // a later record starts a new thread
                        return;
                    }
                }
                continue;
            }
            publish(r);
        }
    }

    private static void publish(Record r) {
        try {
            int dropped = DROPPED.getAndSet(0);
            if (dropped > 0) {
                logger().log(System.Logger.Level.WARNING, dropped + " native log records were dropped: more than " + CAPACITY + " were waiting");
            }
            logger().log(LEVELS[r.level], r.message);
        } catch (RuntimeException e) {
            // A failing handler must not end the publishing of later records.
        } finally {
            synchronized (PUBLISHED) {
                PUBLISHED.incrementAndGet();
                PUBLISHED.notifyAll();
            }
        }
    }

    /** Waits until every record queued before this call was published; false on timeout. For tests and shutdown. */
    static boolean awaitPublished(long timeoutMillis) throws InterruptedException {
        long target = QUEUED.get();
        long deadline = System.nanoTime() + TimeUnit.MILLISECONDS.toNanos(timeoutMillis);
        synchronized (PUBLISHED) {
            while (PUBLISHED.get() < target) {
                long left = TimeUnit.NANOSECONDS.toMillis(deadline - System.nanoTime());
                if (left <= 0) {
                    return false;
                }
                PUBLISHED.wait(left);
            }
        }
        return true;
    }

    /** The most verbose Rust level Java currently enables, so disabled records cost nothing. */
    static int enabledNativeLevel() {
        for (int level = 5; level >= 1; level--) {
            if (logger().isLoggable(LEVELS[level])) {
                return level;
            }
        }
        return 0;
    }
}
