package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.TimeUnit;
import java.util.function.UnaryOperator;
import java.util.stream.Collectors;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The checked seam between the Java classes and libcuhandle (rust/src/jni/natives.rs): the library
 * registers every native method from one table when it loads, and a method renamed or changed on
 * one side only fails the load with a message naming it. Needs no GPU: loading the library loads
 * no driver.
 */
class NativeTableTest {
    @TempDir
    Path tmp;

    /** The JNI type descriptor of a Java type ({@code J}, {@code [B}, {@code Ljava/lang/String;}). */
    private static String descriptor(Class<?> type) {
        if (type.isArray()) {
            return "[" + descriptor(type.getComponentType());
        }
        if (!type.isPrimitive()) {
            return "L" + type.getName().replace('.', '/') + ";";
        }
        return String.valueOf("ZBCSIJFDV".charAt(Arrays.asList(boolean.class, byte.class, char.class, short.class, int.class, long.class, float.class,
                double.class, void.class).indexOf(type)));
    }

    /** "name signature" of every native method {@code type} declares. */
    private static Set<String> nativeMethods(Class<?> type) {
        Set<String> methods = new TreeSet<>();
        for (Method m : type.getDeclaredMethods()) {
            if (Modifier.isNative(m.getModifiers())) {
                String parameters = Arrays.stream(m.getParameterTypes()).map(NativeTableTest::descriptor).collect(Collectors.joining());
                methods.add(m.getName() + " (" + parameters + ")" + descriptor(m.getReturnType()));
            }
        }
        return methods;
    }

    /** The other direction of the load's check: every native method of the Java classes has an entry (else its first call would fail). */
    @Test
    void everyNativeMethodOfEveryClassIsInTheTable() {
        for (Class<?> type : List.of(NativeApi.class, NativeTestApi.class, GreenContextTestApi.class, DriverProbeTestApi.class)) {
            Set<String> registered = new TreeSet<>(Arrays.asList(NativeTestApi.registeredMethods(type.getName().replace('.', '/'))));
            assertEquals(nativeMethods(type), registered, type.getName());
        }
        assertTrue(nativeMethods(NativeApi.class).size() > 80, "NativeApi's methods are read");
    }

    @Test
    void anEntryUnderAnotherNameOrSignatureIsRefusedNamingTheMethod() {
        String renamed = NativeTestApi.registerNoopAs("noopRenamed", "(J)J");
        assertNotNull(renamed, "a method the class does not declare is refused");
        assertTrue(renamed.contains("static native long dev.cuhandle.NativeTestApi.noopRenamed(long) (JNI signature (J)J) is not declared there"), renamed);
        String changed = NativeTestApi.registerNoopAs("noop", "(I)I");
        assertNotNull(changed);
        assertTrue(changed.contains("static native int dev.cuhandle.NativeTestApi.noop(int)") && changed.contains("is not declared there"), changed);
        String instance = NativeTestApi.registerNoopAs("toString", "()Ljava/lang/String;");
        assertNotNull(instance);
        assertTrue(instance.contains("toString() (JNI signature ()Ljava/lang/String;) is declared there as an instance method"), instance);
        assertNull(NativeTestApi.registerNoopAs("noop", "(J)J"), "the table's own entry fits");
        assertEquals(42, NativeTestApi.noop(42), "and stays bound");
    }

    /** A copy of the library: the one on the class path (test build) or -Dcuhandle.library.path. */
    private Path library() throws IOException {
        try (InputStream in = NativeLoader.class.getResourceAsStream(NativeLoader.resourceName())) {
            if (in == null) {
                return Paths.get(System.getProperty(NativeLoader.PATH_PROPERTY));
            }
            Path copy = tmp.resolve("libcuhandle.so");
            if (!Files.exists(copy)) {
                Files.copy(in, copy);
            }
            return copy;
        }
    }

    /** The source of a class {@code dev.cuhandle.NativeApi} declaring NativeApi's native methods, each passed through {@code edit}. */
    private static String nativeApiSource(UnaryOperator<String> edit) {
        StringBuilder source = new StringBuilder("package dev.cuhandle;\nfinal class NativeApi {\n");
        for (Method m : NativeApi.class.getDeclaredMethods()) {
            if (Modifier.isNative(m.getModifiers())) {
                List<String> parameters = new ArrayList<>();
                Class<?>[] types = m.getParameterTypes();
                for (int i = 0; i < types.length; i++) {
                    parameters.add(types[i].getCanonicalName() + " p" + i);
                }
                String declaration = "static native " + m.getReturnType().getCanonicalName() + " " + m.getName() + "(" + String.join(", ", parameters) + ");";
                source.append("    ").append(edit.apply(declaration)).append('\n');
            }
        }
        return source.append("}\n").toString();
    }

    /** Compiles that NativeApi and a main that loads the library, and loads it in a fresh JVM with only them on the class path. */
    private String loadWith(String nativeApiSource) throws Exception {
        Path src = Files.createDirectories(tmp.resolve("src/" + System.nanoTime() + "/dev/cuhandle"));
        Path classes = Files.createDirectories(tmp.resolve("classes/" + System.nanoTime()));
        Files.writeString(src.resolve("NativeApi.java"), nativeApiSource);
        Files.writeString(src.resolve("LoadProbe.java"), "package dev.cuhandle;\npublic final class LoadProbe {\n    public static void main(String[] args) {\n"
                + "        try {\n            System.load(args[0]);\n            System.out.println(\"loaded\");\n"
                + "        } catch (UnsatisfiedLinkError e) {\n            System.out.println(\"refused: \" + e.getMessage());\n        }\n    }\n}\n");
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        assertNotNull(javac, "the tests run on a JDK");
        int rc = javac.run(null, null, null, "-d", classes.toString(), src.resolve("NativeApi.java").toString(), src.resolve("LoadProbe.java").toString());
        assertEquals(0, rc, "the generated classes compile");
        Process p = new ProcessBuilder(Paths.get(System.getProperty("java.home"), "bin", "java").toString(), "-cp", classes.toString(), "dev.cuhandle.LoadProbe",
                library().toString()).redirectErrorStream(true).start();
        String output = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        assertTrue(p.waitFor(60, TimeUnit.SECONDS), "the child JVM ends");
        return output;
    }

    @Test
    void aNativeMethodRenamedOrChangedInJavaFailsTheLibraryLoadNamingIt() throws Exception {
        // The GPU bundle's jlink'ed JRE has no compiler (javax.tools would add ~20 MB to a bundle that
        // must fit one device call); the README's test command runs this on a JDK, CI included.
        assumeTrue(ModuleLayer.boot().findModule("jdk.compiler").isPresent(),
                "needs a JDK's compiler (module jdk.compiler) to build the renamed classes; this JRE has none");
        assertTrue(loadWith(nativeApiSource(d -> d)).contains("loaded"), "the classes as they are load");
        String renamed = loadWith(nativeApiSource(d -> d.replace(" eventRecord(", " eventRecordRenamed(")));
        assertTrue(renamed.contains("refused: libcuhandle's native methods do not match the Java classes: static native void dev.cuhandle.NativeApi.eventRecord(long, long)"
                + " (JNI signature (JJ)V) is not declared there"), renamed);
        String changed = loadWith(nativeApiSource(d -> d.replace(" handleSetStream(long p0, long p1)", " handleSetStream(long p0, int p1)")));
        assertTrue(changed.contains("refused:") && changed.contains("dev.cuhandle.NativeApi.handleSetStream(long, long) (JNI signature (JJ)V) is not declared there"), changed);
        assertTrue(changed.contains("another cuhandle version"), "the message says what to do: " + changed);
    }
}
