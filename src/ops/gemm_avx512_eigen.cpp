// The float GEMM (gemm_eigen.inc) compiled for AVX-512 as gemm_avx512.cpp is, but on Eigen's
// kernels only (no SGRAPH_GEMM_TILE_ROWS): the variant `avx512_eigen`, never picked by default,
// for measuring the own micro-kernel against Eigen's on a machine (SGRAPH_GEMM_ISA=avx512_eigen,
// sgraph_bench's BM_Gemm_F32/.../avx512_eigen) and as a fallback. CMakeLists.txt sets the flags.
#define SGRAPH_GEMM_NS gemm_avx512_eigen
#define Eigen sgraph_eigen_avx512_eigen
#include "ops/gemm_eigen.inc"
