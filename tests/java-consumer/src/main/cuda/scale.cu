// x[i] = a * x[i] for i < n: one thread per element. Compiled by the build (pom.xml) into
// target/classes/kernels/scale.fatbin, so it ships in the JAR as a resource.
extern "C" __global__ void scale(float* x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    x[i] *= a;
  }
}
