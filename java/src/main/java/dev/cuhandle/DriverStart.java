package dev.cuhandle;

/**
 * Starts the driver's initialisation (loading libcuda, {@code cuInit}) on a thread of its own when the
 * process's first use of cuhandle needs an initialised driver ({@link Handle#create()},
 * {@link Cuda#deviceCount()}, ...), as soon as libcuhandle is loaded and knows the driver's path. The caller's thread
 * sets up the classes its call needs meanwhile ({@code Handle.create} initialises the cleaner and the
 * device cache before its native call) and then waits for the same initialisation in its own native
 * call (the driver is initialised once per process, whichever thread comes first; every other waits for
 * it), so the first {@code Handle.create} no longer pays for both one after the other (issue 35's cold
 * start).
 *
 * <p>A use that needs no driver ({@link Cuda#driverVersion()}, run-time compilation, the environment
 * report's first lines) starts nothing: cuhandle never initialises the driver unless a call asked for
 * it. A failure of the initialisation is kept by the native library and thrown by the call that needs
 * the driver, as before; this thread drops it. Not a daemon: a JVM whose last thread ends right after
 * a failed first call waits for {@code cuInit} to return (milliseconds) rather than run the driver's
 * exit handlers while it is inside {@code cuInit}. The price: a {@code cuInit} that never returns (a
 * hung driver) also keeps such a JVM from ending, where the calling thread hung on it before.
 * {@code System.exit} waits for no thread, this one included. A named class rather than a lambda: the
 * first lambda costs a fresh JVM milliseconds of {@code java.lang.invoke} set-up.
 */
final class DriverStart extends Thread {
    /** Set by a first call that needs an initialised driver, before it loads the library. */
    private static volatile boolean wanted;

    private DriverStart() {
        super("cuhandle-driver-start");
        setDaemon(false);
    }

    /**
     * {@link Native#ensureLoaded()} for a call that needs an initialised driver: if this call loads the library,
     * the driver's initialisation starts as soon as the library has the driver's path. (Here and not in {@code Native}: a
     * static method of {@code Native} would load the library before its first line could ask for this.)
     */
    static void ensureLoaded() {
        if (!wanted) {
            wanted = true;
        }
        Native.ensureLoaded();
    }

    /**
     * Called once, as soon as the library took the driver's path: starts the thread if a call asked for it.
     * Where no thread can be started (a restrictive environment), nothing starts: the first call initialises
     * the driver itself, as without this class (and the library's loading does not fail for it).
     */
    static void startIfWanted() {
        if (!wanted) {
            return;
        }
        try {
            new DriverStart().start();
        } catch (Throwable noThread) {
            // The caller's own native call initialises the driver.
        }
    }

    @Override
    public void run() {
        try {
            NativeApi.initialise();
        } catch (Throwable e) {
            // Kept by the native library; the call that needs the driver throws it with its own stack trace.
        }
    }
}
