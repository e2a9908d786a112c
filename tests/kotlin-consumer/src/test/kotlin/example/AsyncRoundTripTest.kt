package example

import dev.cuhandle.Handle
import dev.cuhandle.junit.RequiresGpu
import kotlinx.coroutines.runBlocking
import org.junit.jupiter.api.Assertions.assertArrayEquals
import org.junit.jupiter.api.Test
import kotlin.random.Random

class AsyncRoundTripTest {
    @Test
    @RequiresGpu
    fun `pinned upload and download awaited in a coroutine return the data`() {
        val seed = System.nanoTime()
        val random = Random(seed)
        val xs = FloatArray(1 shl 20) { random.nextFloat() }
        Handle.create().use { h ->
            assertArrayEquals(xs, runBlocking { roundTrip(h, xs) }, "seed $seed")
        }
    }
}
