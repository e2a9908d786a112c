package dev.cuhandle;

import java.io.File;
import java.io.IOException;
import java.net.URISyntaxException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.security.CodeSource;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/** Runs a main class in a fresh JVM with this test's class path; for process-wide states. */
public final class ChildJvm {
    /** cuhandle's properties a child inherits unless its options set them (as absolute paths: the child runs elsewhere). */
    private static final String[] INHERITED = {NativeLoader.PATH_PROPERTY, Native.DRIVER_PROPERTY, NativeLoader.TMPDIR_PROPERTY, NativeLibraryCache.DIR_PROPERTY};
    /** The option that turns the per-user cache of libcuhandle off: for tests of the extracted copy. */
    public static final String NO_LIBRARY_CACHE = "-D" + NativeLibraryCache.MODE_PROPERTY + "=off";

    public final List<String> command;
    public final int exitCode;
    public final String output;
    /** hs_err_pid*.log and core files the child left in its working directory. */
    public final List<String> crashFiles;

    private ChildJvm(List<String> command, int exitCode, String output, List<String> crashFiles) {
        this.command = command;
        this.exitCode = exitCode;
        this.output = output;
        this.crashFiles = crashFiles;
    }

    public static ChildJvm run(Path workingDirectory, Class<?> mainClass, String... jvmOptions) throws IOException, InterruptedException {
        return run(workingDirectory, mainClass, Arrays.asList(jvmOptions));
    }

    public static ChildJvm run(Path workingDirectory, Class<?> mainClass, List<String> jvmOptions, String... args)
            throws IOException, InterruptedException {
        return run(workingDirectory, Map.of(), mainClass, jvmOptions, args);
    }

    /** As {@link #run(Path, Class, List, String...)} with {@code environment} added to the child's environment. */
    public static ChildJvm run(Path workingDirectory, Map<String, String> environment, Class<?> mainClass, List<String> jvmOptions, String... args)
            throws IOException, InterruptedException {
        List<String> command = new ArrayList<>();
        command.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        command.addAll(jvmOptions);
        for (String property : INHERITED) {
            String value = System.getProperty(property);
            if (value != null && !value.isEmpty() && jvmOptions.stream().noneMatch(o -> o.startsWith("-D" + property + "="))) {
                command.add("-D" + property + "=" + Paths.get(value).toAbsolutePath());
            }
        }
        command.add("-cp");
        command.add(classPath());
        command.add(mainClass.getName());
        command.addAll(Arrays.asList(args));
        ProcessBuilder pb = new ProcessBuilder(command).redirectErrorStream(true);
        pb.environment().putAll(environment);
        if (workingDirectory != null) {
            pb.directory(workingDirectory.toFile());
        }
        Process p = pb.start();
        byte[] out = p.getInputStream().readAllBytes();
        if (!p.waitFor(120, TimeUnit.SECONDS)) {
            p.destroyForcibly();
            throw new AssertionError("child JVM did not finish in 120 s: " + command);
        }
        return new ChildJvm(command, p.exitValue(), new String(out, StandardCharsets.UTF_8), crashFiles(workingDirectory));
    }

    private static List<String> crashFiles(Path directory) throws IOException {
        if (directory == null) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(directory)) {
            return files.map(f -> f.getFileName().toString())
                    .filter(n -> n.startsWith("hs_err_pid") || n.equals("core") || n.startsWith("core."))
                    .collect(Collectors.toList());
        }
    }

    /**
     * Where the tests' and cuhandle's classes came from, then this JVM's class path: under JUnit's
     * console launcher (the GPU bundle) java.class.path holds only the launcher.
     */
    static String classPath() {
        Set<String> entries = new LinkedHashSet<>();
        // The tests' classes first: they hold the native library built with the test-only entry
        // points (NativeTestApi), which must shadow the shipped one in the main classes or JAR.
        for (Class<?> c : new Class<?>[] {ChildJvm.class, Cuda.class}) {
            CodeSource source = c.getProtectionDomain().getCodeSource();
            if (source != null) {
                addFile(entries, source.getLocation());
            }
        }
        // The console launcher puts --class-path (test libraries such as JCuda) into a URLClassLoader.
        if (ChildJvm.class.getClassLoader() instanceof URLClassLoader) {
            for (URL url : ((URLClassLoader) ChildJvm.class.getClassLoader()).getURLs()) {
                addFile(entries, url);
            }
        }
        for (String entry : System.getProperty("java.class.path", "").split(File.pathSeparator)) {
            if (!entry.isEmpty()) {
                entries.add(Paths.get(entry).toAbsolutePath().toString());
            }
        }
        return String.join(File.pathSeparator, entries);
    }

    private static void addFile(Set<String> entries, URL location) {
        if (location != null && "file".equals(location.getProtocol())) {
            try {
                entries.add(Paths.get(location.toURI()).toAbsolutePath().toString());
            } catch (URISyntaxException e) {
                // java.class.path still applies
            }
        }
    }

    /** The last non-empty line of the output. */
    public String lastLine() {
        String[] lines = output.strip().split("\\R");
        return lines[lines.length - 1];
    }
}
