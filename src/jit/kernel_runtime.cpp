// Runtime helpers region kernels call (see kernel_runtime.h).
#include "jit/kernel_runtime.h"

#include <algorithm>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <type_traits>
#include <vector>

#include "jit/parallel.h"
#include "ops/gemm_kernel.h"
#include "ops/winograd.h"
#include "sgraph/error.h"

namespace {

// One batched GEMM, split into work items of (batch item, block of rows of C, part of C's
// columns). Rows of C take rows of A and all of B, columns of C all of A and columns of B; each
// item packs what it reads, so the split repacks the smaller operand.
template <class T>
struct GemmJob {
  int64_t M, N, K, row_blocks, rows_per_block, col_parts, cols_per_part;
  const T *a, *b;
  const int64_t *a_off, *b_off;
  bool ta, tb;
  T* c;
  T alpha;
  const sgraph::ops::PackedB* packed = nullptr;  // B, packed (then b and b_off are unused)

  void run(int64_t item) const {
    const int64_t part = item % col_parts;
    item /= col_parts;
    const int64_t i = item / row_blocks, r0 = (item % row_blocks) * rows_per_block;
    const int64_t rows = std::min(rows_per_block, M - r0);
    const T* ai = a + (a_off ? a_off[i] : 0) + (ta ? r0 : r0 * K);
    T* ci = c + i * M * N + r0 * N;
    if constexpr (std::is_same_v<T, float>) {
      if (packed) {
        sgraph::ops::gemm_packed(rows, ai, ta, *packed, ci, alpha, 0, part, col_parts);
        return;
      }
    }
    const T* bi = b + (b_off ? b_off[i] : 0);
    const int64_t n0 = part * cols_per_part;  // row blocks only when !ta
    sgraph::ops::gemm_columns<T>(rows, N, K, ai, ta, bi, tb, ci, n0,
                                 std::min(N, n0 + cols_per_part), alpha);
  }
};

// The loop nest sgraph_parallel_for runs over a job's items (it catches what they throw).
template <class Job>
void run_items(void* const* ptrs, int64_t begin, int64_t end) {
  const auto* job = reinterpret_cast<const Job*>(ptrs);
  for (int64_t item = begin; item < end; ++item) job->run(item);
}

template <class T>
void batched_gemm(void* ctx, int64_t batch, int64_t M, int64_t N, int64_t K, const T* a,
                  const int64_t* a_off, int64_t ta, const T* b, const int64_t* b_off, int64_t tb,
                  T* c, double alpha, const sgraph::ops::PackedB* packed = nullptr) {
  const int threads = ctx ? static_cast<sgraph::KernelContext*>(ctx)->threads : 1;
  // When the batch alone cannot keep the threads busy, each item is split: by C's columns when B
  // is the larger operand (an im2col matrix against a conv's weights) and not packed, else by row
  // blocks of a row-major A (a block of rows of A^T is not a dense matrix). One item splits into
  // a multiple of the threads where it can: 3 equal parts on 2 threads take as long as 4.
  const int64_t parts_wanted = threads * 2 / std::max<int64_t>(batch, 1);
  const auto parts = [&](int64_t most) {
    const int64_t n = std::min(parts_wanted, most);
    return batch == 1 && n > threads ? n / threads * threads : n;
  };
  int64_t row_blocks = 1, col_parts = 1, cols_per_part = N;
  if (threads > 1 && batch < threads && !packed && N > M && N >= 128) {
    constexpr int64_t kColumns = 16;  // a part's columns: a multiple of this, at least 4 of them
    col_parts = parts(N / (4 * kColumns));
    cols_per_part = ((N + col_parts - 1) / col_parts + kColumns - 1) / kColumns * kColumns;
    col_parts = (N + cols_per_part - 1) / cols_per_part;
  } else if (threads > 1 && batch < threads && !ta && M >= 64) {
    row_blocks = parts(M / 32);
  }
  row_blocks = std::max<int64_t>(row_blocks, 1);
  const int64_t rows_per_block = (M + row_blocks - 1) / row_blocks;
  row_blocks = (M + rows_per_block - 1) / rows_per_block;
  // Too few rows for the threads (a few tokens through a layer's weights): a packed B's columns
  // are split instead, when the product is large enough to repay waking the threads.
  if constexpr (std::is_same_v<T, float>)
    if (packed && threads > batch * row_blocks && M * N * K >= (int64_t{1} << 18))
      col_parts = sgraph::ops::packed_parts(packed->view(), threads / (batch * row_blocks));
  const GemmJob<T> job{
      M, N,     K,     row_blocks, rows_per_block, col_parts, cols_per_part,         a,
      b, a_off, b_off, ta != 0,    tb != 0,        c,         static_cast<T>(alpha), packed};
  if (M == 0 || N == 0 || batch == 0) return;
  sgraph_parallel_for(ctx, &run_items<GemmJob<T>>, reinterpret_cast<void* const*>(&job),
                      batch * row_blocks * col_parts);
}

// Runs a helper's body; what it throws is recorded for the kernel's caller, never let through the
// kernel's frames (see sgraph::record_kernel_failure).
template <class F>
void helper_boundary(const char* what, F&& body) noexcept {  // what: for unknown exceptions
  try {
    sgraph::maybe_fail_for_testing();
    body();
  } catch (const std::exception& e) {
    sgraph::record_kernel_failure(e.what());
  } catch (...) {
    sgraph::record_kernel_failure(what);
  }
}

void gemm_const_b(void* ctx, int64_t batch, int64_t M, int64_t N, int64_t K, const float* a,
                  const int64_t* a_off, int64_t trans_a, const float* b, const int64_t* b_off,
                  int64_t trans_b, float* c, double alpha);
void gemm_const_a(void* ctx, int64_t batch, int64_t M, int64_t N, int64_t K, const float* a,
                  const int64_t* a_off, int64_t trans_a, const float* b, const int64_t* b_off,
                  int64_t trans_b, float* c, double alpha);

void conv_winograd(void* ctx, const float* w, int64_t M, int64_t C, int64_t KH, const float* src,
                   int64_t N, int64_t Hs, int64_t Ws, int64_t sh, int64_t dh, int64_t OH,
                   int64_t OW, bool rows, float* v, float* y, float* out);

// A plan's packed constant B operands, by address and geometry.
struct PackedCache {
  std::mutex mutex;
  std::map<std::tuple<const float*, int64_t, int64_t, bool>, std::unique_ptr<sgraph::ops::PackedB>>
      packed;

