package example

import dev.cuhandle.Cuda
import dev.cuhandle.CudaException
import dev.cuhandle.junit.RequiresGpu
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Assertions.assertFalse
import org.junit.jupiter.api.Assertions.assertThrows
import org.junit.jupiter.api.Test
import kotlin.random.Random

class SaxpyTest {
    @Test
    fun `the library loads from the Maven dependency and answers without a GPU too`() {
        val reason = Cuda.unavailableReason()
        if (reason != null) {
            assertFalse(Cuda.isAvailable())
            assertThrows(CudaException::class.java) { saxpy(1f, floatArrayOf(1f), floatArrayOf(1f)) }
        }
        println("[kotlin-consumer] GPU: ${reason ?: "available"}")
    }

    @Test
    @RequiresGpu(kernels = true)
    fun `saxpy on the GPU matches the CPU`() {
        val random = Random(System.nanoTime())
        val x = FloatArray(100_003) { random.nextFloat() }
        val y = FloatArray(x.size) { random.nextFloat() }
        val expected = FloatArray(x.size) { 3f * x[it] + y[it] }
        assertArrayEquals(expected, saxpy(3f, x, y), 1e-6f)
    }
}
