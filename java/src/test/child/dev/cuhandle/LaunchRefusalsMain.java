package dev.cuhandle;

/**
 * Child JVM of {@link LaunchRefusalsTest}: on a stand-in device without cooperative launch and below compute
 * capability 9.0 (set through the stand-in's environment), prints how a cooperative and a clustered launch are
 * refused, one line each: {@code cooperative: <exception class>: <message>}, then {@code cluster: ...}.
 */
public final class LaunchRefusalsMain {
    private LaunchRefusalsMain() {}

    public static void main(String[] args) {
        try (Handle h = Handle.create(0); Library lib = Library.loadResource(LaunchRefusalsMain.class, "/kernels/launch_features.fatbin");
                DeviceBuffer b = h.allocate(64)) {
            KernelLaunch launch = lib.kernel("cuh_test_cluster_neighbour").newLaunch().grid(4).block(32).arg(0, b).arg(1, b).arg(2, b);
            report("cooperative", () -> launch.cooperative(true).launch(h));
            report("cluster", () -> launch.cooperative(false).cluster(2, 1, 1).launch(h));
            launch.cluster(0, 0, 0).launch(h); // a plain launch still works
            h.synchronize();
            System.out.println("plain: launched");
        }
    }

    private static void report(String what, Runnable launch) {
        try {
            launch.run();
            System.out.println(what + ": launched");
        } catch (RuntimeException e) {
            System.out.println(what + ": " + e.getClass().getName() + ": " + e.getMessage());
        }
    }
}
