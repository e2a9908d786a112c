package dev.cuhandle;

import java.lang.ref.WeakReference;
import java.net.URL;
import java.net.URLClassLoader;

/**
 * Child-JVM body of {@link ClassLoaderUnloadTest}: loads cuhandle in a class loader of its own
 * (as an application server does for a deployment), uses it, drops it, and reports whether the
 * loader could be collected and whether a second deployment can load the native library again.
 * Argument: the URL of cuhandle's classes (folder or JAR).
 */
public final class ClassLoaderUnloadMain {
    private ClassLoaderUnloadMain() {}

    public static void main(String[] args) throws Exception {
        URL classes = new URL(args[0]);
        WeakReference<ClassLoader> first = deployAndUse(classes, "first");
        boolean unloaded = false;
        for (int i = 0; i < 200 && !unloaded; i++) {
            System.gc();
            Thread.sleep(50);
            unloaded = first.get() == null;
        }
        System.out.println("unloaded=" + unloaded);
        deployAndUse(classes, "second");
    }

    /** Loads cuhandle in a fresh loader, initialises it (native library, logging bridge) and forgets the loader. */
    private static WeakReference<ClassLoader> deployAndUse(URL classes, String name) throws Exception {
        URLClassLoader loader = new URLClassLoader(new URL[] {classes}, ClassLoader.getPlatformClassLoader());
        Class<?> cuda = Class.forName("dev.cuhandle.Cuda", true, loader);
        if (cuda.getClassLoader() != loader) {
            throw new AssertionError("cuhandle came from " + cuda.getClassLoader() + ", not the deployment's own loader");
        }
        String source = (String) cuda.getMethod("nativeLibrarySource").invoke(null);
        Object reason = cuda.getMethod("unavailableReason").invoke(null);
        System.out.println(name + ".source=" + source);
        System.out.println(name + ".reason=" + reason);
        loader.close();
        return new WeakReference<>(loader);
    }
}
