package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * {@link HostRegistration}: a direct ByteBuffer page-locked on request ({@code cuMemHostRegister})
 * keeps the zero-staging copy path and carries data both ways exactly; closing unregisters it
 * (the stand-in counts live registrations), a second registration of the same memory is the
 * driver's {@code HOST_MEMORY_ALREADY_REGISTERED}, and heap or empty buffers are refused.
 */
@GpuTest
@StandInCapable
class HostRegistrationGpuTest {
    private static final int BYTES = 3 << 20;

    @Test
    void aRegisteredDirectBufferCopiesBothWaysAndIsUnregisteredOnClose() {
        byte[] data = new byte[BYTES];
        new Random().nextBytes(data);
        ByteBuffer direct = ByteBuffer.allocateDirect(BYTES);
        direct.put(data).clear();
        try (Handle h = Handle.create(0); DeviceBuffer d = h.allocate(BYTES)) {
            int before = StandIn.active() ? StandIn.liveHostRegistrations() : 0;
            try (HostRegistration registration = HostRegistration.register(h, direct)) {
                assertSame(direct, registration.buffer());
                assertFalse(registration.isClosed());
                if (StandIn.active()) {
                    assertEquals(before + 1, StandIn.liveHostRegistrations(), "registered");
                }
                h.copyToDevice(direct, 0, d, BYTES);
                h.synchronize(); // an upload from page-locked memory is asynchronous
                ArrayTransferGpuTest.assertSameBytes(data, ArrayTypes.deviceBytes(h, d, BYTES), "device after an upload from registered memory");

                h.memset(d.slice(0, 1 << 20), 0x3C);
                h.copyToHost(d, direct, 0, BYTES);
                for (int i = 0; i < BYTES; i++) {
                    byte want = i < (1 << 20) ? 0x3C : data[i];
                    if (direct.get(i) != want) {
                        throw new AssertionError("byte " + i + " of the registered buffer after the download: " + direct.get(i) + ", expected " + want);
                    }
                }
                CudaException twice = assertThrows(CudaException.class, () -> HostRegistration.register(h, direct));
                assertEquals(CudaError.HOST_MEMORY_ALREADY_REGISTERED, twice.error(), twice.getMessage());
            }
            if (StandIn.active()) {
                assertEquals(before, StandIn.liveHostRegistrations(), "close unregistered the memory");
            }
            try (HostRegistration again = HostRegistration.register(h, direct)) { // pageable again, so it can be registered anew
                assertTrue(again.toString().contains(BYTES + " bytes"));
            }
        }
    }

    @Test
    void heapEmptyAndNullBuffersAreRefused() {
        try (Handle h = Handle.create(0)) {
            assertThrows(IllegalArgumentException.class, () -> HostRegistration.register(h, ByteBuffer.allocate(16)));
            assertThrows(IllegalArgumentException.class, () -> HostRegistration.register(h, ByteBuffer.allocateDirect(0)));
            assertThrows(NullPointerException.class, () -> HostRegistration.register(h, null));
            assertThrows(NullPointerException.class, () -> HostRegistration.register(null, ByteBuffer.allocateDirect(8)));
        }
    }

    /** Rule C1: registering and unregistering are refused by name during a capture on this thread, and the capture goes on. */
    @Test
    void registeringAndClosingAreRefusedDuringACapture() {
        ByteBuffer direct = ByteBuffer.allocateDirect(4096);
        try (Handle h = Handle.create(0); DeviceBuffer d = h.allocate(64); HostRegistration registration = HostRegistration.register(h, direct)) {
            int before = StandIn.active() ? StandIn.liveHostRegistrations() : 0;
            try (Graph g = h.capture(() -> {
                IllegalStateException register = assertThrows(IllegalStateException.class,
                        () -> HostRegistration.register(h, ByteBuffer.allocateDirect(4096)));
                assertTrue(register.getMessage().contains("HostRegistration.register"), register.getMessage());
                IllegalStateException close = assertThrows(IllegalStateException.class, registration::close);
                assertTrue(close.getMessage().contains("HostRegistration.close"), close.getMessage());
                h.memset(d, 1);
            })) {
                assertEquals(1, g.nodeCount(), "the capture went on after the refusals");
            }
            assertFalse(registration.isClosed());
            if (StandIn.active()) {
                assertEquals(before, StandIn.liveHostRegistrations(), "nothing was registered or unregistered during the capture");
            }
        }
    }

    @Test
    void aClosedHandleCannotRegister() {
        Handle h = Handle.create(0);
        h.close();
        assertThrows(IllegalStateException.class, () -> HostRegistration.register(h, ByteBuffer.allocateDirect(8)));
    }
}
