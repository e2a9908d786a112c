package dev.cuhandle;

/**
 * Child JVM of {@link DriverStartTest}, on the stand-in driver. {@code create}: the process's first call is
 * {@code Handle.create(0)}; prints {@code caller initialised: <0|1>} (stand-in command 62: whether this thread's
 * {@code cuInit} was the one that initialised the driver) and {@code stream: <the handle's stream>}.
 * {@code version-first}: {@code Cuda.driverVersion()} first, which needs no initialised driver; prints whether
 * a {@code cuhandle-driver-start} thread exists then, and after {@code Cuda.deviceCount()} who initialised.
 * Any failure of {@code Handle.create} is printed as {@code failed: <class>: <message>}.
 */
public final class DriverStartMain {
    private DriverStartMain() {}

    public static void main(String[] args) {
        String mode = args.length > 0 ? args[0] : "create";
        if (mode.equals("version-first")) {
            System.out.println("driver version: " + Cuda.driverVersion());
            System.out.println("start thread after driverVersion: " + startThreadExists());
            System.out.println("devices: " + Cuda.deviceCount());
            System.out.println("caller initialised: " + StandIn.control(62, 0));
            return;
        }
        try (Handle h = Handle.create(0)) {
            System.out.println("caller initialised: " + StandIn.control(62, 0));
            System.out.println("stream: " + h.stream());
        } catch (RuntimeException e) {
            System.out.println("failed: " + e.getClass().getName() + ": " + e.getMessage());
        }
    }

    private static boolean startThreadExists() {
        for (Thread t : Thread.getAllStackTraces().keySet()) {
            if (t.getName().equals("cuhandle-driver-start")) {
                return true;
            }
        }
        return false;
    }
}
