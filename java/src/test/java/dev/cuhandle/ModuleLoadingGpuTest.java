package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * When a library loaded once with {@code cuLibraryLoadData} reaches each context (docs/handles.md,
 * "When modules reach contexts"). NVIDIA documents two modes, chosen with the environment variable
 * {@code CUDA_MODULE_LOADING} (cuLibraryLoadData; LAZY is the default on Linux since CUDA 12.2):
 * EAGER loads the library into every existing context at the call and into each later context at its
 * creation; LAZY loads it into a context only when a function of it is needed there, such as at a
 * kernel launch. Each mode runs in a child JVM ({@link ModuleLoadingChild}), which sees the probe
 * module's 256 MiB {@code __device__} array arrive as a drop of the device's free memory; this test
 * checks each drop against what the documentation says and prints the child's lines for the GPU log.
 * A drop of at least three quarters of the array counts as "loaded there", one under a quarter as
 * "not loaded".
 */
@GpuTest
class ModuleLoadingGpuTest {
    private static final double PROBE_MIB = ModuleLoadingChild.PROBE_BYTES / (double) (1L << 20);

    @Test
    void eager_loadsIntoExistingContextsAtTheCall_andIntoANewContextAtItsCreation(@TempDir Path dir) throws Exception {
        Map<String, String> r = runChild(dir, "EAGER");
        assertEquals("EAGER", r.get("mode"), "cuModuleGetLoadingMode under CUDA_MODULE_LOADING=EAGER");
        assertLoaded(r, "load_mib", 2, "loading with the primary and one user context in existence");
        assertLoaded(r, "creation_extra_mib", 1, "creating a context after the load, beyond what a context costs by itself");
        for (String key : List.of("first_launch_primary_mib", "first_launch_user_existing_at_load_mib", "first_launch_user_created_after_load_mib")) {
            assertNotLoaded(r, key, "the first launch: the module is there already");
        }
        assertNotLoaded(r, "second_launch_primary_mib", "a second launch");
    }

    @Test
    void lazy_loadsIntoAContextOnlyWhenAFunctionIsFirstNeededThere(@TempDir Path dir) throws Exception {
        Map<String, String> r = runChild(dir, "LAZY");
        assertEquals("LAZY", r.get("mode"), "cuModuleGetLoadingMode under CUDA_MODULE_LOADING=LAZY");
        assertNotLoaded(r, "load_mib", "loading with the primary and one user context in existence");
        assertNotLoaded(r, "creation_extra_mib", "creating a context after the load, beyond what a context costs by itself");
        for (String key : List.of("first_launch_primary_mib", "first_launch_user_existing_at_load_mib", "first_launch_user_created_after_load_mib")) {
            assertLoaded(r, key, 1, "the first launch of the probe's kernel in that context");
        }
        assertNotLoaded(r, "second_launch_primary_mib", "a second launch");
    }

    /** Runs the child with CUDA_MODULE_LOADING={@code mode}; returns its key=value lines plus creation_extra_mib. */
    private static Map<String, String> runChild(Path dir, String mode) throws Exception {
        ChildJvm child = ChildJvm.run(dir, Map.of("CUDA_MODULE_LOADING", mode), ModuleLoadingChild.class, List.of());
        String context = "\ncommand: " + String.join(" ", child.command) + "\n--- child output ---\n" + child.output + "--- end ---";
        assertTrue(child.crashFiles.isEmpty(), "the child left crash files " + child.crashFiles + context);
        assertEquals(0, child.exitCode, "exit status of the child under CUDA_MODULE_LOADING=" + mode + context);
        assertTrue(child.output.contains(ModuleLoadingChild.DONE), "the child did not finish" + context);
        Map<String, String> r = new HashMap<>();
        for (String line : child.output.split("\\R")) {
            if (line.startsWith(ModuleLoadingChild.PREFIX) && line.contains("=")) {
                System.out.println(line); // for the GPU log
                String pair = line.substring(ModuleLoadingChild.PREFIX.length());
                r.put(pair.substring(0, pair.indexOf('=')), pair.substring(pair.indexOf('=') + 1));
            }
        }
        r.put("context", context);
        double extra = mib(r, "context_created_after_load_mib") - mib(r, "context_created_before_load_mib");
        r.put("creation_extra_mib", String.valueOf(extra));
        System.out.println(ModuleLoadingChild.PREFIX + "mode=" + r.get("mode") + " creation_extra_mib=" + String.format(java.util.Locale.ROOT, "%.1f", extra));
        return r;
    }

    private static double mib(Map<String, String> r, String key) {
        String value = r.get(key);
        if (value == null) {
            throw new AssertionError("the child printed no " + key + r.get("context"));
        }
        return Double.parseDouble(value);
    }

    /** The drop shows the probe arriving in {@code contexts} contexts. */
    private static void assertLoaded(Map<String, String> r, String key, int contexts, String what) {
        double drop = mib(r, key);
        assertTrue(drop >= 0.75 * contexts * PROBE_MIB && drop < (contexts + 0.5) * PROBE_MIB,
                what + " (" + key + "): free memory dropped by " + drop + " MiB; the probe loaded into " + contexts + " context(s) takes "
                        + contexts * PROBE_MIB + " MiB" + r.get("context"));
    }

    /** The drop is too small for the probe to have arrived anywhere. */
    private static void assertNotLoaded(Map<String, String> r, String key, String what) {
        double drop = mib(r, key);
        assertTrue(drop < 0.25 * PROBE_MIB, what + " (" + key + "): free memory dropped by " + drop + " MiB, more than a quarter of the probe's "
                + PROBE_MIB + " MiB array" + r.get("context"));
    }
}
