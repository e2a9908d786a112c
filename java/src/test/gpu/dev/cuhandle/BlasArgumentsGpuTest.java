package dev.cuhandle;

import static dev.cuhandle.BlasTestSupport.assertSameArray;
import static dev.cuhandle.BlasTestSupport.random;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import dev.cuhandle.BlasTestSupport.Prec;
import dev.cuhandle.BlasTestSupport.Vec;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

/**
 * Invalid BLAS arguments: an {@link IllegalArgumentException} that names the problem, before any
 * work is done (the buffers are unchanged): increment 0 on a written vector (axpy y, copy y, swap x
 * or y); a vector buffer too short for n and its increment ("too short"), also when the buffer is a
 * slice of a larger allocation; a result buffer too small for the result; a buffer of another
 * context. Null handles and buffers are {@link NullPointerException}s naming the argument; a closed
 * handle or buffer is an {@link IllegalStateException}.
 */
@GpuTest
@StandInCapable // argument checks only: every case is refused before anything is launched
class BlasArgumentsGpuTest {
    private static final int MAX_POPS = 64;
    private static Handle h;

    @BeforeAll
    static void open() {
        BlasTestSupport.announceSeed(BlasArgumentsGpuTest.class.getSimpleName());
        clearCurrent();
        h = Handle.create(0);
    }

    @AfterAll
    static void close() {
        if (h != null) {
            h.close();
        }
    }

    @BeforeEach
    @AfterEach
    void nothingCurrent() {
        clearCurrent();
    }

    /** Pops the calling thread's context stack until nothing is current (bounded). */
    private static void clearCurrent() {
        int pops = 0;
        while (NativeTestApi.currentContext() != 0) {
            if (++pops > MAX_POPS) {
                throw new AssertionError("a context is still current after " + MAX_POPS + " pops");
            }
            NativeTestApi.setCurrent(0);
        }
    }

