// The float GEMM (gemm_eigen.inc) compiled for baseline x86-64 (SSE2), the library's own flags;
// CMakeLists.txt sets the flags.
#define SGRAPH_GEMM_NS gemm_base
#define Eigen sgraph_eigen_base
#include "ops/gemm_eigen.inc"