  const sgraph::ops::PackedB& get(const float* b, int64_t K, int64_t N, bool tb) {
    std::lock_guard<std::mutex> lock(mutex);
    auto& p = packed[{b, K, N, tb}];
    if (!p) p = std::make_unique<sgraph::ops::PackedB>(K, N, b, tb);
    return *p;
  }

  // A constant conv weight's F(2,3) transform, by address and geometry.
  std::map<std::tuple<const float*, int64_t, int64_t, int64_t, bool>,
           std::unique_ptr<sgraph::ops::WinogradWeights>>
      winograd;

  const sgraph::ops::WinogradWeights& get_winograd(const float* w, int64_t M, int64_t C, int64_t KH,
                                                   bool rows) {
    std::lock_guard<std::mutex> lock(mutex);
    auto& u = winograd[{w, M, C, KH, rows}];
    if (!u) u = std::make_unique<sgraph::ops::WinogradWeights>(w, M, C, KH, rows);
    return *u;
  }

  // The plan's cache in a kernel's context, made at its first use.
  static PackedCache& of(sgraph::KernelContext& kc) {
    std::call_once(kc.gemm_cache_once, [&] { kc.gemm_cache = std::make_shared<PackedCache>(); });
    return *static_cast<PackedCache*>(kc.gemm_cache.get());
  }
};

}  // namespace

