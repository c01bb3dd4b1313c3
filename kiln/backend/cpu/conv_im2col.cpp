// Convolution as im2col + gemm: per image and group, the input patches become the columns of a
// [C/G * K, OUT] matrix, and the convolution is one matrix product with the weights.
#include <algorithm>
#include <cstring>
#include <vector>

#include "kiln/backend/cpu/blas.h"
#include "kiln/backend/cpu/conv_geometry.h"
#include "kiln/backend/cpu/parallel.h"
#include "kiln/core/error.h"

namespace kiln::cpu::im2col {
namespace {

// Calls f(col_index, input_offset or -1 when in padding) for every output position of one
// column-matrix row (kernel tap kd, kh, kw).
template <class F>
void for_each_tap_position(const ConvGeometry& g, int64_t kd, int64_t kh, int64_t kw, F&& f) {
  int64_t col = 0;
  for (int64_t od = 0; od < g.out[0]; ++od) {
    const int64_t id = od * g.stride[0] - g.pad[0] + kd * g.dilation[0];
    const bool d_ok = id >= 0 && id < g.in[0];
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      const int64_t ih = oh * g.stride[1] - g.pad[1] + kh * g.dilation[1];
      const bool h_ok = d_ok && ih >= 0 && ih < g.in[1];
      const int64_t base = (id * g.in[1] + ih) * g.in[2];
      for (int64_t ow = 0; ow < g.out[2]; ++ow, ++col) {
        const int64_t iw = ow * g.stride[2] - g.pad[2] + kw * g.dilation[2];
        f(col, h_ok && iw >= 0 && iw < g.in[2] ? base + iw : -1);
      }
    }
  }
}

// Row r of the column matrix is (channel c, tap kd, kh, kw).
template <class F>
void for_row(const ConvGeometry& g, int64_t r, F&& f) {
  const int64_t K = g.kernel_numel();
  const int64_t c = r / K, t = r % K;
  const int64_t kd = t / (g.kernel[1] * g.kernel[2]);
  const int64_t kh = t / g.kernel[2] % g.kernel[1], kw = t % g.kernel[2];
  f(c, kd, kh, kw);
}

template <class T>
void to_columns(const ConvGeometry& g, int64_t channels, const T* x, T* col) {
  const int64_t rows = channels * g.kernel_numel(), OUT = g.out_numel(), IN = g.in_numel();
  parallel_for(0, rows, std::max<int64_t>(1, kParallelGrain / std::max<int64_t>(OUT, 1)),
               [&](int64_t b, int64_t e) {
                 for (int64_t r = b; r < e; ++r) {
                   for_row(g, r, [&](int64_t c, int64_t kd, int64_t kh, int64_t kw) {
                     const T* plane = x + c * IN;
                     T* dst = col + r * OUT;
                     for_each_tap_position(g, kd, kh, kw, [&](int64_t j, int64_t off) {
                       dst[j] = off >= 0 ? plane[off] : T(0);
                     });
                   });
                 }
               });
}

// Accumulates the column matrix back into the (zeroed) input planes; parallel over channels
// because all taps of one channel write the same plane.
template <class T>
void from_columns(const ConvGeometry& g, int64_t channels, const T* col, T* x) {
  const int64_t K = g.kernel_numel(), OUT = g.out_numel(), IN = g.in_numel();
  parallel_for(0, channels, 1, [&](int64_t b, int64_t e) {
    for (int64_t c = b; c < e; ++c) {
      T* plane = x + c * IN;
      std::fill(plane, plane + IN, T(0));
      for (int64_t r = c * K; r < (c + 1) * K; ++r) {
        for_row(g, r, [&](int64_t, int64_t kd, int64_t kh, int64_t kw) {
          const T* src = col + r * OUT;
          for_each_tap_position(g, kd, kh, kw, [&](int64_t j, int64_t off) {
            if (off >= 0) plane[off] += src[j];
          });
        });
      }
    }
  });
}

// C = A @ B (or with A / B transposed), all row-major and dense.
void matmul(ScalarType dt, int64_t m, int64_t n, int64_t k, const void* a, bool ta, const void* b,
            bool tb, void* c, double beta) {
  GemmArgs args;
  args.dtype = dt;
  args.m = m;
  args.n = n;
  args.k = k;
  args.a = ta ? MatrixRef{a, 0, 1, m} : MatrixRef{a, 0, k, 1};
  args.b = tb ? MatrixRef{b, 0, 1, k} : MatrixRef{b, 0, n, 1};
  args.c = c;
  args.ldc = n;
  args.beta = beta;
  gemm(args);
}

struct Sizes {
  int64_t cg, og, K, IN, OUT, rows;
  explicit Sizes(const ConvGeometry& g)
      : cg(g.in_channels / g.groups),
        og(g.out_channels / g.groups),
        K(g.kernel_numel()),
        IN(g.in_numel()),
        OUT(g.out_numel()),
        rows(cg * K) {}
};

template <class T>
void forward_t(const ConvGeometry& g, const T* x, const T* w, T* y) {
  const Sizes s(g);
  std::vector<T> col(static_cast<size_t>(s.rows * s.OUT));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      to_columns(g, s.cg, x + (n * g.in_channels + grp * s.cg) * s.IN, col.data());
      matmul(dtype_of<T>, s.og, s.OUT, s.rows, w + grp * s.og * s.rows, false, col.data(), false,
             y + (n * g.out_channels + grp * s.og) * s.OUT, 0);
    }
  }
}

