// Why `empty_launch_s` is a per-process figure (docs/roofline.md, `empty_launch_s`): the device
// time of an empty kernel in a stream of 500, on the legacy stream and on eight created streams
// (two rounds), and as 500 nodes of one CUDA graph. Run it in several processes and compare:
//   nvcc -O3 -arch=sm_90 ci/gpu/launch_levels.cu -o /tmp/launch_levels
//   for k in 1 2 3; do /tmp/launch_levels; done
// Each sample: a 3 ms spin first, so the host has queued all 500 launches before the start event.
#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <vector>
// Every CUDA call checked: the failing call and the error, exit 1.
#define CK(x) check((x), #x)
static void check(cudaError_t e, const char* what) {
  if (e == cudaSuccess) return;
  std::fprintf(stderr, "%s: %s\n", what, cudaGetErrorString(e));
  std::exit(1);
}
__global__ void empty_kernel() {}
__global__ void spin_kernel(unsigned long long ns) {
  unsigned long long s, n; asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(s));
  do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(n)); } while (n - s < ns);
}
double median(std::vector<double> v) { std::sort(v.begin(), v.end()); return v[v.size() / 2]; }
int main() {
  cudaEvent_t a, b; CK(cudaEventCreate(&a)); CK(cudaEventCreate(&b));
  std::vector<cudaStream_t> streams(8);
  for (auto& s : streams) CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  auto time_launches = [&](cudaStream_t s) {
    std::vector<double> us;
    for (int k = 0; k < 15; ++k) {
      spin_kernel<<<1, 1, 0, s>>>(3000000);
      CK(cudaEventRecord(a, s));
      for (int i = 0; i < 500; ++i) empty_kernel<<<1, 32, 0, s>>>();
      CK(cudaGetLastError());
      CK(cudaEventRecord(b, s));
      CK(cudaEventSynchronize(b));
      float ms; CK(cudaEventElapsedTime(&ms, a, b));
      if (k >= 3) us.push_back(ms * 1e3 / 500);
    }
    return median(us);
  };
  std::printf("launch legacy0 %.4f\n", time_launches(0));
  for (int r = 0; r < 2; ++r)
    for (int i = 0; i < 8; ++i) std::printf("launch stream%d round%d %.4f\n", i, r, time_launches(streams[i]));
  // graph of 500 empty kernels
  {
    cudaGraph_t g; cudaGraphExec_t ge; cudaStream_t s = streams[0];
    CK(cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal));
    for (int i = 0; i < 500; ++i) empty_kernel<<<1, 32, 0, s>>>();
    CK(cudaStreamEndCapture(s, &g)); CK(cudaGraphInstantiate(&ge, g, 0));
    std::vector<double> us;
    for (int k = 0; k < 15; ++k) {
      spin_kernel<<<1, 1, 0, s>>>(3000000);
      CK(cudaEventRecord(a, s)); CK(cudaGraphLaunch(ge, s)); CK(cudaEventRecord(b, s)); CK(cudaEventSynchronize(b));
      float ms; CK(cudaEventElapsedTime(&ms, a, b)); if (k >= 3) us.push_back(ms * 1e3 / 500);
    }
    std::printf("launch graph500 %.4f\n", median(us));
  }
  return 0;
}
