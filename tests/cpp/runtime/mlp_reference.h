// MlpReference: a two-layer MLP training step in plain loops over doubles,
// the independent oracle the runtime tests hold the actors against (no op
// kernel, no plan): y = relu(x w1) w2; the loss's gradient with respect to
// every element of y is the constant `dy` (loss = sum(2 y): 2; loss =
// mean(y): 1 / numel); SGD with momentum on w1 and w2 as PyTorch (buf =
// momentum * buf + g; w -= lr * buf; buffers start at zero). Row-major
// matrices. Test-only; not synchronised.
#pragma once

#include <cstdint>
#include <vector>

#include "oneflow_lite/core/tensor.h"

namespace ofl {

class MlpReference {
 public:
  // x [n, d] -> w1 [d, h] -> relu -> w2 [h, o].
  MlpReference(int64_t d, int64_t h, int64_t o, const Tensor& w1, const Tensor& w2)
      : d_(d), h_(h), o_(o), w1_(Values(w1)), w2_(Values(w2)), m1_(d * h), m2_(h * o) {}

  // One step on x [n, d]: returns y [n, o] of the forward, then updates.
  std::vector<double> Step(const Tensor& x, double dy, double lr, double momentum) {
    const std::vector<double> in = Values(x);
    const int64_t n = static_cast<int64_t>(in.size()) / d_;
    std::vector<double> a = MatMul(in, w1_, n, d_, h_);
    for (double& v : a) v = v > 0 ? v : 0;
    const std::vector<double> y = MatMul(a, w2_, n, h_, o_);
    // dw2 = a^T dy; da = dy w2^T, masked by relu; dw1 = x^T da.
    std::vector<double> dw2(h_ * o_), da(n * h_), dw1(d_ * h_);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t k = 0; k < h_; ++k) {
        for (int64_t j = 0; j < o_; ++j) {
          dw2[k * o_ + j] += a[i * h_ + k] * dy;
          da[i * h_ + k] += dy * w2_[k * o_ + j];
        }
        if (a[i * h_ + k] <= 0) da[i * h_ + k] = 0;
      }
    }
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t p = 0; p < d_; ++p) {
        for (int64_t k = 0; k < h_; ++k) dw1[p * h_ + k] += in[i * d_ + p] * da[i * h_ + k];
      }
    }
    Update(&w1_, &m1_, dw1, lr, momentum);
    Update(&w2_, &m2_, dw2, lr, momentum);
    return y;
  }

  const std::vector<double>& w1() const { return w1_; }
  const std::vector<double>& w2() const { return w2_; }
  const std::vector<double>& m2() const { return m2_; }

  static std::vector<double> Values(const Tensor& t) {
    return std::vector<double>(t.data<float>(), t.data<float>() + t.numel());
  }

 private:
  static std::vector<double> MatMul(const std::vector<double>& a, const std::vector<double>& b,
                                    int64_t n, int64_t k, int64_t m) {
    std::vector<double> c(n * m);
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t p = 0; p < k; ++p) {
        for (int64_t j = 0; j < m; ++j) c[i * m + j] += a[i * k + p] * b[p * m + j];
      }
    }
    return c;
  }
  static void Update(std::vector<double>* w, std::vector<double>* buf, const std::vector<double>& g,
                     double lr, double momentum) {
    for (size_t i = 0; i < w->size(); ++i) {
      (*buf)[i] = momentum * (*buf)[i] + g[i];
      (*w)[i] -= lr * (*buf)[i];
    }
  }

  int64_t d_, h_, o_;
  std::vector<double> w1_, w2_, m1_, m2_;
};

}  // namespace ofl
