package dev.cuhandle;

/**
 * Child-JVM probe for an absent NVRTC: prints what {@link Library#compile} does, one fact per line, then
 * shows that the rest of cuhandle still works (a round trip through device memory where a driver exists).
 */
public final class CompileProbeMain {
    private CompileProbeMain() {}

    public static void main(String[] args) {
        String source = "extern \"C\" __global__ void k() {}";
        for (int attempt = 1; attempt <= 2; attempt++) {
            try {
                Library.compile(source, CompileOptions.defaults().architecture("compute_75")).close();
                System.out.println("compiled" + attempt + "=true");
            } catch (CudaException e) {
                System.out.println("exception" + attempt + "=" + e.getClass().getSimpleName());
                System.out.println("code" + attempt + "=" + e.code());
                System.out.println("message" + attempt + "=" + e.getMessage());
            } catch (Throwable t) {
                System.out.println("unexpected" + attempt + "=" + t);
            }
        }
        System.out.println("available=" + Cuda.isAvailable());
        if (Cuda.isAvailable()) {
            try (Handle h = Handle.create(0); DeviceBuffer b = h.upload(new float[] {1f, 2f, 3f})) {
                float[] back = new float[3];
                b.download(back);
                System.out.println("roundTrip=" + (back[0] == 1f && back[1] == 2f && back[2] == 3f ? "ok" : "wrong"));
            } catch (Throwable t) {
                System.out.println("roundTrip=" + t);
            }
        }
    }
}
