// MatmulTilesOf: how the CPU matmul kernel (matmul_cpu.cpp) cuts one
// product's output (batch x m x n) into tiles that run side by side, each
// one single-threaded call over the whole contraction. The cut depends on
// the sizes alone, never on the number of threads, so every output element
// is summed in the same order however many threads run the tiles: results
// are bitwise the same with 1 thread or 16 (oneDNN's own threading
// partitions by thread count, which changed the last bits on AVX2 CPUs).
// Header-only, pure functions.
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

// Rows of one tile at least (unless the product has fewer): oneDNN's
// single-threaded AVX2 sgemm ran tiles of 256 rows, or of part of the
// columns, at half its speed on the whole product, and full-width tiles of
// 384 rows or more at par (bench/ops_matmul, 2 threads, AMD EPYC).
constexpr int64_t kMinRows = 384;
constexpr int64_t kAlign = 16;  // rows cut at multiples of this
// Small matrices of a batch are grouped up to this many outputs a tile.
constexpr int64_t kBatchOutputs = int64_t{1} << 17;
// A product of one row tile is cut into column tiles of at least this many
// columns, at most kMaxColumnTiles of them, when it has this many outputs
// at least: single-threaded, oneDNN's AVX2 sgemm ran 256 x 128..512 tiles
// contracted over 1024 at the speed of the whole 256 x 1024 product
// (AMD EPYC, the GPT step's weight gradients).
constexpr int64_t kMinCols = 128;
constexpr int64_t kMaxColumnTiles = 4;
constexpr int64_t kMinColumnCutOutputs = int64_t{1} << 15;

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

// The tiles of `d`, batch-major, then rows, then columns: whole matrices of
// a batch grouped, or row ranges with every column, or, for a product too
// short for two row tiles, column ranges (a weight gradient such as 256 x
// 1024 over 1024 tokens does not run on one thread while the others wait).
// They cover the output exactly once. Empty when the output is empty.
inline std::vector<MatmulTile> MatmulTilesOf(const MatmulDims& d) {
  using namespace matmul_tiles;
  std::vector<MatmulTile> tiles;
  const int64_t batch = d.batch > 0 ? d.batch : 1;
  if (d.m == 0 || d.n == 0) return tiles;
  if (d.batch > 0 && d.m * d.n <= kBatchOutputs) {  // whole matrices, several per tile
    const int64_t per_tile = kBatchOutputs / (d.m * d.n);
    const int64_t parts = (batch + per_tile - 1) / per_tile;
    for (auto [b0, b1] : Cut(batch, EvenPiece(batch, parts, 1))) {
      tiles.push_back({b0, b1, 0, d.m, 0, d.n});
    }
    return tiles;
  }
  const int64_t parts = std::max<int64_t>(1, d.m / kMinRows);
  const auto rows = Cut(d.m, EvenPiece(d.m, parts, kAlign));
  int64_t col_parts = 1;
  if (parts == 1 && d.m * d.n >= kMinColumnCutOutputs) {
    col_parts = std::clamp<int64_t>(d.n / kMinCols, 1, kMaxColumnTiles);
  }
  const auto cols = Cut(d.n, EvenPiece(d.n, col_parts, kAlign));
  for (int64_t b = 0; b < batch; ++b) {
    for (auto [r0, r1] : rows) {
      for (auto [c0, c1] : cols) tiles.push_back({b, b + 1, r0, r1, c0, c1});
    }
  }
  return tiles;
}

}  // namespace ofl
