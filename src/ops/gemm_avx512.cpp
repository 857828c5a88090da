// The float GEMM (gemm_eigen.inc) compiled for AVX-512 (F, DQ, VL, BW) with AVX2 and FMA;
// CMakeLists.txt sets the flags.
#define SGRAPH_GEMM_NS gemm_avx512
// The own micro-kernel's tile of C (gemm_tiles.inc): 14 rows x 2 vectors.
#define SGRAPH_GEMM_TILE_ROWS 14
#define SGRAPH_GEMM_TILE_VECTORS 2
#define Eigen sgraph_eigen_avx512
#include "ops/gemm_eigen.inc"
