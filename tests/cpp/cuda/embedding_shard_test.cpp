// The vocabulary-shard embedding on CUDA against its CPU twin: the weight
// (forward) and dweight (backward) are rows [lo, lo + rows) of the logical
// [V, D] table, as under weight S(0); ids outside the shard give zero rows
// (the addends of a partial sum) and add nothing to dweight. Both kernels
// are also held against the rows worked out here from the ids.
#include "cuda_op_check.h"

namespace ofl::cuda_test {
namespace {

constexpr int64_t kVocab = 10, kRows = 4, kLo = 3, kDim = 5;  // the shard is rows [3, 7)

class EmbeddingShardTest : public CudaOpTest {
 protected:
  std::mt19937_64 rng_{7};
};

Tensor Ids(DataType dtype, const std::vector<int64_t>& values) {
  Tensor t(Shape({2, static_cast<int64_t>(values.size()) / 2}), dtype);
  for (size_t i = 0; i < values.size(); ++i) {
    if (dtype == DataType::kInt32) {
      t.data<int32_t>()[i] = static_cast<int32_t>(values[i]);
    } else {
      t.data<int64_t>()[i] = values[i];
    }
  }
  return t;
}

// Ids below, inside and above the shard, repeated inside it.
const std::vector<int64_t> kIds = {0, 3, 6, 9, 4, 4, 7, 2, 5, 3};

TEST_F(EmbeddingShardTest, ForwardGathersOnlyTheShardsRows) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    for (DataType l : {DataType::kInt32, DataType::kInt64}) {
      const Tensor weight = Random(Shape({kRows, kDim}), t, rng_);
      OpCall call("embedding", {weight, Ids(l, kIds)});
      call.input_logical_shapes = {Shape({kVocab, kDim}), Shape()};
      call.input_logical_offsets = {{kLo, 0}, {}};
      ExpectOpMatches(call);
      const Results r = RunBoth(call);
      ASSERT_TRUE(r.cpu_status.ok()) << r.cpu_status.ToString();
      for (size_t i = 0; i < kIds.size(); ++i) {
        const int64_t row = kIds[i] - kLo;
        for (int64_t c = 0; c < kDim; ++c) {
          const double want = row >= 0 && row < kRows ? ValueAt(weight, row * kDim + c) : 0.0;
          EXPECT_EQ(ValueAt(r.cpu[0], static_cast<int64_t>(i) * kDim + c), want) << i;
          EXPECT_EQ(ValueAt(r.cuda[0], static_cast<int64_t>(i) * kDim + c), want) << i;
        }
      }
    }
  }
}

TEST_F(EmbeddingShardTest, GradAddsOnlyIdsInsideTheShard) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64}) {
    for (DataType l : {DataType::kInt32, DataType::kInt64}) {
      const Tensor dy = Random(Shape({2, 5, kDim}), t, rng_);
      OpCall call("embedding_grad", {Ids(l, kIds), dy}, {{"num_embeddings", kVocab}});
      call.logical_shape = Shape({kVocab, kDim});
      call.logical_offset = {kLo, 0};
      call.output_shapes = {Shape({kRows, kDim})};
      ExpectOpMatches(call);
      const Results r = RunBoth(call);
      ASSERT_TRUE(r.cpu_status.ok()) << r.cpu_status.ToString();
      std::vector<double> want(kRows * kDim, 0.0);
      for (size_t i = 0; i < kIds.size(); ++i) {
        const int64_t row = kIds[i] - kLo;
        if (row < 0 || row >= kRows) continue;
        for (int64_t c = 0; c < kDim; ++c) {
          want[row * kDim + c] += ValueAt(dy, static_cast<int64_t>(i) * kDim + c);
        }
      }
      for (int64_t e = 0; e < kRows * kDim; ++e) {
        EXPECT_NEAR(ValueAt(r.cpu[0], e), want[e], 1e-6) << e;
        EXPECT_NEAR(ValueAt(r.cuda[0], e), want[e], 1e-6) << e;
      }
    }
  }
}

TEST_F(EmbeddingShardTest, AnIdOutsideTheLogicalVocabularyFailsOnBoth) {
  OpCall call("embedding", {Random(Shape({kRows, kDim}), DataType::kFloat32, rng_),
                            Ids(DataType::kInt64, {0, 3, 6, 10})});
  call.input_logical_shapes = {Shape({kVocab, kDim}), Shape()};
  call.input_logical_offsets = {{kLo, 0}, {}};
  const Results r = RunBoth(call);
  ASSERT_FALSE(r.cpu_status.ok());
  const Status& cuda = r.cuda_status.ok() ? r.device_error : r.cuda_status;
  ASSERT_FALSE(cuda.ok());
  EXPECT_EQ(cuda.message(), r.cpu_status.message());
}

}  // namespace
}  // namespace ofl::cuda_test
