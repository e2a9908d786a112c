package dev.cuhandle;

/** {@link ColdPathLambdaTest}'s child: the first Handle.create and close of a process, then a line saying so. */
public final class ColdPathLambdaMain {
    private ColdPathLambdaMain() {}

    /**
     * Creates and closes a handle on device 0.
     *
     * @param args none
     */
    public static void main(String[] args) {
        Handle.create(0).close();
        System.out.println("created and closed");
    }
}
