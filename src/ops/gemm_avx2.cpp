// The float GEMM (gemm_eigen.inc) compiled for AVX2 and FMA (x86-64-v3's vector units);
// CMakeLists.txt sets the flags.
#define SGRAPH_GEMM_NS gemm_avx2
#define Eigen sgraph_eigen_avx2
#include "ops/gemm_eigen.inc"
