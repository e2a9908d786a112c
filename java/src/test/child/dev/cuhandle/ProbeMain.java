package dev.cuhandle;

/** Child-JVM probe: prints what the first CUDA use does, one fact per line, and never crashes. */
public final class ProbeMain {
    private ProbeMain() {}

    public static void main(String[] args) {
        System.out.println("available=" + Cuda.isAvailable());
        try {
            System.out.println("deviceCount=" + Cuda.deviceCount());
        } catch (CudaException e) {
            System.out.println("exception=" + e.getClass().getSimpleName());
            System.out.println("code=" + e.code());
            System.out.println("error=" + e.error());
            System.out.println("message=" + e.getMessage());
        } catch (Throwable t) {
            System.out.println("unexpected=" + t);
        }
        // The class must still be usable after a failure (no NoClassDefFoundError).
        System.out.println("availableAgain=" + Cuda.isAvailable());
    }
}
