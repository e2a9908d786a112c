package dev.cuhandle;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;

/**
 * How {@link Library#compile(String, CompileOptions)} compiles CUDA C++ with NVRTC: the program's name,
 * headers given as strings, {@code -D} defines, fast math, the C++ standard, further NVRTC flags and the
 * target architecture.
 *
 * <p>Instances are immutable: every method that changes an option returns a new {@code CompileOptions}, so
 * one instance may be kept in a constant and shared by any number of threads:
 *
 * <pre>{@code
 * static final CompileOptions OPTIONS = CompileOptions.defaults()
 *         .programName("saxpy.cu")
 *         .define("BLOCK", "256")
 *         .header("util.h", "#define SQUARE(x) ((x) * (x))")
 *         .fastMath(true);
 * }</pre>
 *
 * <p>The flags NVRTC receives are, in this order: the defines, {@code --use_fast_math}, {@code -std=...}, then
 * the extra {@link #flag(String...) flags}, and last the architecture ({@code --gpu-architecture=...}).
 */
public final class CompileOptions {
    // No equals/hashCode: the compile cache hashes the NVRTC inputs themselves, so options that
    // differ only in identity already share cached images.
    /** The program name used when none is set; it names the source in NVRTC's log. */
    public static final String DEFAULT_PROGRAM_NAME = "program.cu";

    private static final CompileOptions DEFAULTS = new CompileOptions(DEFAULT_PROGRAM_NAME, Collections.emptyMap(), Collections.emptyList(),
            false, null, Collections.emptyList(), null, false);

    private final String programName;
    private final Map<String, String> headers;
    private final List<String> defines;
    private final boolean fastMath;
    private final String standard;
    private final List<String> flags;
    private final String architecture;
    private final boolean ptxOnly;

    private CompileOptions(String programName, Map<String, String> headers, List<String> defines, boolean fastMath, String standard,
            List<String> flags, String architecture, boolean ptxOnly) {
        this.programName = programName;
        this.headers = headers;
        this.defines = defines;
        this.fastMath = fastMath;
        this.standard = standard;
        this.flags = flags;
        this.architecture = architecture;
        this.ptxOnly = ptxOnly;
    }

    /**
     * No headers, defines or flags; program name {@value #DEFAULT_PROGRAM_NAME}; the architecture of the
     * device the code will run on.
     *
     * @return the default options
     */
    public static CompileOptions defaults() {
        return DEFAULTS;
    }

    /**
     * These options with another program name. NVRTC's log names the source by it ({@code saxpy.cu(12): error:
     * ...}).
     *
     * @param name the name, e.g. {@code "saxpy.cu"}
     * @return new options
     * @throws IllegalArgumentException if the name is empty or contains a control character (NUL, newline, tab
     *     ...) or a line separator: it is logged, so it must not be able to start a line of its own
     */
    public CompileOptions programName(String name) {
        Objects.requireNonNull(name, "name");
        requireText(name, "the program name");
        return new CompileOptions(name, headers, defines, fastMath, standard, flags, architecture, ptxOnly);
    }

    /**
     * These options with one more header, found by {@code #include "includeName"} in the source (and in other
     * headers). A header of the same name is replaced.
     *
     * @param includeName the name the source includes, e.g. {@code "util.h"}
     * @param source the header's text
     * @return new options
     * @throws IllegalArgumentException if the name is empty or contains a control character or line separator,
     *     or the source contains a NUL character
     */
    public CompileOptions header(String includeName, String source) {
        Objects.requireNonNull(includeName, "includeName");
        Objects.requireNonNull(source, "source");
        requireText(includeName, "the header name");
        if (source.indexOf('\0') >= 0) {
            throw new IllegalArgumentException("header '" + includeName + "' contains a NUL character");
        }
        Map<String, String> more = new LinkedHashMap<>(headers);
        more.put(includeName, source);
        return new CompileOptions(programName, Collections.unmodifiableMap(more), defines, fastMath, standard, flags, architecture, ptxOnly);
    }

    /**
     * These options with {@code -Dname} (the macro is defined as {@code 1}).
     *
     * @param name the macro's name, e.g. {@code "USE_DOUBLE"}
     * @return new options
     * @throws IllegalArgumentException if the name is empty or contains {@code '='}, whitespace or a control
     *     character
     */
    public CompileOptions define(String name) {
        Objects.requireNonNull(name, "name");
        checkMacroName(name);
        return withDefine("-D" + name);
    }

