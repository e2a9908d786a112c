package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Issue 9 (8): the logging bridge held cuhandle's logging class by a global JNI reference, which
 * pinned the class loader that loaded cuhandle for the life of the JVM: an application server could
 * never unload a deployment, and a redeployment could not load the native library again ("already
 * loaded in another classloader"). Needs no GPU.
 */
class ClassLoaderUnloadTest {
    @TempDir
    Path tmp;

    @Test
    void aDeploymentsClassLoaderIsCollectedAndTheNextDeploymentLoadsTheLibraryAgain() throws Exception {
        String classes = Cuda.class.getProtectionDomain().getCodeSource().getLocation().toString();
        ChildJvm child = ChildJvm.run(tmp, ClassLoaderUnloadMain.class, List.of(), classes);
        assertEquals(0, child.exitCode, child.output);
        assertTrue(child.output.contains("first.source="), child.output);
        assertFalse(child.output.contains("first.source=not loaded"), "the first deployment loads the native library: " + child.output);
        assertTrue(child.output.contains("unloaded=true"), "the first deployment's class loader stayed reachable: " + child.output);
        assertFalse(child.output.contains("second.source=not loaded"), "the second deployment loads the native library again: " + child.output);
    }
}