    private static void expectIllegalArgument(String what, Executable call, String... fragments) {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call, what + " must be an IllegalArgumentException");
        String message = e.getMessage();
        assertTrue(message != null && !message.isEmpty(), what + ": the exception needs a message");
        for (String f : fragments) {
            assertTrue(message.toLowerCase(Locale.ROOT).contains(f.toLowerCase(Locale.ROOT)),
                    what + ": the message should mention \"" + f + "\" but is: " + message);
        }
    }

    // ------------------------------------------------------------------------------ increment 0 on written vectors

    @ParameterizedTest
    @EnumSource(Prec.class)
    void zeroIncrementOnWrittenVector_isRejected(Prec p) {
        String name = p.prefix() + " inc 0 on written vectors";
        Vec x = Vec.random(p, 16, 1, 0, random(name + "/x"));
        Vec y = Vec.random(p, 16, 1, 0, random(name + "/y"));
        try (DeviceBuffer bx = x.upload(h); DeviceBuffer by = y.upload(h)) {
            for (long n : new long[] {1, 5}) {
                expectIllegalArgument(p.prefix() + "axpy incy=0", () -> p.axpy(h, n, 2.0, bx, 1, by, 0), "incy", "0");
                expectIllegalArgument(p.prefix() + "axpy incx=0 incy=0", () -> p.axpy(h, n, 2.0, bx, 0, by, 0), "incy", "0");
                expectIllegalArgument(p.prefix() + "copy incy=0", () -> p.copy(h, n, bx, 1, by, 0), "incy", "0");
                expectIllegalArgument(p.prefix() + "swap incx=0", () -> p.swap(h, n, bx, 0, by, 1), "incx", "0");
                expectIllegalArgument(p.prefix() + "swap incy=0", () -> p.swap(h, n, bx, 1, by, 0), "incy", "0");
                expectIllegalArgument(p.prefix() + "swap incx=0 incy=0", () -> p.swap(h, n, bx, 0, by, 0), "inc", "0");
            }
            assertSameArray(x.all, x.download(bx), "x after rejected calls", name);
            assertSameArray(y.all, y.download(by), "y after rejected calls", name);
        }
    }

    // ------------------------------------------------------------------------------ misaligned slices

    /** A slice that does not start on an element boundary would fault on the device (sticky). */
    @Test
    void misalignedSlices_areRejectedBeforeTheDevice() {
        try (DeviceBuffer b = h.allocate(1024); DeviceBuffer r = h.allocate(64)) {
            DeviceBuffer x = b.slice(2, 512);
            DeviceBuffer y = b.slice(512, 512);
            expectIllegalArgument("saxpy x at byte 2", () -> Blas.saxpy(h, 4, 1f, x, 1, y, 1), "x", "byte 2");
            expectIllegalArgument("daxpy y at byte 4", () -> Blas.daxpy(h, 4, 1.0, y, 1, b.slice(4, 256), 1), "y", "byte 4");
            expectIllegalArgument("sscal x at byte 2", () -> Blas.sscal(h, 4, 2f, x, 1), "x", "byte 2");
            expectIllegalArgument("ddot result at byte 4", () -> Blas.ddot(h, 4, y, 1, y, 1, r.slice(4, 16)), "result", "byte 4");
            expectIllegalArgument("isamax result at byte 4", () -> Blas.isamax(h, 4, y, 1, r.slice(4, 16)), "result", "byte 4");
            // The handle is still healthy: nothing reached the device.
            assertTrue(Blas.sasum(h, 4, y, 1) >= 0f);
            h.synchronize();
        }
    }

    // ------------------------------------------------------------------------------ too short

    /** One BLAS call on x (and y) for the too-short checks. */
    interface Call {
        void run(Prec p, long n, DeviceBuffer x, long incx, DeviceBuffer y, long incy);
    }

    private static Map<String, Call> calls() {
        Map<String, Call> m = new LinkedHashMap<>();
        m.put("scal", (p, n, x, incx, y, incy) -> p.scal(h, n, 2.0, x, incx));
        m.put("axpy", (p, n, x, incx, y, incy) -> p.axpy(h, n, 2.0, x, incx, y, incy));
        m.put("copy", (p, n, x, incx, y, incy) -> p.copy(h, n, x, incx, y, incy));
        m.put("swap", (p, n, x, incx, y, incy) -> p.swap(h, n, x, incx, y, incy));
        m.put("dot", (p, n, x, incx, y, incy) -> p.dot(h, n, x, incx, y, incy));
        m.put("nrm2", (p, n, x, incx, y, incy) -> p.nrm2(h, n, x, incx));
        m.put("asum", (p, n, x, incx, y, incy) -> p.asum(h, n, x, incx));
        m.put("iamax", (p, n, x, incx, y, incy) -> p.iamax(h, n, x, incx));
        m.put("dot->device", (p, n, x, incx, y, incy) -> {
            try (DeviceBuffer r = h.allocate(8)) {
                p.dot(h, n, x, incx, y, incy, r);
            }
        });
        m.put("nrm2->device", (p, n, x, incx, y, incy) -> {
            try (DeviceBuffer r = h.allocate(8)) {
                p.nrm2(h, n, x, incx, r);
            }
        });
        m.put("asum->device", (p, n, x, incx, y, incy) -> {
            try (DeviceBuffer r = h.allocate(8)) {
                p.asum(h, n, x, incx, r);
            }
        });
        m.put("iamax->device", (p, n, x, incx, y, incy) -> {
            try (DeviceBuffer r = h.allocate(8)) {
                p.iamax(h, n, x, incx, r);
            }
        });
        return m;
    }

    private static boolean usesY(String op) {
        return op.startsWith("axpy") || op.startsWith("copy") || op.startsWith("swap") || op.startsWith("dot");
    }

    /**
     * A vector needs 1 + (n-1)*|inc| elements: one element fewer (for x, and for y) is an
     * IllegalArgumentException saying "too short" and naming the vector; exactly enough works.
     * Buffers are whole allocations here.
     */
    @ParameterizedTest
    @EnumSource(Prec.class)
    void bufferTooShortForNAndInc_isRejected(Prec p) {
        long n = 10;
        for (long inc : new long[] {1, 2, -3}) {
            int need = (int) BlasReference.span(n, inc);
            String name = p.prefix() + " too short inc=" + inc;
            Vec exact = Vec.random(p, n, inc, 0, random(name));
            double[] shortData = new double[need - 1];
            double[] exactData = new double[need];
            System.arraycopy(exact.all, 0, exactData, 0, need);
            System.arraycopy(exact.all, 0, shortData, 0, need - 1);
            try (DeviceBuffer ok1 = p.upload(h, exactData); DeviceBuffer ok2 = p.upload(h, exactData); DeviceBuffer shortBuf = p.upload(h, shortData)) {
                for (Map.Entry<String, Call> c : calls().entrySet()) {
                    String op = p.prefix() + c.getKey() + "(n=" + n + ", inc=" + inc + ")";
                    Call call = c.getValue();
                    boolean singleVectorNoop = !usesY(c.getKey()) && inc <= 0; // reference BLAS: nothing to check
                    if (!singleVectorNoop) {
                        expectIllegalArgument(op + " with x one element short", () -> call.run(p, n, shortBuf, inc, ok2, inc), "too short", "incx");
                    }
                    if (usesY(c.getKey())) {
                        expectIllegalArgument(op + " with y one element short", () -> call.run(p, n, ok1, inc, shortBuf, inc), "too short", "incy");
                    }
                    call.run(p, n, ok1, inc, ok2, inc); // exactly long enough: accepted
                }
                h.synchronize();
                assertSameArray(shortData, p.download(shortBuf, need - 1), "the too-short buffer after rejected calls", name);
            }
        }
    }

    /**
     * The same rule when the vector is a slice: its length, not the allocation behind it, bounds
     * the vector (Blas.java: vectors "must hold 1 + (n-1)*|inc| elements" of their DeviceBuffer).
     * A call that accepted the short slice would read, and for scal/axpy/copy/swap write, memory
     * outside the slice.
     */
    @ParameterizedTest
    @EnumSource(Prec.class)
    void sliceTooShortForNAndInc_isRejected(Prec p) {
        long n = 10;
        long inc = 2;
        int need = (int) BlasReference.span(n, inc);
        String name = p.prefix() + " slice too short";
        Vec whole = Vec.random(p, 4 * need, 1, 0, random(name));
        try (DeviceBuffer big = whole.upload(h); DeviceBuffer other = p.upload(h, new double[4 * need])) {
            DeviceBuffer shortSlice = big.slice(p.bytes, (long) (need - 1) * p.bytes);
            DeviceBuffer okSlice = other.slice(0, (long) need * p.bytes);
            List<String> accepted = new ArrayList<>();
            for (Map.Entry<String, Call> c : calls().entrySet()) {
                String op = p.prefix() + c.getKey() + "(n=" + n + ", inc=" + inc + ")";
                try {
                    c.getValue().run(p, n, shortSlice, inc, okSlice, inc);
                    accepted.add(op + " with x a slice one element short");
                } catch (IllegalArgumentException expected) {
                    assertTrue(expected.getMessage().contains("too short"), op + ": " + expected.getMessage());
                }
                if (usesY(c.getKey())) {
                    try {
                        c.getValue().run(p, n, okSlice, inc, shortSlice, inc);
                        accepted.add(op + " with y a slice one element short");
                    } catch (IllegalArgumentException expected) {
                        assertTrue(expected.getMessage().contains("too short"), op + ": " + expected.getMessage());
                    }
                }
            }
            h.synchronize();
            if (!accepted.isEmpty()) {
                fail("BLAS calls accepted a slice shorter than the vector (they check the allocation behind the slice, not the slice): " + accepted);
            }
        }
    }

    /** Sizes whose span or byte count overflows 64 bits are rejected, never launched. */
    @ParameterizedTest
    @EnumSource(Prec.class)
    void hugeNOrIncrement_isRejected(Prec p) {
        try (DeviceBuffer x = p.upload(h, new double[16]); DeviceBuffer y = p.upload(h, new double[16])) {
            long[][] nInc = {{Long.MAX_VALUE, 1}, {1L << 62, 4}, {3, Long.MAX_VALUE}, {2, Long.MIN_VALUE}, {1L << 40, 1L << 30}};
            for (long[] c : nInc) {
                long n = c[0];
                long inc = c[1];
                String what = p.prefix() + "(n=" + n + ", inc=" + inc + ")";
                expectIllegalArgument(what + " axpy", () -> p.axpy(h, n, 1.0, x, inc, y, 1));
                expectIllegalArgument(what + " copy", () -> p.copy(h, n, x, 1, y, inc));
                expectIllegalArgument(what + " dot", () -> p.dot(h, n, x, inc, y, 1));
                if (inc > 0) {
                    expectIllegalArgument(what + " scal", () -> p.scal(h, n, 1.0, x, inc));
                    expectIllegalArgument(what + " nrm2", () -> p.nrm2(h, n, x, inc));
                    expectIllegalArgument(what + " iamax", () -> p.iamax(h, n, x, inc));
                }
            }
        }
    }

    /**
     * A result buffer smaller than the result (4 bytes for s dot/nrm2/asum, 8 for d and for the
     * 64-bit iamax index) is rejected.
     */
    @ParameterizedTest
    @EnumSource(Prec.class)
    void resultBufferTooSmall_isRejected(Prec p) {
        Vec x = Vec.random(p, 33, 1, 0, random(p.prefix() + " result too small"));
        try (DeviceBuffer bx = x.upload(h); DeviceBuffer small = h.allocate(p.bytes - 1); DeviceBuffer four = h.allocate(4)) {
            expectIllegalArgument(p.prefix() + "dot into " + (p.bytes - 1) + " bytes", () -> p.dot(h, 33, bx, 1, bx, 1, small));
            expectIllegalArgument(p.prefix() + "nrm2 into " + (p.bytes - 1) + " bytes", () -> p.nrm2(h, 33, bx, 1, small));
            expectIllegalArgument(p.prefix() + "asum into " + (p.bytes - 1) + " bytes", () -> p.asum(h, 33, bx, 1, small));
            expectIllegalArgument("i" + p.prefix() + "amax into 4 bytes (the index is 8 bytes)", () -> p.iamax(h, 33, bx, 1, four));
            // n <= 0 also writes its 0 result: the same check applies
            expectIllegalArgument(p.prefix() + "dot n=0 into " + (p.bytes - 1) + " bytes", () -> p.dot(h, 0, bx, 1, bx, 1, small));
            expectIllegalArgument("i" + p.prefix() + "amax n=0 into 4 bytes", () -> p.iamax(h, 0, bx, 1, four));
        }
    }

    /** The same for result slices: the slice's length, not the allocation behind it, bounds the result. */
    @ParameterizedTest
    @EnumSource(Prec.class)
    void resultSliceTooSmall_isRejected(Prec p) {
        Vec x = Vec.random(p, 33, 1, 0, random(p.prefix() + " result slice too small"));
        try (DeviceBuffer bx = x.upload(h); DeviceBuffer big = h.allocate(64)) {
            List<String> accepted = new ArrayList<>();
            DeviceBuffer shortSlice = big.slice(8, p.bytes - 1);
            DeviceBuffer fourSlice = big.slice(8, 4);
            tryReject(accepted, p.prefix() + "dot into a " + (p.bytes - 1) + "-byte slice", () -> p.dot(h, 33, bx, 1, bx, 1, shortSlice));
            tryReject(accepted, "i" + p.prefix() + "amax into a 4-byte slice", () -> p.iamax(h, 33, bx, 1, fourSlice));
            h.synchronize();
            if (!accepted.isEmpty()) {
                fail("result slices smaller than the result were accepted (the check uses the allocation behind the slice): " + accepted);
            }
        }
    }

    private static void tryReject(List<String> accepted, String what, Executable call) {
        try {
            call.execute();
            accepted.add(what);
        } catch (IllegalArgumentException expected) {
            // rejected, as it should be
        } catch (Throwable t) {
            throw new AssertionError(what + ": expected IllegalArgumentException, got " + t, t);
        }
    }

    // ------------------------------------------------------------------------------ other context

    /**
     * Buffers of another context: a handle on a user context (created with cuCtxCreate and
     * current, so Handle.create() binds to it) owns one set of buffers, a handle on device 0's
     * primary context another. Any mix is an IllegalArgumentException naming the context, in both
     * directions and for every argument (x, y, result); nothing is written.
     */
    @Test
    void bufferOfAnotherContext_isRejected() {
        long ctx = NativeTestApi.createContext(0);
        Handle user = null;
        Handle primary = null;
        try {
            assertEquals(ctx, NativeTestApi.currentContext(), "cuCtxCreate leaves the new context current");
            user = Handle.create();
            assertEquals(ctx, user.rawContext(), "Handle.create() binds to the current (user) context");
            primary = Handle.create(0);
            assertNotEquals(user.contextId(), primary.contextId(), "the user context and the primary context are different contexts");
            for (Prec p : Prec.values()) {
                String name = p.prefix() + " other context";
                Vec v = Vec.random(p, 32, 1, 0, random(name));
                try (DeviceBuffer ux = v.upload(user); DeviceBuffer uy = v.upload(user); DeviceBuffer ur = user.allocate(8);
                        DeviceBuffer px = v.upload(primary); DeviceBuffer py = v.upload(primary); DeviceBuffer pr = primary.allocate(8)) {
                    otherContextCalls(p, primary, ux, px, py, pr, "x");
                    otherContextCalls(p, primary, px, ux, py, pr, "y");
                    otherContextCalls(p, primary, px, py, py, ur, "result");
                    otherContextCalls(p, user, px, uy, uy, ur, "x (user handle)");
                    otherContextCalls(p, user, ux, py, uy, ur, "y (user handle)");
                    otherContextCalls(p, user, ux, uy, uy, pr, "result (user handle)");
                    assertSameArray(v.all, v.download(ux), "user x after rejected calls", name);
                    assertSameArray(v.all, v.download(uy), "user y after rejected calls", name);
                    assertSameArray(v.all, v.download(px), "primary x after rejected calls", name);
                    assertSameArray(v.all, v.download(py), "primary y after rejected calls", name);
                    // the same buffers with their own handles work
                    p.axpy(primary, 32, 1.0, px, 1, py, 1);
                    p.axpy(user, 32, 1.0, ux, 1, uy, 1);
                    assertEquals(p.dot(primary, 32, px, 1, py, 1), p.dot(user, 32, ux, 1, uy, 1), "the same computation in both contexts");
                }
            }
        } finally {
            if (primary != null) {
                primary.close();
            }
            if (user != null) {
                user.close();
            }
            NativeTestApi.destroyContext(ctx);
            clearCurrent();
        }
        assertEquals(0L, NativeTestApi.currentContext(), "no context may be left current");
    }

    /**
     * Every operation with handle {@code h2} and buffers x, y (y2: dot's y in the result cases)
     * and result r, exactly one of which (named by {@code which}) belongs to the other context.
     */
    private static void otherContextCalls(Prec p, Handle h2, DeviceBuffer x, DeviceBuffer y, DeviceBuffer y2, DeviceBuffer r, String which) {
        String w = " with " + which + " of another context";
        boolean resultOnly = which.startsWith("result");
        if (!resultOnly) {
            expectIllegalArgument(p.prefix() + "axpy" + w, () -> p.axpy(h2, 32, 2.0, x, 1, y, 1), "context");
            expectIllegalArgument(p.prefix() + "copy" + w, () -> p.copy(h2, 32, x, 1, y, 1), "context");
            expectIllegalArgument(p.prefix() + "swap" + w, () -> p.swap(h2, 32, x, 1, y, 1), "context");
            expectIllegalArgument(p.prefix() + "dot" + w, () -> p.dot(h2, 32, x, 1, y, 1), "context");
            if (which.startsWith("x")) {
                expectIllegalArgument(p.prefix() + "scal" + w, () -> p.scal(h2, 32, 2.0, x, 1), "context");
                expectIllegalArgument(p.prefix() + "nrm2" + w, () -> p.nrm2(h2, 32, x, 1), "context");
                expectIllegalArgument(p.prefix() + "asum" + w, () -> p.asum(h2, 32, x, 1), "context");
                expectIllegalArgument("i" + p.prefix() + "amax" + w, () -> p.iamax(h2, 32, x, 1), "context");
            }
        }
        if (resultOnly) {
            expectIllegalArgument(p.prefix() + "dot" + w, () -> p.dot(h2, 32, x, 1, y2, 1, r), "context");
            expectIllegalArgument(p.prefix() + "nrm2" + w, () -> p.nrm2(h2, 32, x, 1, r), "context");
            expectIllegalArgument(p.prefix() + "asum" + w, () -> p.asum(h2, 32, x, 1, r), "context");
            expectIllegalArgument("i" + p.prefix() + "amax" + w, () -> p.iamax(h2, 32, x, 1, r), "context");
            // n <= 0 still rejects a result buffer of another context
            expectIllegalArgument(p.prefix() + "dot n=0" + w, () -> p.dot(h2, 0, x, 1, y2, 1, r), "context");
        }
    }

    // ------------------------------------------------------------------------------ null, closed

    @ParameterizedTest
    @EnumSource(Prec.class)
    void nullHandleOrBuffer_isNullPointerException(Prec p) {
        try (DeviceBuffer x = p.upload(h, new double[8]); DeviceBuffer y = p.upload(h, new double[8]); DeviceBuffer r = h.allocate(8)) {
            Map<String, Executable> nulls = new LinkedHashMap<>();
            String s = p.prefix();
            nulls.put("handle:" + s + "scal", () -> p.scal(null, 4, 2.0, x, 1));
            nulls.put("x:" + s + "scal", () -> p.scal(h, 4, 2.0, null, 1));
            nulls.put("handle:" + s + "axpy", () -> p.axpy(null, 4, 2.0, x, 1, y, 1));
            nulls.put("x:" + s + "axpy", () -> p.axpy(h, 4, 2.0, null, 1, y, 1));
            nulls.put("y:" + s + "axpy", () -> p.axpy(h, 4, 2.0, x, 1, null, 1));
            nulls.put("handle:" + s + "copy", () -> p.copy(null, 4, x, 1, y, 1));
            nulls.put("x:" + s + "copy", () -> p.copy(h, 4, null, 1, y, 1));
            nulls.put("y:" + s + "copy", () -> p.copy(h, 4, x, 1, null, 1));
            nulls.put("handle:" + s + "swap", () -> p.swap(null, 4, x, 1, y, 1));
            nulls.put("x:" + s + "swap", () -> p.swap(h, 4, null, 1, y, 1));
            nulls.put("y:" + s + "swap", () -> p.swap(h, 4, x, 1, null, 1));
            nulls.put("handle:" + s + "dot", () -> p.dot(null, 4, x, 1, y, 1));
            nulls.put("x:" + s + "dot", () -> p.dot(h, 4, null, 1, y, 1));
            nulls.put("y:" + s + "dot", () -> p.dot(h, 4, x, 1, null, 1));
            nulls.put("handle:" + s + "dot->device", () -> p.dot(null, 4, x, 1, y, 1, r));
            nulls.put("x:" + s + "dot->device", () -> p.dot(h, 4, null, 1, y, 1, r));
            nulls.put("y:" + s + "dot->device", () -> p.dot(h, 4, x, 1, null, 1, r));
            nulls.put("result:" + s + "dot->device", () -> p.dot(h, 4, x, 1, y, 1, null));
            nulls.put("handle:" + s + "nrm2", () -> p.nrm2(null, 4, x, 1));
            nulls.put("x:" + s + "nrm2", () -> p.nrm2(h, 4, null, 1));
            nulls.put("result:" + s + "nrm2->device", () -> p.nrm2(h, 4, x, 1, null));
            nulls.put("handle:" + s + "asum", () -> p.asum(null, 4, x, 1));
            nulls.put("x:" + s + "asum", () -> p.asum(h, 4, null, 1));
            nulls.put("result:" + s + "asum->device", () -> p.asum(h, 4, x, 1, null));
            nulls.put("handle:i" + s + "amax", () -> p.iamax(null, 4, x, 1));
            nulls.put("x:i" + s + "amax", () -> p.iamax(h, 4, null, 1));
            nulls.put("result:i" + s + "amax->device", () -> p.iamax(h, 4, x, 1, null));
            // n <= 0 does nothing, but null arguments are still errors
            nulls.put("x:" + s + "axpy n=0", () -> p.axpy(h, 0, 2.0, null, 1, y, 1));
            nulls.put("handle:" + s + "dot n=0", () -> p.dot(null, 0, x, 1, y, 1));
            for (Map.Entry<String, Executable> e : nulls.entrySet()) {
                String argument = e.getKey().substring(0, e.getKey().indexOf(':'));
                String what = e.getKey().substring(e.getKey().indexOf(':') + 1) + " with a null " + argument;
                NullPointerException npe = assertThrows(NullPointerException.class, e.getValue(), what + " must be a NullPointerException");
                assertTrue(npe.getMessage() != null && npe.getMessage().contains(argument),
                        what + ": the message should name the argument \"" + argument + "\" but is: " + npe.getMessage());
            }
        }
    }

    @Test
    void closedHandleOrBuffer_isIllegalState() {
        Handle other = Handle.create(0);
        DeviceBuffer x = h.upload(new float[8]);
        DeviceBuffer y = h.upload(new float[8]);
        try {
            other.close();
            assertThrows(IllegalStateException.class, () -> Blas.saxpy(other, 8, 1f, x, 1, y, 1), "saxpy on a closed handle");
            assertThrows(IllegalStateException.class, () -> Blas.sdot(other, 8, x, 1, y, 1), "sdot on a closed handle");
            y.close();
            assertThrows(IllegalStateException.class, () -> Blas.saxpy(h, 8, 1f, x, 1, y, 1), "saxpy into a closed buffer");
            assertThrows(IllegalStateException.class, () -> Blas.sdot(h, 8, x, 1, y, 1), "sdot with a closed buffer");
            assertThrows(IllegalStateException.class, () -> Blas.snrm2(h, 8, x, 1, y.slice(0, 4)), "snrm2 into a slice of a closed buffer");
            assertEquals(0f, Blas.snrm2(h, 8, x, 1), "the handle still works");
        } finally {
            x.close();
            y.close();
        }
    }
}
