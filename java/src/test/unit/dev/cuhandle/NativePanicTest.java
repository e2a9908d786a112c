package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class NativePanicTest {
    @Test
    void aPanicInNativeCodeArrivesAsAJavaExceptionAndTheJvmLivesOn() {
        for (int i = 0; i < 3; i++) {
            RuntimeException e = assertThrows(RuntimeException.class, () -> NativeTestApi.panic("deliberate test panic"));
            assertEquals(RuntimeException.class, e.getClass());
            assertTrue(e.getMessage().contains("panicked") && e.getMessage().contains("deliberate test panic"), e.getMessage());
            assertTrue(e.getMessage().contains("testing.rs"), "the panic hook keeps the location for the exception: " + e.getMessage());
        }
        // Still alive and the native layer still answers.
        assertTrue(NativeApi.stickyCodes().length > 0);
    }

    /** The entry that skips jni's attach guard on success throws errors and panics exactly as every other entry. */
    @Test
    void theEntryWithoutEnvReturnsThrowsAndSurvivesPanicsAsEveryEntry() {
        for (int i = 0; i < 3; i++) {
            assertEquals(42, NativeTestApi.withoutEnv(0));
            IllegalArgumentException bad = assertThrows(IllegalArgumentException.class, () -> NativeTestApi.withoutEnv(1));
            assertTrue(bad.getMessage().contains("deliberate bad argument without env"), bad.getMessage());
            RuntimeException e = assertThrows(RuntimeException.class, () -> NativeTestApi.withoutEnv(2));
            assertEquals(RuntimeException.class, e.getClass());
            assertTrue(e.getMessage().contains("panicked") && e.getMessage().contains("deliberate test panic without env"), e.getMessage());
            assertTrue(e.getMessage().contains("testing.rs"), "the panic hook keeps the location for the exception: " + e.getMessage());
        }
        assertEquals(42, NativeTestApi.withoutEnv(0));
        assertTrue(NativeApi.stickyCodes().length > 0);
    }

    /** Issue 26 (7): an exception message made in Rust (here a panic's) keeps text outside the basic plane. */
    @Test
    void aNativeExceptionMessageKeepsTextOutsideTheBasicPlane() {
        RuntimeException e = assertThrows(RuntimeException.class, () -> NativeTestApi.panic("deliberate 😀 panic, 名前"));
        assertTrue(e.getMessage().contains("deliberate 😀 panic, 名前"), e.getMessage());
    }
}