extern "C" {
void sgraph_gemm_f32(void* ctx, int64_t batch, int64_t M, int64_t N, int64_t K, const float* a,
                     const int64_t* a_off, int64_t trans_a, const float* b, const int64_t* b_off,
                     int64_t trans_b, float* c, double alpha) {
  helper_boundary("GEMM", [&] {
    batched_gemm(ctx, batch, M, N, K, a, a_off, trans_a, b, b_off, trans_b, c, alpha);
  });
}
void sgraph_gemm_f64(void* ctx, int64_t batch, int64_t M, int64_t N, int64_t K, const double* a,
                     const int64_t* a_off, int64_t trans_a, const double* b, const int64_t* b_off,
                     int64_t trans_b, double* c, double alpha) {
  helper_boundary("GEMM", [&] {
    batched_gemm(ctx, batch, M, N, K, a, a_off, trans_a, b, b_off, trans_b, c, alpha);
  });
}
void sgraph_gemm_const_b_f32(void* ctx, int64_t batch, int64_t M, int64_t N, int64_t K,
                             const float* a, const int64_t* a_off, int64_t trans_a, const float* b,
                             const int64_t* b_off, int64_t trans_b, float* c, double alpha) {
  helper_boundary("GEMM with a packed operand", [&] {
    gemm_const_b(ctx, batch, M, N, K, a, a_off, trans_a, b, b_off, trans_b, c, alpha);
  });
}
void sgraph_conv_winograd_f32(void* ctx, const float* w, int64_t M, int64_t C, int64_t KH,
                              const float* src, int64_t N, int64_t Hs, int64_t Ws, int64_t sh,
                              int64_t dh, int64_t OH, int64_t OW, int64_t rows, float* v, float* y,
                              float* out) {
  helper_boundary("Winograd conv", [&] {
    conv_winograd(ctx, w, M, C, KH, src, N, Hs, Ws, sh, dh, OH, OW, rows != 0, v, y, out);
  });
}
void sgraph_gemm_const_a_f32(void* ctx, int64_t batch, int64_t M, int64_t N, int64_t K,
                             const float* a, const int64_t* a_off, int64_t trans_a, const float* b,
                             const int64_t* b_off, int64_t trans_b, float* c, double alpha) {
  helper_boundary("GEMM with a packed operand", [&] {
    gemm_const_a(ctx, batch, M, N, K, a, a_off, trans_a, b, b_off, trans_b, c, alpha);
  });
}
}

namespace {

void gemm_const_b(void* ctx, int64_t batch, int64_t M, int64_t N, int64_t K, const float* a,
                  const int64_t* a_off, int64_t trans_a, const float* b,
                  [[maybe_unused]] const int64_t* b_off, int64_t trans_b, float* c, double alpha) {
  SG_ASSERT(b_off == nullptr) << "a constant GEMM operand B has no batch offsets";
  if (ctx == nullptr || M == 0 || N == 0 || K == 0 || batch == 0) {
    batched_gemm(ctx, batch, M, N, K, a, a_off, trans_a, b, nullptr, trans_b, c, alpha);
    return;
  }
  auto& kc = *static_cast<sgraph::KernelContext*>(ctx);
  const sgraph::ops::PackedB& packed = PackedCache::of(kc).get(b, K, N, trans_b != 0);
  // Batch items whose A matrices follow each other are one product of batch * M rows.
  bool stacked = trans_a == 0;
  for (int64_t i = 0; stacked && i < batch; ++i) stacked = (a_off ? a_off[i] : 0) == i * M * K;
  if (stacked && batch > 1) {
    M *= batch;
    batch = 1;
    a_off = nullptr;
  }
  batched_gemm(ctx, batch, M, N, K, a, a_off, trans_a, b, nullptr, trans_b, c, alpha, &packed);
}

std::atomic<bool> force_const_a{false};  // (force_const_a_packing_for_testing)

// sgraph_gemm_const_a_f32 for a short B (N <= K / 2): C_i^T = op(B_i)^T * op(A_i)^T, with
// op(A_i)^T, a constant, packed once as the right-hand operand of gemm_packed, C_i^T in this
// thread's scratch, then transposed into C_i. Worth it when packing A on every call costs more
// than writing C twice (M * K > 2 * M * N): silero_vad_v5's convs multiply 64-258 x 192-387
// weights by 1-3 positions, and repacked the weights on every call.
struct ConstAJob {
  int64_t M, N, K, parts;
  const float *a, *b;
  const int64_t *a_off, *b_off;
  bool ta, tb;
  float* c;
  float alpha;
  PackedCache* cache;