template <class T>
void backward_data_t(const ConvGeometry& g, const T* gy, const T* w, T* gx) {
  const Sizes s(g);
  std::vector<T> col(static_cast<size_t>(s.rows * s.OUT));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      matmul(dtype_of<T>, s.rows, s.OUT, s.og, w + grp * s.og * s.rows, true,
             gy + (n * g.out_channels + grp * s.og) * s.OUT, false, col.data(), 0);
      from_columns(g, s.cg, col.data(), gx + (n * g.in_channels + grp * s.cg) * s.IN);
    }
  }
}

template <class T>
void backward_weight_t(const ConvGeometry& g, const T* gy, const T* x, T* gw) {
  const Sizes s(g);
  if (g.batch == 0) std::fill(gw, gw + g.out_channels * s.rows, T(0));
  std::vector<T> col(static_cast<size_t>(s.rows * s.OUT));
  for (int64_t n = 0; n < g.batch; ++n) {
    for (int64_t grp = 0; grp < g.groups; ++grp) {
      to_columns(g, s.cg, x + (n * g.in_channels + grp * s.cg) * s.IN, col.data());
      matmul(dtype_of<T>, s.og, s.rows, s.OUT, gy + (n * g.out_channels + grp * s.og) * s.OUT,
             false, col.data(), true, gw + grp * s.og * s.rows, n == 0 ? 0 : 1);
    }
  }
}

template <class F>
void visit(ScalarType dt, F&& f) {
  if (dt == kFloat32) return f(float{});
  KILN_CHECK(dt == kFloat64, "internal: the convolution im2col path takes float32 or float64, got ",
             dt);
  f(double{});
}

}  // namespace

void forward(const ConvGeometry& g, ScalarType dt, const void* x, const void* w, void* y) {
  visit(dt, [&]<class T>(T) {
    forward_t(g, static_cast<const T*>(x), static_cast<const T*>(w), static_cast<T*>(y));
  });
}
void backward_data(const ConvGeometry& g, ScalarType dt, const void* gy, const void* w, void* gx) {
  visit(dt, [&]<class T>(T) {
    backward_data_t(g, static_cast<const T*>(gy), static_cast<const T*>(w), static_cast<T*>(gx));
  });
}
void backward_weight(const ConvGeometry& g, ScalarType dt, const void* gy, const void* x,
                     void* gw) {
  visit(dt, [&]<class T>(T) {
    backward_weight_t(g, static_cast<const T*>(gy), static_cast<const T*>(x), static_cast<T*>(gw));
  });
}

}  // namespace kiln::cpu::im2col
