// MatmulTilesOf: how the CPU matmul kernel (matmul_cpu.cpp) cuts one
// product's output (batch x m x n) into tiles that run side by side, each
// as one single-threaded call over the whole contraction. The cut depends on
// the sizes alone, never on the number of threads, so every output element
// is summed in the same order however many threads run the tiles: results
// are bitwise the same with 1 thread or 16. (oneDNN's own threading splits
// the contraction by thread count on some CPUs, AVX2 among them, and so
// changes the last bits with the thread count.) Header-only, pure functions.
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

#include "ops/math/matmul_dims.h"

namespace ofl {

// Half-open ranges of batch elements, rows and columns of the output. For a
// plain 2-D product b0 = 0, b1 = 1.
struct MatmulTile {
  int64_t b0 = 0, b1 = 1;
  int64_t r0 = 0, r1 = 0;
  int64_t c0 = 0, c1 = 0;
  bool operator==(const MatmulTile& o) const {
    return b0 == o.b0 && b1 == o.b1 && r0 == o.r0 && r1 == o.r1 && c0 == o.c0 && c1 == o.c1;
  }
};

namespace matmul_tiles {

constexpr int64_t kMaxCols = 512;       // columns of one tile at most
constexpr int64_t kAlign = 16;          // rows and columns cut at multiples of this
constexpr int64_t kWork = int64_t{1} << 23;  // multiply-adds one tile aims at
constexpr int64_t kMinOutputs = int64_t{1} << 12;
constexpr int64_t kMaxOutputs = int64_t{1} << 16;

// Outputs one tile aims at: about kWork multiply-adds, within the bounds.
inline int64_t TargetOutputs(int64_t k) {
  return std::clamp(kWork / std::max<int64_t>(1, k), kMinOutputs, kMaxOutputs);
}

// `total` cut into `parts` pieces of equal size rounded up to `align`
// (the last piece takes the rest): the piece's size.
inline int64_t EvenPiece(int64_t total, int64_t parts, int64_t align) {
  const int64_t piece = (total + parts - 1) / parts;
  return std::min(total, (piece + align - 1) / align * align);
}

inline std::vector<std::pair<int64_t, int64_t>> Cut(int64_t total, int64_t piece) {
  std::vector<std::pair<int64_t, int64_t>> ranges;
  for (int64_t begin = 0; begin < total; begin += piece) {
    ranges.emplace_back(begin, std::min(total, begin + piece));
  }
  return ranges;
}

}  // namespace matmul_tiles

// The tiles of `d`, batch-major, then rows, then columns; they cover the
// output exactly once. Empty when the output is empty.
inline std::vector<MatmulTile> MatmulTilesOf(const MatmulDims& d) {
  using namespace matmul_tiles;
  std::vector<MatmulTile> tiles;
  const int64_t batch = d.batch > 0 ? d.batch : 1;
  if (batch == 0 || d.m == 0 || d.n == 0) return tiles;
  const int64_t target = TargetOutputs(d.k);
  if (d.batch > 0 && d.m * d.n <= target) {  // whole matrices, several per tile
    const int64_t per_tile = std::max<int64_t>(1, target / (d.m * d.n));
    const int64_t parts = (batch + per_tile - 1) / per_tile;
    for (auto [b0, b1] : Cut(batch, EvenPiece(batch, parts, 1))) {
      tiles.push_back({b0, b1, 0, d.m, 0, d.n});
    }
    return tiles;
  }
  const int64_t col_piece = EvenPiece(d.n, (d.n + kMaxCols - 1) / kMaxCols, kAlign);
  const int64_t rows_wanted = std::max(kAlign, target / col_piece / kAlign * kAlign);
  const int64_t row_piece = EvenPiece(d.m, (d.m + rows_wanted - 1) / rows_wanted, kAlign);
  const auto rows = Cut(d.m, row_piece), cols = Cut(d.n, col_piece);
  for (int64_t b = 0; b < batch; ++b) {
    for (auto [r0, r1] : rows) {
      for (auto [c0, c1] : cols) tiles.push_back({b, b + 1, r0, r1, c0, c1});
    }
  }
  return tiles;
}

}  // namespace ofl
