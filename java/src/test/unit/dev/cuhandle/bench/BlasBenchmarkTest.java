package dev.cuhandle.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class BlasBenchmarkTest {
    @Test
    void elementSizesFollowTheRoutinesPrecision() {
        assertEquals(4, BlasBenchmark.elementBytes("sdot"));
        assertEquals(4, BlasBenchmark.elementBytes("isamax"));
        assertEquals(8, BlasBenchmark.elementBytes("dscal"));
        assertEquals(8, BlasBenchmark.elementBytes("idamax"));
        assertEquals(8, BlasBenchmark.elementBytes("ddot"));
    }
}
