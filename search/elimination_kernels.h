// The arithmetic of one elimination step (elimination.h's EliminationPlan
// calls it per step of its order) and the buffers it works in: the table
// over the eliminated node's scope, the best of its unary plus its factors
// for every assignment, with the argmins. Internal to search/. Plain
// functions over caller-owned memory; EliminationWorkspace::Buffers belongs
// to one caller (thread) at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <vector>

#include "search/elimination.h"

namespace ofl {
namespace elimination_internal {

// A factor laid out so that x is its fastest axis: entry (scope
// assignment, c) at data[offset + c], the offset summing `strides` over the
// scope positions. `data` points into `copy`, or at the factor itself when
// its own layout is already that one (x fastest, its other variables in
// scope order, packed): then nothing is copied.
struct XFastFactor {
  const double* data = nullptr;
  std::vector<double> copy;
  std::vector<int64_t> strides;  // per scope position; 0 where the factor lacks it
};

}  // namespace elimination_internal

struct EliminationWorkspace::Buffers {
  std::vector<double> unary, small;
  std::vector<uint16_t> argmin;
  std::vector<std::vector<double>> built;  // per table factor: its entries while alive
  std::vector<std::vector<double>> spare;  // freed tables' buffers, for the next ones
  int64_t spare_entries = 0;
  std::vector<const double*> data;
  // MinOverFactors: the x-fast copies (outer ones first), the odometer, the sums.
  std::vector<elimination_internal::XFastFactor> copies;
  std::vector<int64_t> index, offsets;
  std::vector<double> partial, sum;

  // A buffer of at least `entries` (contents unspecified): the smallest spare
  // one that is large enough, else a new one.
  std::vector<double> Take(int64_t entries);
  // Keeps `buffer` (left empty) for a later Take when it is large, up to 16
  // spare buffers and 2^23 spare entries; else frees it.
  void Give(std::vector<double>& buffer);
};

namespace elimination_internal {

// The general case: for every assignment of the scope (m positions, last
// fastest; sizes[j] values each), the best of unary[c] + the sum of the nf
// factors (data[f], x's stride x_stride[f], the scope's strides at
// scope_stride[f * m..], 0 where absent) over x's kx candidates, into
// table[0, total) and argmin. False when `stop` (if not null) said stop
// (asked every 2^16 table entries); the table is then incomplete.
bool MinOverFactors(const double* unary, int kx, const double* const* data, int nf,
                    const int64_t* x_stride, const int64_t* scope_stride, const int64_t* sizes,
                    int m, double* table, int64_t total, uint16_t* argmin,
                    const std::function<bool()>* stop, EliminationWorkspace::Buffers& b);

// The common case of chains and trees, one factor over (x, s): for every s
// value t, the best of unary[c] + factor(c, t).
void MinOverOneFactor(const double* unary, int kx, const double* data, int64_t x_stride,
                      int64_t s_stride, int64_t s_size, double* table, uint16_t* argmin);

}  // namespace elimination_internal
}  // namespace ofl
