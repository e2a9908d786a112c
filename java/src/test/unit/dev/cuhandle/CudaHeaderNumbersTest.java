package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.ToIntFunction;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * The driver's numbers that the public enumerations carry, checked against the CUDA toolkit's own {@code cuda.h}
 * (which the README's test command installs): {@link KernelAttribute#NON_PORTABLE_CLUSTER_SIZE_ALLOWED} once
 * carried 15, the next enumerator's number, so setting it changed the cluster scheduling policy instead and
 * clusters above 8 blocks stayed refused on the H200. The stand-in driver shares such numbers, so only the header
 * can catch them.
 */
class CudaHeaderNumbersTest {
    private static final Pattern ENUMERATOR = Pattern.compile("^\\s*(CU[A-Z0-9_]*)\\s*=\\s*(0x[0-9a-fA-F]+|\\d+)\\s*,?", Pattern.MULTILINE);
    private static Map<String, Long> header;
    private static Path headerPath;

    @BeforeAll
    static void readHeader() throws IOException {
        List<Path> candidates = new ArrayList<>();
        String home = System.getenv("CUDA_HOME");
        if (home != null && !home.isEmpty()) {
            candidates.add(Paths.get(home, "include", "cuda.h"));
        }
        candidates.add(Paths.get("/usr/local/cuda/include/cuda.h"));
        candidates.add(Paths.get("/usr/include/cuda.h"));
        for (Path p : candidates) {
            if (Files.isRegularFile(p)) {
                headerPath = p;
                header = new HashMap<>();
                Matcher m = ENUMERATOR.matcher(Files.readString(p));
                while (m.find()) {
                    String number = m.group(2);
                    header.putIfAbsent(m.group(1), number.startsWith("0x") ? Long.parseLong(number.substring(2), 16) : Long.parseLong(number));
                }
                return;
            }
        }
    }

    private static void assumeHeader() {
        assumeTrue(header != null, "no cuda.h of a CUDA toolkit ($CUDA_HOME/include, /usr/local/cuda/include, /usr/include): "
                + "scripts/test.sh installs the toolkit; without it these numbers go unchecked");
        assertTrue(header.size() > 500, "read the enumerators of " + headerPath + ": only " + header.size());
    }

    /** Each constant's number is that of {@code prefix + its name} in cuda.h. */
    private static <E extends Enum<E>> void assertNumbers(String prefix, E[] constants, ToIntFunction<E> number) {
        assumeHeader();
        for (E constant : constants) {
            String name = prefix + constant.name();
            assertTrue(header.containsKey(name), name + " is not in " + headerPath);
            assertEquals(header.get(name).longValue(), number.applyAsInt(constant), name + " in " + headerPath);
        }
    }

    @Test
    void kernelAttributesCarryCudaHeaderNumbers() {
        assertNumbers("CU_FUNC_ATTRIBUTE_", KernelAttribute.values(), KernelAttribute::value);
    }

    @Test
    void deviceAttributesCarryCudaHeaderNumbers() {
        assertNumbers("CU_DEVICE_ATTRIBUTE_", DeviceAttribute.values(), DeviceAttribute::value);
    }

    /** Codes newer than the installed header (CUDA 11.8 on Debian 12) cannot be checked here; the rest must match. */
    @Test
    void errorCodesCarryCudaHeaderNumbers() {
        assumeHeader();
        int checked = 0;
        for (CudaError e : CudaError.values()) {
            Long number = header.get(e.cName());
            if (number != null) {
                assertEquals(number.longValue(), e.code(), e.cName() + " in " + headerPath);
                checked++;
            }
        }
        assertTrue(checked >= 80, "most CUresult values are in any CUDA 11.8+ cuda.h; found " + checked + " in " + headerPath);
    }
}
