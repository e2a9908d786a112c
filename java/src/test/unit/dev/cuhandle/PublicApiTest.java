package dev.cuhandle;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;
import java.lang.reflect.Method;
import java.lang.reflect.Modifier;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Enumeration;
import java.util.List;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Collectors;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * The public classes inherit part of their API from package-private classes ({@link NativeResource}, the
 * generated typed overloads of {@link DeviceBuffer} and {@link Handle}). Java code compiled against them
 * calls those methods through the public class, but reflection and method handles from other packages
 * reach a method only through a public class that declares it: javac writes such a declaration (a bridge)
 * into the public class for every public method it inherits from a package-private one, except a
 * {@code final} one. This test keeps that so: every public method of a public class is declared by a public
 * class and found by {@link MethodHandles#publicLookup()}.
 */
class PublicApiTest {
    @Test
    void everyPublicMethodIsReachableFromOtherPackages() throws Exception {
        List<Class<?>> classes = publicClasses();
        assertTrue(classes.size() >= 20, "found only " + classes + " on the class path");
        List<String> unreachable = new ArrayList<>();
        int checked = 0;
        for (Class<?> type : classes) {
            for (Method m : type.getMethods()) {
                if (!m.getDeclaringClass().getPackageName().equals("dev.cuhandle")) {
                    continue; // Object's, Enum's, Throwable's
                }
                checked++;
                if (!Modifier.isPublic(m.getDeclaringClass().getModifiers())) {
                    unreachable.add(type.getSimpleName() + "." + m.getName() + " (declared by " + m.getDeclaringClass().getSimpleName() + ")");
                    continue;
                }
                MethodType signature = MethodType.methodType(m.getReturnType(), m.getParameterTypes());
                try {
                    if (Modifier.isStatic(m.getModifiers())) {
                        MethodHandles.publicLookup().findStatic(type, m.getName(), signature);
                    } else {
                        MethodHandles.publicLookup().findVirtual(type, m.getName(), signature);
                    }
                } catch (IllegalAccessException e) {
                    unreachable.add(type.getSimpleName() + "." + m.getName() + " (" + e.getMessage() + ")");
                }
            }
        }
        assertTrue(checked > 300, "only " + checked + " public methods checked");
        assertEquals(List.of(), unreachable, "public methods that other packages cannot reach by reflection or method handles");
    }

    /** The public top-level and nested classes of dev.cuhandle in the folder or JAR that holds {@link Handle}. */
    private static List<Class<?>> publicClasses() throws Exception {
        Path where = Path.of(Handle.class.getProtectionDomain().getCodeSource().getLocation().toURI());
        List<String> names = new ArrayList<>();
        if (Files.isDirectory(where)) {
            try (Stream<Path> files = Files.list(where.resolve("dev/cuhandle"))) {
                names = files.map(p -> p.getFileName().toString()).filter(n -> n.endsWith(".class")).collect(Collectors.toList());
            }
        } else {
            try (JarFile jar = new JarFile(where.toFile())) {
                for (Enumeration<JarEntry> e = jar.entries(); e.hasMoreElements(); ) {
                    String n = e.nextElement().getName();
                    if (n.startsWith("dev/cuhandle/") && n.indexOf('/', 13) < 0 && n.endsWith(".class")) {
                        names.add(n.substring(13));
                    }
                }
            }
        }
        List<Class<?>> classes = new ArrayList<>();
        for (String n : names) {
            Class<?> c = Class.forName("dev.cuhandle." + n.substring(0, n.length() - 6), false, PublicApiTest.class.getClassLoader());
            if (Modifier.isPublic(c.getModifiers()) && (c.getEnclosingClass() == null || Modifier.isPublic(c.getEnclosingClass().getModifiers()))) {
                classes.add(c);
            }
        }
        return classes;
    }
}
