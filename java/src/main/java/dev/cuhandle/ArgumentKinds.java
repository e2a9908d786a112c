package dev.cuhandle;

/**
 * Which {@code KernelLaunch.arg} overload set an argument (a Java int, a float, a {@link DeviceBuffer} ...),
 * kept per argument as one byte so that an argument of the wrong size can be explained: the kernel, the
 * parameter's size with the C types of that size, the Java type given, and what to pass instead. The driver
 * and the module image know each parameter's size only, not its C type, so the types named are those of the
 * size. The message is built only when thrown.
 */
final class ArgumentKinds {
    static final byte INT = 0;
    static final byte LONG = 1;
    static final byte FLOAT = 2;
    static final byte DOUBLE = 3;
    static final byte SHORT = 4;
    static final byte BYTE = 5;
    static final byte BUFFER = 6;
    static final byte POINTER = 7;
    static final byte STRUCT = 8;

    private ArgumentKinds() {}

    /**
     * "kernel 'scale' parameter 1 is 4 bytes (a float, int or unsigned int in C); the argument given is 8 bytes, a
     * Java double: pass a float (2.0f, not 2.0) or cast ((float) x)".
     */
    static String wrongSize(String kernel, int index, int expected, int given, byte kind) {
        return "kernel '" + kernel + "' parameter " + index + " is " + expected + " bytes (" + cTypesOf(expected) + "); the argument given is "
                + given + " bytes, " + javaTypeOf(kind, given) + ": " + fixFor(expected, kind);
    }

    private static String cTypesOf(int bytes) {
        switch (bytes) {
            case 1:
                return "a char, unsigned char or bool in C";
            case 2:
                return "a short, unsigned short or __half in C";
            case 4:
                return "a float, int or unsigned int in C";
            case 8:
                return "a pointer, double, long long or size_t in C";
            default:
                return "a structure or vector passed by value";
        }
    }

    private static String javaTypeOf(byte kind, int bytes) {
        switch (kind) {
            case INT:
                return "a Java int";
            case LONG:
                return "a Java long";
            case FLOAT:
                return "a Java float";
            case DOUBLE:
                return "a Java double";
            case SHORT:
                return "a Java short";
            case BYTE:
                return "a Java byte";
            case BUFFER:
                return "a DeviceBuffer's address";
            case POINTER:
                return "a raw device pointer (argPointer)";
            default:
                return "a structure of " + bytes + " bytes (ByteBuffer)";
        }
    }

    private static String fixFor(int expected, byte kind) {
        switch (expected) {
            case 1:
                return "pass a byte, e.g. (byte) x";
            case 2:
                return "pass a short, e.g. (short) x";
            case 4:
                return kind == DOUBLE ? "pass a float (2.0f, not 2.0) or cast ((float) x)"
                        : kind == LONG ? "pass an int (2, not 2L) or cast ((int) x)" : "pass a float (e.g. 2.0f) or an int, as the parameter's C type is";
            case 8:
                return kind == FLOAT ? "pass a double (2.0, not 2.0f) or cast ((double) x)"
                        : kind == INT ? "pass a long (2L) or cast ((long) x); for a pointer parameter pass a DeviceBuffer"
                                : "pass a DeviceBuffer for a pointer, a double or a long, as the parameter's C type is";
            default:
                return "pass the structure's " + expected + " bytes, laid out as in C with its padding, as a ByteBuffer (KernelLaunch.arg(int, ByteBuffer))";
        }
    }
}
