package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.stream.Collectors;
import org.junit.jupiter.api.Test;

/**
 * The README's opening example is the code of tests/java-consumer's ReadmeExample (compiled, and
 * run on a GPU, by that module's build), line for line: a README edit that breaks it fails here.
 */
class ReadmeSnippetTest {
    @Test
    void theOpeningExampleIsTheCompiledReadmeExample() throws Exception {
        Path root = Path.of(System.getProperty("user.dir")).getParent(); // surefire runs in java/
        org.junit.jupiter.api.Assumptions.assumeTrue(Files.exists(root.resolve("README.md")), "runs in the source tree (not in the GPU bundle)");
        String readme = Files.readString(root.resolve("README.md"));
        int start = readme.indexOf("```java\n") + "```java\n".length();
        String snippet = readme.substring(start, readme.indexOf("```", start)).strip();
        String source = Files.readString(root.resolve("tests/java-consumer/src/main/java/dev/cuhandle/example/ReadmeExample.java"));
        String between = source.substring(source.indexOf("// README begin\n") + "// README begin\n".length(), source.indexOf("        // README end"));
        String code = Arrays.stream(between.split("\n")).map(l -> l.startsWith("        ") ? l.substring(8) : l).collect(Collectors.joining("\n")).strip();
        assertTrue(code.contains("Library.loadResource"), code);
        assertEquals(code, snippet, "README.md's first java block differs from ReadmeExample.java between the markers");
    }
}
