package dev.cuhandle.spark;

import dev.cuhandle.Cuda;
import dev.cuhandle.StandIn;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;

/** Spark contexts for the tests: loopback only, no UI, cuhandle's plugin on; and the stand-in check. */
public final class TestSpark {
    private TestSpark() {}

    /** Fails unless cuhandle loaded the CPU stand-in driver, which the surefire configuration points it at. */
    public static void requireStandIn() {
        if (!StandIn.active()) {
            throw new IllegalStateException("these tests run on the CPU stand-in driver, but cuhandle loaded " + Cuda.driverPath()
                    + "; run them through Maven (the java module builds java/target/standin/libcuda-standin.so)");
        }
    }

    /** 0, 1, ..., n - 1: the elements of a job of n one-element partitions. */
    public static java.util.List<Integer> numbers(int n) {
        java.util.List<Integer> list = new java.util.ArrayList<>();
        for (int i = 0; i < n; i++) {
            list.add(i);
        }
        return list;
    }

    /** A context for {@code master} with extra configuration given as key, value, key, value ... */
    public static JavaSparkContext start(String master, String... keyValues) {
        if (keyValues.length % 2 != 0) {
            throw new IllegalArgumentException("keys and values must come in pairs");
        }
        SparkConf conf = new SparkConf()
                .setMaster(master)
                .setAppName("cuhandle-spark tests")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.driver.bindAddress", "127.0.0.1")
                .set("spark.plugins", CuhandleSparkPlugin.class.getName());
        for (int i = 0; i < keyValues.length; i += 2) {
            conf.set(keyValues[i], keyValues[i + 1]);
        }
        return new JavaSparkContext(conf);
    }
}
