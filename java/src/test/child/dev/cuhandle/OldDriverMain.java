package dev.cuhandle;

/**
 * Child JVM of {@link OldDriverTest}: on a stand-in driver that reports an older CUDA version (set through its
 * environment), prints how the first CUDA call is refused: {@code refused: <exception class>: <message>}, or
 * {@code accepted: <device count>}.
 */
public final class OldDriverMain {
    private OldDriverMain() {}

    public static void main(String[] args) {
        try {
            System.out.println("accepted: " + Cuda.deviceCount());
        } catch (RuntimeException e) {
            System.out.println("refused: " + e.getClass().getName() + ": " + e.getMessage());
        }
    }
}
