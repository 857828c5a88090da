// This machine's limits, measured in the benchmark run itself (once, on first use), so that each
// kernel's rate can be reported as a fraction of them: STREAM-style copy and triad bandwidth and
// the best single-threaded SGEMM rate of sgraph's GEMM.
#pragma once

namespace sgraph::bench {

// Bytes per second of `b[i] = a[i]` (copy) and `a[i] = b[i] + s * c[i]` (triad) over arrays far
// larger than the caches, on `threads` threads (the same split the region kernels use).
double copy_bandwidth(int threads);
double triad_bandwidth(int threads);
// FLOP per second of a 1024^3 SGEMM on one thread (the variant sgraph runs).
double sgemm_peak();

}  // namespace sgraph::bench