  void run(int64_t item) const {
    const int64_t part = item % parts, i = item / parts;
    const sgraph::ops::PackedB& packed = cache->get(a + (a_off ? a_off[i] : 0), K, M, !ta);
    const auto [m0, m1] = sgraph::ops::packed_columns(packed.view(), part, parts);
    if (m0 >= m1) return;
    thread_local std::vector<float> scratch;
    if (scratch.size() < static_cast<size_t>(N * M)) scratch.resize(static_cast<size_t>(N * M));
    float* t = scratch.data();  // C_i^T, N x M; this part's columns [m0, m1)
    sgraph::ops::gemm_packed(N, b + (b_off ? b_off[i] : 0), !tb, packed, t, alpha, 0, part, parts);
    float* ci = c + i * M * N;
    for (int64_t m = m0; m < m1; ++m)
      for (int64_t n = 0; n < N; ++n) ci[m * N + n] = t[n * M + m];
  }
};

void gemm_const_a(void* ctx, int64_t batch, int64_t M, int64_t N, int64_t K, const float* a,
                  const int64_t* a_off, int64_t trans_a, const float* b, const int64_t* b_off,
                  int64_t trans_b, float* c, double alpha) {
  if (ctx == nullptr || M == 0 || N == 0 || K == 0 || batch == 0 ||
      (2 * N > K && !force_const_a.load(std::memory_order_relaxed))) {
    batched_gemm(ctx, batch, M, N, K, a, a_off, trans_a, b, b_off, trans_b, c, alpha);
    return;
  }
  auto& kc = *static_cast<sgraph::KernelContext*>(ctx);
  PackedCache* cache = &PackedCache::of(kc);
  // Too few items for the threads: each product split by C's rows (the packed operand's panels),
  // when large enough to repay waking the threads (as gemm_const_b's split of a packed B).
  int64_t parts = 1;
  if (kc.threads > batch && M * N * K >= (int64_t{1} << 18))
    parts = sgraph::ops::packed_parts(
        cache->get(a + (a_off ? a_off[0] : 0), K, M, trans_a == 0).view(), kc.threads / batch);
  const bool ta = trans_a != 0, tb = trans_b != 0;
  const auto al = static_cast<float>(alpha);
  const ConstAJob job{M, N, K, parts, a, b, a_off, b_off, ta, tb, c, al, cache};
  sgraph_parallel_for(ctx, &run_items<ConstAJob>, reinterpret_cast<void* const*>(&job),
                      batch * parts);
}

// The phases of conv_winograd, each over independent items (see ops/winograd.h).
struct WinogradJob {
  enum Phase { input, product, output } phase;
  const sgraph::ops::WinogradShape* s;
  const sgraph::ops::WinogradWeights* u;
  const float* src;
  float *v, *y, *out;
  int64_t chunk;                  // input: channels per item; output: output channels per item
  int64_t parts;                  // product: parts of the positions per (image, point)
  std::atomic<bool>* not_finite;  // per image: an output was not finite

