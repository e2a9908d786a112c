package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * The soak ({@link SoakMain}) for 10 seconds with 4 threads: random valid and invalid calls, every
 * result checked against the CPU, memory and primary-context state back to the baseline. Vectors
 * up to 2^18 elements here (2^20 in {@code run-soak}). Rerun a failure with
 * {@code -Dcuhandle.soakSeed=<seed>} (the seed is in the report).
 */
@GpuTest
class SoakMainTest {
    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void tenSecondsWithFourThreadsPass() throws Exception {
        long seed = Long.getLong("cuhandle.soakSeed", new Random().nextLong());
        SoakMain.Result r = SoakMain.run(new SoakMain.Options(4, 10_000, seed, null, 18));
        System.out.print(r.report());
        assertTrue(r.validOps() > 0 && r.invalidTried() > 0, "the soak ran no operations:\n" + r.report());
        assertTrue(r.pass(), r.report());
    }
}
