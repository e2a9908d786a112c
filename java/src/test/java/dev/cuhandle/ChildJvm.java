package dev.cuhandle;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;

/** Runs a main class in a fresh JVM with this test's class path; for process-wide states. */
public final class ChildJvm {
    public final int exitCode;
    public final String output;

    private ChildJvm(int exitCode, String output) {
        this.exitCode = exitCode;
        this.output = output;
    }

    public static ChildJvm run(Path workingDirectory, Class<?> mainClass, String... jvmOptions) throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(Arrays.asList(jvmOptions));
        String libraryPath = System.getProperty(NativeLoader.PATH_PROPERTY);
        if (libraryPath != null && Arrays.stream(jvmOptions).noneMatch(o -> o.startsWith("-D" + NativeLoader.PATH_PROPERTY))) {
            command.add("-D" + NativeLoader.PATH_PROPERTY + "=" + libraryPath);
        }
        command.add("-cp");
        command.add(classPath());
        command.add(mainClass.getName());
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        if (workingDirectory != null) {
            pb.directory(workingDirectory.toFile());
        }
        Process p = pb.start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("child JVM did not finish in 120 s: " + command);
        }
        return new ChildJvm(p.exitValue(), new String(out, StandardCharsets.UTF_8));
    }

    /**
     * This JVM's class path plus where cuhandle's and the tests' classes came from: under JUnit's
     * console launcher (the GPU bundle) java.class.path holds only the launcher.
     */
    static String classPath() {
        java.util.LinkedHashSet<String> entries = new java.util.LinkedHashSet<>();
        for (Class<?> c : new Class<?>[] {Cuda.class, ChildJvm.class}) {
            try {
                entries.add(Paths.get(c.getProtectionDomain().getCodeSource().getLocation().toURI()).toString());
            } catch (java.net.URISyntaxException | NullPointerException e) {
                // fall back to java.class.path alone
            }
        }
        entries.addAll(Arrays.asList(System.getProperty("java.class.path").split(java.io.File.pathSeparator)));
        return String.join(java.io.File.pathSeparator, entries);
    }

    /** The last non-empty line of the output. */
    public String lastLine() {
        String[] lines = output.strip().split("\\R");
        return lines[lines.length - 1];
    }
}