  void run(int64_t item) const {
    if (phase == input) {
      const int64_t per = (s->C + chunk - 1) / chunk, n = item / per, c0 = item % per * chunk;
      sgraph::ops::winograd_input(*s, src, v, n, c0, std::min(s->C, c0 + chunk));
    } else if (phase == product) {
      const int64_t part = item % parts, np = item / parts, cols = (s->P() + parts - 1) / parts;
      const int64_t n0 = std::min(s->P(), part * cols), n1 = std::min(s->P(), n0 + cols);
      if (n0 < n1)
        sgraph::ops::winograd_product(*s, *u, v, y, np / s->points(),
                                      static_cast<int>(np % s->points()), n0, n1);
    } else {
      const int64_t per = (s->M + chunk - 1) / chunk, n = item / per, m0 = item % per * chunk;
      if (!sgraph::ops::winograd_output(*s, y, out, n, m0, std::min(s->M, m0 + chunk)))
        not_finite[n].store(true, std::memory_order_relaxed);
    }
  }
};

void conv_winograd(void* ctx, const float* w, int64_t M, int64_t C, int64_t KH, const float* src,
                   int64_t N, int64_t Hs, int64_t Ws, int64_t sh, int64_t dh, int64_t OH,
                   int64_t OW, bool rows, float* v, float* y, float* out) {
  const sgraph::ops::WinogradShape s{.N = N,
                                     .C = C,
                                     .Hs = Hs,
                                     .Ws = Ws,
                                     .M = M,
                                     .KH = KH,
                                     .sh = sh,
                                     .dh = dh,
                                     .OH = OH,
                                     .OW = OW,
                                     .rows = rows};
  if (N == 0 || M == 0 || OH == 0 || OW == 0) return;
  std::unique_ptr<sgraph::ops::WinogradWeights> own;  // without a ctx (no plan): this call's
  const sgraph::ops::WinogradWeights* u = nullptr;
  const int threads = ctx ? static_cast<sgraph::KernelContext*>(ctx)->threads : 1;
  if (ctx) {
    u = &PackedCache::of(*static_cast<sgraph::KernelContext*>(ctx)).get_winograd(w, M, C, KH, rows);
  } else {
    own = std::make_unique<sgraph::ops::WinogradWeights>(w, M, C, KH, rows);
    u = own.get();
  }
  std::unique_ptr<std::atomic<bool>[]> not_finite(new std::atomic<bool>[N]);
  for (int64_t n = 0; n < N; ++n) not_finite[n].store(!u->finite());
  if (u->finite()) {
    // Items: a few per thread per phase (each phase is a pass over a few hundred KB at most).
    const int64_t in_chunk = std::max<int64_t>(1, C * N / (4 * threads));
    const int64_t out_chunk = std::max<int64_t>(16, M * N / (4 * threads));
    int64_t parts = 1;
    const int64_t points = s.points();
    if (threads > points * N) parts = std::min<int64_t>(threads / (points * N), (s.P() + 63) / 64);
    WinogradJob job{WinogradJob::input, &s, u, src, v, y, out, in_chunk, parts, not_finite.get()};
    const auto run = [&](WinogradJob::Phase phase, int64_t items) {
      job.phase = phase;
      sgraph_parallel_for(ctx, &run_items<WinogradJob>, reinterpret_cast<void* const*>(&job),
                          items);
    };
    run(WinogradJob::input, N * ((C + in_chunk - 1) / in_chunk));
    run(WinogradJob::product, N * points * parts);
    job.chunk = out_chunk;
    run(WinogradJob::output, N * ((M + out_chunk - 1) / out_chunk));
  }
  // Images with an infinite or NaN output (or weights whose transform is not finite): computed
  // the plain way, so that those values come out as a plain sum makes them.
  std::vector<float> col;
  for (int64_t n = 0; n < N; ++n) {
    if (!not_finite[n].load(std::memory_order_relaxed)) continue;
    if (col.empty()) col.resize(static_cast<size_t>(C * KH * 3 * OH * OW));
    sgraph::ops::winograd_plain_image(s, src, w, col.data(), out, n);
  }
}

}  // namespace

void sgraph::force_const_a_packing_for_testing(bool on) { force_const_a.store(on); }
