package dev.cuhandle;

/**
 * Child JVM of {@link SmPartitionOldDriverTest}: on a stand-in driver of the CUDA version its environment sets, prints
 * what {@link Device#smPartitionSupport()} says and what {@link Device#splitSms(int)} does:
 * {@code support: <reason or empty>} and {@code split: <the partitions, or the exception's type, error and message>}.
 */
public final class SmPartitionOldDriverMain {
    private SmPartitionOldDriverMain() {}

    public static void main(String[] args) {
        Device d = Cuda.device(0);
        System.out.println("support: " + d.smPartitionSupport());
        try (SmPartitions parts = d.splitSms(2)) {
            System.out.println("split: " + parts);
        } catch (CudaException e) {
            System.out.println("split: CudaException " + e.error() + ": " + e.getMessage());
        }
    }
}
