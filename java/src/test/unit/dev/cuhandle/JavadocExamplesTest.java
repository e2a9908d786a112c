package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The Javadoc overview (java/src/main/javadoc/overview.html) says every public class has an example in its
 * description: each public top-level type's class comment holds a {@code <pre>{@code ...}</pre>} block.
 */
class JavadocExamplesTest {
    private static final Pattern PUBLIC_TYPE = Pattern.compile("(?s)/\\*\\*(.*?)\\*/\\s*(?:@\\w+\\s*)*public (?:final |abstract )?(?:class|interface|enum|@interface) ");

    @Test
    void everyPublicClassHasAnExample() throws IOException {
        Path sources = Path.of(System.getProperty("user.dir")).resolve("src/main/java/dev/cuhandle"); // surefire runs in java/
        Path overviewFile = Path.of(System.getProperty("user.dir")).resolve("src/main/javadoc/overview.html");
        assumeTrue(Files.exists(overviewFile), "reads the sources: runs in the source tree (not in the GPU bundle)");
        String overview = Files.readString(overviewFile);
        assertTrue(overview.contains("Every class below has an example in its description."), "the claim this test checks");
        List<String> publicTypes = new ArrayList<>();
        List<String> without = new ArrayList<>();
        try (Stream<Path> files = Files.list(sources)) {
            for (Path file : (Iterable<Path>) files.sorted()::iterator) {
                Matcher m = PUBLIC_TYPE.matcher(Files.readString(file));
                if (file.toString().endsWith(".java") && m.find()) {
                    publicTypes.add(file.getFileName().toString());
                    if (!m.group(1).contains("<pre>{@code")) {
                        without.add(file.getFileName().toString());
                    }
                }
            }
        }
        assertTrue(publicTypes.size() >= 20, "found the public types: " + publicTypes);
        assertEquals(List.of(), without, "public types whose class comment has no <pre>{@code ...}</pre> example");
    }
}