    /**
     * These options with {@code -Dname=value}.
     *
     * @param name the macro's name, e.g. {@code "BLOCK"}
     * @param value its replacement text, e.g. {@code "256"} (passed to NVRTC as one argument: no shell quoting
     *     is needed)
     * @return new options
     * @throws IllegalArgumentException if the name is empty or contains {@code '='}, whitespace or a control
     *     character, or the value contains a control character or line separator
     */
    public CompileOptions define(String name, String value) {
        Objects.requireNonNull(name, "name");
        Objects.requireNonNull(value, "value");
        checkMacroName(name);
        requireNoControlCharacters(value, "the value of macro " + name);
        return withDefine("-D" + name + "=" + value);
    }

    private CompileOptions withDefine(String option) {
        List<String> more = new ArrayList<>(defines);
        more.add(option);
        return new CompileOptions(programName, headers, Collections.unmodifiableList(more), fastMath, standard, flags, architecture, ptxOnly);
    }

    /**
     * These options with or without {@code --use_fast_math} (fast, less precise intrinsics for division,
     * square roots and transcendental functions; denormals flushed to zero).
     *
     * @param enabled whether to pass {@code --use_fast_math}
     * @return new options
     */
    public CompileOptions fastMath(boolean enabled) {
        return new CompileOptions(programName, headers, defines, enabled, standard, flags, architecture, ptxOnly);
    }

    /**
     * These options with a C++ dialect ({@code -std=standard}); without one NVRTC uses its default (C++17
     * for NVRTC 11 and 12).
     *
     * @param standard e.g. {@code "c++17"} or {@code "c++20"}
     * @return new options
     * @throws IllegalArgumentException if {@code standard} is empty or contains whitespace or a control character
     */
    public CompileOptions standard(String standard) {
        Objects.requireNonNull(standard, "standard");
        requireText(standard, "the C++ standard");
        if (standard.chars().anyMatch(Character::isWhitespace)) {
            throw new IllegalArgumentException("the C++ standard '" + standard + "' contains whitespace; expected e.g. c++17");
        }
        return new CompileOptions(programName, headers, defines, fastMath, standard, flags, architecture, ptxOnly);
    }

    /**
     * These options with further NVRTC flags, each one argument exactly as NVRTC takes it (e.g.
     * {@code "-lineinfo"}, {@code "--maxrregcount=64"}, {@code "--include-path=/usr/local/cuda/include"}). NVRTC
     * refuses unknown flags: {@link Library#compile} then throws {@link IllegalArgumentException}.
     *
     * @param flags the flags
     * @return new options
     * @throws IllegalArgumentException if a flag is empty, contains a control character or line separator, or
     *     selects the architecture
     *     ({@code -arch}, {@code --gpu-architecture}: use {@link #architecture(String)})
     */
    public CompileOptions flag(String... flags) {
        Objects.requireNonNull(flags, "flags");
        List<String> more = new ArrayList<>(this.flags);
        for (String f : flags) {
            Objects.requireNonNull(f, "flag");
            requireText(f, "a flag");
            if (f.startsWith("-arch") || f.startsWith("--gpu-architecture")) {
                throw new IllegalArgumentException("flag '" + f + "' selects the architecture; use CompileOptions.architecture(\"sm_XY\") instead,"
                        + " or leave it out to compile for the device");
            }
            more.add(f);
        }
        return new CompileOptions(programName, headers, defines, fastMath, standard, Collections.unmodifiableList(more), architecture, ptxOnly);
    }

    /**
     * These options with a fixed architecture instead of the device's: {@code "sm_XY"} compiles machine code for
     * compute capability X.Y (it runs only on X.Y and later minor versions of X), {@code "compute_XY"} compiles
     * PTX that the driver JIT-compiles for any device of compute capability X.Y or newer. The NVRTC in use must
     * support it (NVRTC 11.8: up to 90). {@code null} restores the default.
     *
     * @param architecture e.g. {@code "sm_90"}, {@code "compute_80"} or {@code "sm_90a"}; or {@code null}
     * @return new options
     * @throws IllegalArgumentException if the name is not of the form {@code sm_XY} or {@code compute_XY}
     */
    public CompileOptions architecture(String architecture) {
        if (architecture != null && !architecture.matches("(sm|compute)_[0-9]{2,3}[af]?")) {
            throw new IllegalArgumentException("architecture '" + architecture + "' is not of the form sm_XY or compute_XY"
                    + " (e.g. sm_90 for machine code for compute capability 9.0, compute_90 for PTX)");
        }
        return new CompileOptions(programName, headers, defines, fastMath, standard, flags, architecture, ptxOnly);
    }

