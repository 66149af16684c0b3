// MatmulTilesOf (ops/math/matmul_tiles.h): every output element in exactly
// one tile, and the cuts of a few sizes worked out by hand.
#include "ops/math/matmul_tiles.h"

#include <gtest/gtest.h>

#include <vector>

namespace ofl {
namespace {

MatmulDims Dims(int64_t batch, int64_t m, int64_t n, int64_t k) {
  MatmulDims d;
  d.batch = batch;
  d.m = m;
  d.n = n;
  d.k = k;
  return d;
}

// Counts how often each output element is covered.
void ExpectExactCover(const MatmulDims& d) {
  const int64_t batch = d.batch > 0 ? d.batch : 1;
  std::vector<int> seen(static_cast<size_t>(batch * d.m * d.n), 0);
  for (const MatmulTile& t : MatmulTilesOf(d)) {
    ASSERT_LT(t.b0, t.b1);
    ASSERT_LT(t.r0, t.r1);
    ASSERT_LT(t.c0, t.c1);
    ASSERT_LE(t.b1, batch);
    ASSERT_LE(t.r1, d.m);
    ASSERT_LE(t.c1, d.n);
    for (int64_t b = t.b0; b < t.b1; ++b) {
      for (int64_t r = t.r0; r < t.r1; ++r) {
        for (int64_t c = t.c0; c < t.c1; ++c) ++seen[(b * d.m + r) * d.n + c];
      }
    }
  }
  for (size_t i = 0; i < seen.size(); ++i) {
    ASSERT_EQ(seen[i], 1) << "element " << i << " of " << d.batch << "x" << d.m << "x" << d.n;
  }
}

TEST(MatmulTilesTest, CoverEveryOutputOnce) {
  for (int64_t batch : {0, 1, 3, 17}) {
    for (int64_t m : {1, 15, 16, 33, 257, 1000}) {
      for (int64_t n : {1, 7, 512, 513, 1500}) {
        for (int64_t k : {1, 64, 4096}) ExpectExactCover(Dims(batch, m, n, k));
      }
    }
  }
}

TEST(MatmulTilesTest, EmptyOutputHasNoTiles) {
  EXPECT_TRUE(MatmulTilesOf(Dims(0, 0, 5, 3)).empty());
  EXPECT_TRUE(MatmulTilesOf(Dims(0, 5, 0, 3)).empty());
}

TEST(MatmulTilesTest, SmallProductIsOneTile) {
  // 64 x 64 outputs, k = 64: 4096 outputs, within one tile.
  const std::vector<MatmulTile> tiles = MatmulTilesOf(Dims(0, 64, 64, 64));
  ASSERT_EQ(tiles.size(), 1u);
  EXPECT_EQ(tiles[0], (MatmulTile{0, 1, 0, 64, 0, 64}));
}

TEST(MatmulTilesTest, LargeProductCutByHand) {
  // 1024 x 1024 x 1024: target 2^23 / 1024 = 8192 outputs per tile. Columns
  // in 2 pieces of 512; rows 8192 / 512 = 16 per tile: 64 x 2 tiles.
  const std::vector<MatmulTile> tiles = MatmulTilesOf(Dims(0, 1024, 1024, 1024));
  ASSERT_EQ(tiles.size(), 128u);
  EXPECT_EQ(tiles[0], (MatmulTile{0, 1, 0, 16, 0, 512}));
  EXPECT_EQ(tiles[1], (MatmulTile{0, 1, 0, 16, 512, 1024}));
  EXPECT_EQ(tiles[127], (MatmulTile{0, 1, 1008, 1024, 512, 1024}));
}

TEST(MatmulTilesTest, UnevenSizesCutByHand) {
  // 100 x 600, k = 128: target 2^16 (2^23 / 128). 600 columns: 2 pieces of
  // 300 rounded up to 304 (304 + 296); rows 65536 / 304 = 215 -> 208, so all
  // 100 rows in one piece: 2 tiles.
  const std::vector<MatmulTile> tiles = MatmulTilesOf(Dims(0, 100, 600, 128));
  ASSERT_EQ(tiles.size(), 2u);
  EXPECT_EQ(tiles[0], (MatmulTile{0, 1, 0, 100, 0, 304}));
  EXPECT_EQ(tiles[1], (MatmulTile{0, 1, 0, 100, 304, 600}));
}

TEST(MatmulTilesTest, SmallMatricesGroupedByBatch) {
  // 10 matrices of 32 x 32 (1024 outputs), k = 32: target 2^16, so 64
  // matrices fit in one tile; with k = 4096, target 2^12 (2^23 / 4096 = 2048,
  // raised to the minimum 4096): 4 per tile, 10 in 3 pieces of 4, 4, 2.
  std::vector<MatmulTile> tiles = MatmulTilesOf(Dims(10, 32, 32, 32));
  ASSERT_EQ(tiles.size(), 1u);
  EXPECT_EQ(tiles[0], (MatmulTile{0, 10, 0, 32, 0, 32}));
  tiles = MatmulTilesOf(Dims(10, 32, 32, 4096));
  ASSERT_EQ(tiles.size(), 3u);
  EXPECT_EQ(tiles[0], (MatmulTile{0, 4, 0, 32, 0, 32}));
  EXPECT_EQ(tiles[1], (MatmulTile{4, 8, 0, 32, 0, 32}));
  EXPECT_EQ(tiles[2], (MatmulTile{8, 10, 0, 32, 0, 32}));
}

TEST(MatmulTilesTest, CutDoesNotDependOnAnythingButSizes) {
  // Same sizes, same tiles: the function has no other input; a transposed
  // layout changes strides, not the cut.
  MatmulDims a = Dims(2, 300, 700, 256), b = a;
  b.ta = b.tb = true;
  EXPECT_EQ(MatmulTilesOf(a), MatmulTilesOf(b));
}

}  // namespace
}  // namespace ofl
