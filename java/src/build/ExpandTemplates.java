import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Collectors;
import java.util.stream.Stream;

/**
 * Writes the Java sources of the typed overloads (a method for each of {@code float[]},
 * {@code double[]} ...) from templates in which each family is written once, as the JDK generates
 * its typed buffers from {@code X-Buffer.java.template}. Java has no generics over primitive types,
 * so a public API with one method per primitive array type is either written out again for every
 * type or generated; the build generates it (java/pom.xml, generate-sources phase).
 *
 * <p>A template is a Java source file ending in {@code .java.template}. The lines between
 * {@code //#for type in float double ...} and {@code //#end} are written once per type named, in
 * that order, with these placeholders replaced:
 * <ul>
 * <li>{@code $type$}: the type ({@code float}); {@code $Type$}: capitalised ({@code Float});
 * {@code $TYPE$}: in capitals ({@code FLOAT}), as constants named after the type are;</li>
 * <li>{@code $bytes$}: its size in bytes ({@code 4}); {@code $size$}: the size in words
 * ({@code 4 bytes}, {@code 1 byte});</li>
 * <li>{@code $view$}: a ByteBuffer {@code view} seen as a buffer of the type
 * ({@code view.asFloatBuffer()}; {@code view} itself for {@code byte}); {@code $put$}: the ByteBuffer
 * method that writes one value of the type at an index ({@code putFloat}; {@code put} for {@code byte});</li>
 * <li>{@code $ctype$}: the C type that a kernel parameter of the type has ({@code float}; {@code long long}
 * for {@code long}, {@code char} for {@code byte}, {@code unsigned short} for {@code char});</li>
 * <li>{@code $blas$}: BLAS's prefix of the type, {@code s} for {@code float} and {@code d} for
 * {@code double} ({@code saxpy}); {@code $BLAS$}: capitalised ({@code cublasSaxpy}); for another
 * type either is an error.</li>
 * </ul>
 * Any other {@code $name$} is an error, as is a placeholder outside a loop or a loop that is not
 * closed. Lines outside loops are copied as they are.
 *
 * <p>Usage: {@code java ExpandTemplates.java <template folder> <output folder>}; each template's
 * output goes to the same relative path without {@code .template}, and is rewritten only when its
 * text changes (so that an unchanged build recompiles nothing).
 */
public final class ExpandTemplates {
    private static final String SUFFIX = ".java.template";
    private static final Pattern FOR = Pattern.compile("\\s*//#for type in((?:\\s+\\w+)+)\\s*");
    private static final Pattern END = Pattern.compile("\\s*//#end\\s*");
    private static final Pattern PLACEHOLDER = Pattern.compile("\\$(\\w+)\\$");
    private static final Map<String, Integer> SIZES = Map.of(
            "byte", 1, "short", 2, "char", 2, "int", 4, "long", 8, "float", 4, "double", 8);
    /** The C type of a kernel parameter that takes each Java type's value, of its size wherever CUDA runs ({@code long long}: C's long is 4 bytes on Windows). */
    private static final Map<String, String> C_TYPES = Map.of(
            "byte", "char", "short", "short", "char", "unsigned short", "int", "int", "long", "long long", "float", "float", "double", "double");

    private ExpandTemplates() {}

    public static void main(String[] args) throws IOException {
        if (args.length != 2) {
            throw new IllegalArgumentException("usage: java ExpandTemplates.java <template folder> <output folder>");
        }
        Path templates = Path.of(args[0]);
        Path out = Path.of(args[1]);
        List<Path> files;
        try (Stream<Path> walk = Files.walk(templates)) {
            files = walk.filter(p -> p.toString().endsWith(SUFFIX)).sorted().collect(Collectors.toList());
        }
        for (Path template : files) {
            String relative = templates.relativize(template).toString();
            Path target = out.resolve(relative.substring(0, relative.length() - ".template".length()));
            String text = expand(Files.readAllLines(template, StandardCharsets.UTF_8), relative);
            if (!Files.exists(target) || !Files.readString(target, StandardCharsets.UTF_8).equals(text)) {
                Files.createDirectories(target.getParent());
                Files.writeString(target, text, StandardCharsets.UTF_8);
            }
        }
    }

    /** The Java source of one template ({@code name} is its path, for messages and the header). */
    static String expand(List<String> lines, String name) {
        StringBuilder out = new StringBuilder("// Generated from java/src/main/templates/" + name
                + " by java/src/build/ExpandTemplates.java: edit the template, not this file.\n");
        List<String> loop = null;
        List<String> types = null;
        for (int i = 0; i < lines.size(); i++) {
            String line = lines.get(i);
            Matcher start = FOR.matcher(line);
            if (start.matches()) {
                if (loop != null) {
                    throw new IllegalArgumentException(name + ":" + (i + 1) + ": //#for inside a //#for");
                }
                types = Arrays.asList(start.group(1).trim().split("\\s+"));
                for (String type : types) {
                    if (!SIZES.containsKey(type)) {
                        throw new IllegalArgumentException(name + ":" + (i + 1) + ": '" + type + "' is not a primitive type of " + SIZES.keySet());
                    }
                }
                loop = new ArrayList<>();
            } else if (END.matcher(line).matches()) {
                if (loop == null) {
                    throw new IllegalArgumentException(name + ":" + (i + 1) + ": //#end without //#for");
                }
                for (String type : types) {
                    for (String body : loop) {
                        out.append(substitute(body, type, name)).append('\n');
                    }
                }
                loop = null;
            } else if (loop != null) {
                loop.add(line);
            } else {
                if (PLACEHOLDER.matcher(line).find()) {
                    throw new IllegalArgumentException(name + ":" + (i + 1) + ": a placeholder outside //#for: " + line.trim());
                }
                out.append(line).append('\n');
            }
        }
        if (loop != null) {
            throw new IllegalArgumentException(name + ": a //#for is not closed by //#end");
        }
        return out.toString();
    }

    private static String substitute(String line, String type, String name) {
        int bytes = SIZES.get(type);
        String capitalised = Character.toUpperCase(type.charAt(0)) + type.substring(1);
        Matcher m = PLACEHOLDER.matcher(line);
        StringBuilder out = new StringBuilder();
        while (m.find()) {
            String value;
            switch (m.group(1)) {
                case "type": value = type; break;
                case "Type": value = capitalised; break;
                case "TYPE": value = type.toUpperCase(java.util.Locale.ROOT); break;
                case "bytes": value = Integer.toString(bytes); break;
                case "size": value = bytes == 1 ? "1 byte" : bytes + " bytes"; break;
                case "view": value = type.equals("byte") ? "view" : "view.as" + capitalised + "Buffer()"; break;
                case "put": value = type.equals("byte") ? "put" : "put" + capitalised; break;
                case "ctype": value = C_TYPES.get(type); break;
                case "blas": value = blasPrefix(type, name, line); break;
                case "BLAS": value = blasPrefix(type, name, line).toUpperCase(java.util.Locale.ROOT); break;
                default: throw new IllegalArgumentException(name + ": unknown placeholder " + m.group() + " in: " + line.trim());
            }
            m.appendReplacement(out, Matcher.quoteReplacement(value));
        }
        m.appendTail(out);
        return out.toString();
    }

    /** BLAS's one-letter prefix of {@code type}: s for float, d for double. */
    private static String blasPrefix(String type, String name, String line) {
        switch (type) {
            case "float": return "s";
            case "double": return "d";
            default: throw new IllegalArgumentException(name + ": $blas$ has no value for " + type + " (only float and double) in: " + line.trim());
        }
    }
}
