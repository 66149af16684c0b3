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
    ASSERT_LE(t.b1, batch);
    ASSERT_LE(t.r1, d.m);
    ASSERT_LT(t.c0, t.c1);
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
      for (int64_t n : {1, 7, 130, 512, 513, 1500}) {
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
  // 64 x 64 (and a long contraction): fewer than 2 x 384 rows, and fewer
  // than 2^15 outputs for a column cut: one tile.
  std::vector<MatmulTile> tiles = MatmulTilesOf(Dims(0, 64, 64, 8192));
  ASSERT_EQ(tiles.size(), 1u);
  EXPECT_EQ(tiles[0], (MatmulTile{0, 1, 0, 64, 0, 64}));
  // 100 x 300: 30,000 outputs, still one tile.
  tiles = MatmulTilesOf(Dims(0, 100, 300, 4096));
  ASSERT_EQ(tiles.size(), 1u);
  EXPECT_EQ(tiles[0], (MatmulTile{0, 1, 0, 100, 0, 300}));
}

TEST(MatmulTilesTest, RowsCutByHand) {
  // 1024 rows: 1024 / 384 = 2 pieces of 512, every column in each.
  std::vector<MatmulTile> tiles = MatmulTilesOf(Dims(0, 1024, 3000, 256));
  ASSERT_EQ(tiles.size(), 2u);
  EXPECT_EQ(tiles[0], (MatmulTile{0, 1, 0, 512, 0, 3000}));
  EXPECT_EQ(tiles[1], (MatmulTile{0, 1, 512, 1024, 0, 3000}));
  // 1000 rows: 2 pieces of 500 rounded up to 512: 512 + 488.
  tiles = MatmulTilesOf(Dims(0, 1000, 7, 5));
  ASSERT_EQ(tiles.size(), 2u);
  EXPECT_EQ(tiles[1], (MatmulTile{0, 1, 512, 1000, 0, 7}));
  // 4000 rows: 10 pieces of 400 (a multiple of 16).
  tiles = MatmulTilesOf(Dims(0, 4000, 100, 100));
  ASSERT_EQ(tiles.size(), 10u);
  EXPECT_EQ(tiles[9], (MatmulTile{0, 1, 3600, 4000, 0, 100}));
  // 767 x 100 rows: one row piece (767 / 384 = 1), cut by columns below.
  EXPECT_EQ(MatmulTilesOf(Dims(0, 767, 100, 100)).size(), 1u);
}

TEST(MatmulTilesTest, ColumnsCutWhenRowsAreFew) {
  // 256 x 1024 (a weight gradient): one row piece; 1024 / 128 = 8 column
  // pieces, at most 4: 4 of 256.
  std::vector<MatmulTile> tiles = MatmulTilesOf(Dims(0, 256, 1024, 1024));
  ASSERT_EQ(tiles.size(), 4u);
  EXPECT_EQ(tiles[0], (MatmulTile{0, 1, 0, 256, 0, 256}));
  EXPECT_EQ(tiles[3], (MatmulTile{0, 1, 0, 256, 768, 1024}));
  // 256 x 256: 2 of 128.
  tiles = MatmulTilesOf(Dims(0, 256, 256, 1024));
  ASSERT_EQ(tiles.size(), 2u);
  EXPECT_EQ(tiles[1], (MatmulTile{0, 1, 0, 256, 128, 256}));
  // 300 x 700: 700 / 128 = 5, at most 4 pieces of 175 rounded up to 176.
  tiles = MatmulTilesOf(Dims(0, 300, 700, 64));
  ASSERT_EQ(tiles.size(), 4u);
  EXPECT_EQ(tiles[3], (MatmulTile{0, 1, 0, 300, 528, 700}));
  // 100 x 1000 (100,000 outputs) is cut; 1024 rows never are (two row pieces).
  EXPECT_EQ(MatmulTilesOf(Dims(0, 100, 1000, 64)).size(), 4u);
  EXPECT_EQ(MatmulTilesOf(Dims(0, 1024, 1024, 64)).size(), 2u);
}

TEST(MatmulTilesTest, SmallMatricesGroupedByBatch) {
  // 32 x 128 matrices (4096 outputs): 2^17 / 4096 = 32 a tile; 100 of them
  // in 4 pieces of 25.
  std::vector<MatmulTile> tiles = MatmulTilesOf(Dims(100, 32, 128, 64));
  ASSERT_EQ(tiles.size(), 4u);
  EXPECT_EQ(tiles[0], (MatmulTile{0, 25, 0, 32, 0, 128}));
  EXPECT_EQ(tiles[3], (MatmulTile{75, 100, 0, 32, 0, 128}));
  // 3 matrices of 800 x 200 (160,000 outputs, above 2^17): each cut by rows,
  // 800 / 384 = 2 pieces of 400.
  tiles = MatmulTilesOf(Dims(3, 800, 200, 64));
  ASSERT_EQ(tiles.size(), 6u);
  EXPECT_EQ(tiles[3], (MatmulTile{1, 2, 400, 800, 0, 200}));
}

TEST(MatmulTilesTest, CutDoesNotDependOnAnythingButSizes) {
  // Only the output's sizes cut: a transposed layout changes strides, not
  // the cut, and the contraction's length does not enter.
  MatmulDims a = Dims(2, 300, 700, 256), b = a;
  b.ta = b.tb = true;
  b.k = 9999;  // nor the contraction's length
  EXPECT_EQ(MatmulTilesOf(a), MatmulTilesOf(b));
}

}  // namespace
}  // namespace ofl
