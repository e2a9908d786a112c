package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.condition.EnabledIf;

/**
 * HandleBenchmark's same-rounds driver floor ({@code NativeTestApi.activationDriverCalls}) makes the calls an
 * activation makes and no others: a switch and a switch back only when another context is current, the caller's
 * context current again afterwards, and a context whose id is not the one expected refused before any switch (an
 * IllegalArgumentException here; a handle reports a changed id as CUDA_ERROR_CONTEXT_IS_DESTROYED).
 */
@EnabledIf("dev.cuhandle.StandIn#active")
class ActivationDriverCallsTest {
    @Test
    void switchesOnlyWhenAnotherContextIsCurrentAndRestoresIt() {
        long primary = NativeTestApi.retainPrimary(0);
        long user;
        try {
            user = NativeTestApi.createContext(0); // current from now on
        } catch (RuntimeException e) {
            NativeTestApi.releasePrimary(0);
            throw e;
        }
        try {
            long id = NativeTestApi.contextId(primary);
            assertEquals(2L, NativeTestApi.activationDriverCalls(primary, id), "another context current: two cuCtxSetCurrent");
            assertEquals(user, NativeTestApi.currentContext(), "the caller's context is current again");
            NativeTestApi.setCurrent(primary);
            assertEquals(0L, NativeTestApi.activationDriverCalls(primary, id), "its own context current: no switch");
            assertEquals(primary, NativeTestApi.currentContext());
            NativeTestApi.setCurrent(user);
            IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> NativeTestApi.activationDriverCalls(primary, id + 1));
            assertTrue(e.getMessage().contains("is not the expected " + (id + 1)), e.getMessage());
            assertEquals(user, NativeTestApi.currentContext(), "a refused id switches nothing");
        } finally {
            NativeTestApi.setCurrent(0);
            NativeTestApi.destroyContext(user);
            NativeTestApi.releasePrimary(0);
        }
    }
}
