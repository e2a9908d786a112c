/**
 * cuhandle on Apache Spark: GPU work in Spark tasks, one handle per task on the GPU Spark assigned.
 *
 * <ul>
 *   <li>{@link dev.cuhandle.spark.GpuTask#handle()}: the running task's {@link dev.cuhandle.Handle}, on the
 *       first GPU address in {@code TaskContext.resources().get("gpu")} (local mode, which assigns none:
 *       {@code spark.cuhandle.device}, else device 0), closed by a task-completion listener on success,
 *       failure and cancellation alike.</li>
 *   <li>{@link dev.cuhandle.spark.GpuTask#synchronize(dev.cuhandle.Handle)} and
 *       {@link dev.cuhandle.spark.GpuTask#await(java.util.concurrent.CompletableFuture)}: waits for the GPU
 *       that end when Spark cancels the task (it interrupts the task's thread).</li>
 *   <li>{@link dev.cuhandle.spark.GpuAdmission}: at most {@code spark.cuhandle.concurrentGpuTasks} tasks
 *       (default 2) hold one GPU at once in an executor; the others wait, cancellably, for a permit.</li>
 *   <li>{@link dev.cuhandle.spark.GpuSmPartitions}: with {@code spark.cuhandle.smPartitions=N}, each GPU of an
 *       executor is split into N SM partitions and each running task's handle gets one of its own, so that one
 *       task's long kernels cannot stall the others' work.</li>
 *   <li>{@link dev.cuhandle.spark.GpuRetry}: GPU work run again after {@code CUDA_ERROR_OUT_OF_MEMORY}, with
 *       cached memory freed and other tasks' releases waited for in between, or split into halves.</li>
 *   <li>{@link dev.cuhandle.spark.GpuLibraries}: kernel libraries loaded once per executor JVM and shared
 *       by its tasks.</li>
 *   <li>{@link dev.cuhandle.spark.CuhandleSparkPlugin} ({@code spark.plugins}): reports the devices at
 *       executor start and closes the libraries at executor shutdown.</li>
 *   <li>{@link dev.cuhandle.spark.GpuDiscovery}: the GPU discovery that
 *       {@code spark.executor.resource.gpu.discoveryScript} runs (through {@code bin/cuhandle-gpu-discovery.sh}).</li>
 * </ul>
 *
 * <p>One machine with N GPUs, as a standalone master and worker on it (the worker discovers the
 * GPUs and hands them to its executors; {@code local-cluster} takes the same keys):
 * <pre>
 * spark.worker.resource.gpu.amount=N
 * spark.worker.resource.gpu.discoveryScript=/opt/cuhandle/cuhandle-gpu-discovery.sh
 * spark.executor.resource.gpu.amount=1
 * spark.executor.cores=4
 * spark.task.resource.gpu.amount=0.25      # 4 tasks share one GPU
 * spark.plugins=dev.cuhandle.spark.CuhandleSparkPlugin
 * </pre>
 * On YARN and Kubernetes the executor discovers its GPUs itself:
 * {@code spark.executor.resource.gpu.discoveryScript}. Plain local mode ({@code local[N]}) schedules
 * no GPUs: leave every {@code *.resource.gpu.*} key out (Spark would wait forever for GPU offers)
 * and choose the device with {@code spark.cuhandle.device}. The project's {@code docs/spark.md}
 * covers clusters, cancellation and the example job.
 *
 * <p>Spark is a {@code provided} dependency (Spark 4.1, Scala 2.13); this module needs Java 17, as
 * Spark 4 does.
 */
package dev.cuhandle.spark;