    /**
     * These options compiling PTX for the device's architecture ({@code compute_XY}) even where NVRTC could
     * compile machine code for it: the driver JIT-compiles the PTX when the library is loaded (once per process
     * and device; the driver may keep the result in its JIT cache). Useful for a newer driver's JIT, or to
     * inspect the PTX. Without effect when an {@link #architecture(String) architecture} is set: it says what
     * to produce.
     *
     * @param enabled whether to produce PTX for the device
     * @return new options
     */
    public CompileOptions ptxOnly(boolean enabled) {
        return new CompileOptions(programName, headers, defines, fastMath, standard, flags, architecture, enabled);
    }

    /**
     * The program name.
     *
     * @return the name NVRTC's log uses for the source
     */
    public String programName() {
        return programName;
    }

    /**
     * The headers, by include name, in the order they were added.
     *
     * @return an unmodifiable map
     */
    public Map<String, String> headers() {
        return headers;
    }

    /**
     * The architecture set with {@link #architecture(String)}.
     *
     * @return e.g. {@code "sm_90"}, or {@code null} for the device's
     */
    public String architecture() {
        return architecture;
    }

    /**
     * Whether PTX is produced for the device even where machine code could be ({@link #ptxOnly(boolean)}).
     *
     * @return {@code true} for PTX
     */
    public boolean ptxOnly() {
        return ptxOnly;
    }

    /**
     * The flags NVRTC receives, without the architecture (which comes last): defines, {@code --use_fast_math},
     * {@code -std=...}, then the extra flags.
     *
     * @return a new, modifiable list
     */
    public List<String> nvrtcFlags() {
        List<String> all = new ArrayList<>(defines);
        if (fastMath) {
            all.add("--use_fast_math");
        }
        if (standard != null) {
            all.add("-std=" + standard);
        }
        all.addAll(flags);
        return all;
    }

    /**
     * Names, flags and define values reach log records and exception messages (the program name heads NVRTC's log,
     * {@link #toString()} lists the rest), so none may hold a control character or a line separator: a name
     * with {@code "\nSEVERE: ..."} would forge a log record of its own.
     */
    private static void requireText(String s, String what) {
        if (s.isEmpty()) {
            throw new IllegalArgumentException(what + " is empty");
        }
        requireNoControlCharacters(s, what);
    }

    private static void requireNoControlCharacters(String s, String what) {
        for (int i = 0; i < s.length(); i++) {
            char c = s.charAt(i);
            if (Character.isISOControl(c) || c == '\u2028' || c == '\u2029') {
                String shown = s.codePoints().mapToObj(cp -> Character.isISOControl(cp) || cp == 0x2028 || cp == 0x2029
                        ? String.format("\\u%04X", cp) : new String(Character.toChars(cp))).collect(java.util.stream.Collectors.joining());
                throw new IllegalArgumentException(what + " '" + shown + "' contains " + (c == 0 ? "a NUL character" : "a control character")
                        + String.format(" (U+%04X at index %d); names, flags and define values must be printable text", (int) c, i));
            }
        }
    }

    private static void checkMacroName(String name) {
        requireText(name, "the macro name");
        if (name.indexOf('=') >= 0 || name.chars().anyMatch(Character::isWhitespace)) {
            throw new IllegalArgumentException("macro name '" + name + "' contains '=' or whitespace; use define(name, value)");
        }
    }

    /**
     * A description for logs, e.g. {@code CompileOptions[program.cu, sm_90, [-DN=4], headers [a.h]]}.
     *
     * @return the program name, architecture, flags and header names
     */
    @Override
    public String toString() {
        return "CompileOptions[" + programName + ", " + (architecture != null ? architecture : ptxOnly ? "device's (PTX)" : "device's") + ", "
                + nvrtcFlags() + ", headers " + headers.keySet() + "]";
    }
}
