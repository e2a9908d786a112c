package example

import dev.cuhandle.Blas
import dev.cuhandle.Cuda
import dev.cuhandle.Handle

/** y = alpha * x + y on the GPU, the way a Kotlin user writes it: `use` closes in order. */
fun saxpy(alpha: Float, x: FloatArray, y: FloatArray): FloatArray {
    require(x.size == y.size) { "x and y differ in length: ${x.size} vs ${y.size}" }
    Handle.create().use { h ->
        h.upload(x).use { dx ->
            h.upload(y).use { dy ->
                Blas.saxpy(h, x.size.toLong(), alpha, dx, 1, dy, 1)
                val result = FloatArray(y.size)
                dy.download(result)
                return result
            }
        }
    }
}

fun main() {
    val reason = Cuda.unavailableReason()
    if (reason != null) {
        println("no GPU: $reason")
        return
    }
    println(saxpy(2f, floatArrayOf(1f, 2f, 3f), floatArrayOf(10f, 20f, 30f)).joinToString())
}
