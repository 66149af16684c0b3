// Boxing end to end: for every ordered pair of layouts over {S(0), S(1), B,
// P} on [4], on [2, 2] and across placements, on seeded random shapes
// (uneven, smaller than the group, empty, 3-D), plan (graph/boxing.h), emit
// the BOXING tasks, run each global rank's chain on its own thread with the
// communicators of BoxingGroups, and check every target rank's output
// against its slice of the logical tensor, worked out here (for P: the sum
// over ranks), and the bytes the communicators counted against the plan's.
// Values are small integers, so every dtype sums exactly. A deadlock fails
// through the communicators' timeout.
#include <gtest/gtest.h>

#include <cstdlib>
#include <iostream>
#include <random>
#include <thread>

#include "graph/boxing.h"
#include "graph/boxing_tasks.h"
#include "graph/op_graph.h"
#include "runtime/boxing.h"

namespace ofl {
namespace {

constexpr uint64_t kSeed = 20240611;

Placement Make(std::vector<int64_t> ranks, Shape hierarchy = {}) {
  return Placement::Create(DeviceType::kCPU, std::move(ranks), std::move(hierarchy)).value();
}

std::vector<NdSbp> AllLayouts(int64_t axes) {
  const std::vector<Sbp> one = {Sbp::Split(0), Sbp::Split(1), Sbp::Broadcast(), Sbp::PartialSum()};
  std::vector<NdSbp> out;
  if (axes == 1) {
    for (const Sbp& s : one) out.push_back(NdSbp({s}));
  } else {
    for (const Sbp& a : one) {
      for (const Sbp& b : one) out.push_back(NdSbp({a, b}));
    }
  }
  return out;
}

// The block a rank of `hierarchy` at `coords` holds, worked out here from
// DESIGN.md section 3 (outer axis first, first n % p parts one row longer).
struct Block {
  std::vector<int64_t> offset;
  std::vector<int64_t> shape;
};
Block BlockOf(const Shape& logical, const Shape& hierarchy, const NdSbp& sbp,
              const std::vector<int64_t>& coords) {
  Block b{std::vector<int64_t>(logical.ndim(), 0), logical.dims()};
  for (int64_t a = 0; a < hierarchy.ndim(); ++a) {
    if (!sbp[a].is_split()) continue;
    const int64_t d = sbp[a].axis(), n = b.shape[d], p = hierarchy[a], k = coords[a];
    b.offset[d] += k * (n / p) + std::min(k, n % p);
    b.shape[d] = n / p + (k < n % p ? 1 : 0);
  }
  return b;
}

int64_t Count(const std::vector<int64_t>& shape) {
  int64_t n = 1;
  for (int64_t v : shape) n *= v;
  return n;
}

// Logical linear index of element `i` (row-major) of `block`.
int64_t LogicalIndex(const Shape& logical, const Block& block, int64_t i) {
  int64_t index = 0;
  for (int64_t d = logical.ndim() - 1, stride = 1; d >= 0; --d) {
    index += (block.offset[d] + i % block.shape[d]) * stride;
    i /= block.shape[d];
    stride *= logical[d];
  }
  return index;
}

double Get(const Tensor& t, int64_t i) {
  switch (t.dtype()) {
    case DataType::kFloat32:
      return t.data<float>()[i];
    case DataType::kFloat64:
      return t.data<double>()[i];
    case DataType::kInt32:
      return t.data<int32_t>()[i];
    default:
      return static_cast<double>(t.data<int64_t>()[i]);
  }
}
void Set(Tensor* t, int64_t i, double v) {
  switch (t->dtype()) {
    case DataType::kFloat32:
      t->data<float>()[i] = static_cast<float>(v);
      break;
    case DataType::kFloat64:
      t->data<double>()[i] = v;
      break;
    case DataType::kInt32:
      t->data<int32_t>()[i] = static_cast<int32_t>(v);
      break;
    default:
      t->data<int64_t>()[i] = static_cast<int64_t>(v);
      break;
  }
}

// Each rank's slice under `sbp`. P: ranks that differ only in their P
// coordinates hold random addends that sum to the value; B replicas agree.
std::vector<Tensor> SourceSlices(const std::vector<double>& logical, const TensorDesc& desc,
                                 const Placement& p, const NdSbp& sbp, std::mt19937_64* rng) {
  std::map<std::vector<int64_t>, std::vector<double>>
      addends;  // keyed by the rank's coords, B zeroed
  std::vector<int64_t> partial_axes;
  for (int64_t a = 0; a < sbp.size(); ++a) {
    if (sbp[a].is_partial_sum()) partial_axes.push_back(a);
  }
  std::uniform_int_distribution<int> small(-9, 9);
  std::vector<Tensor> out;
  for (int64_t i = 0; i < p.size(); ++i) {
    std::vector<int64_t> key = p.Coordinates(i);
    for (int64_t a = 0; a < sbp.size(); ++a) {
      if (sbp[a].is_broadcast()) key[a] = 0;
    }
    Block block = BlockOf(desc.shape, p.hierarchy(), sbp, key);
    const int64_t n = Count(block.shape);
    std::vector<double> values(n);
    for (int64_t e = 0; e < n; ++e) values[e] = logical[LogicalIndex(desc.shape, block, e)];
    // The last addend (every P coordinate at its maximum) takes the rest.
    std::vector<int64_t> sibling = key;
    bool last = true;
    for (int64_t a : partial_axes) last = last && key[a] == p.hierarchy()[a] - 1;
    if (!partial_axes.empty() && !last) {
      if (!addends.count(key)) {
        std::vector<double> r(n);
        for (double& v : r) v = small(*rng);
        addends[key] = r;
      }
      values = addends[key];
    } else if (!partial_axes.empty()) {
      // Sum every other combination of P coordinates.
      const int64_t combos = [&] {
        int64_t c = 1;
        for (int64_t a : partial_axes) c *= p.hierarchy()[a];
        return c;
      }();
      for (int64_t c = 0; c < combos - 1; ++c) {
        int64_t rest = c;
        for (auto it = partial_axes.rbegin(); it != partial_axes.rend(); ++it) {
          sibling[*it] = rest % p.hierarchy()[*it];
          rest /= p.hierarchy()[*it];
        }
        if (!addends.count(sibling)) {
          std::vector<double> r(n);
          for (double& v : r) v = small(*rng);
          addends[sibling] = r;
        }
        for (int64_t e = 0; e < n; ++e) values[e] -= addends[sibling][e];
      }
    }
    Tensor t(Shape(block.shape), desc.dtype);
    for (int64_t e = 0; e < n; ++e) Set(&t, e, values[e]);
    out.push_back(t);
  }
  return out;
}

int64_t IndexOf(const Placement& p, const std::vector<int64_t>& coords) {
  int64_t index = 0;
  for (int64_t a = 0; a < p.hierarchy().ndim(); ++a) index = index * p.hierarchy()[a] + coords[a];
  return index;
}

// Plans, emits, runs and checks one conversion; returns a failure message.
std::string RunCase(const TensorDesc& desc, const Placement& fp, const NdSbp& from,
                    const Placement& tp, const NdSbp& to, std::mt19937_64* rng,
                    std::map<std::string, int64_t>* kinds,
                    std::map<int64_t, int64_t>* counted_out = nullptr) {
  const std::string what = StrCat(desc.shape, " ", DataTypeName(desc.dtype), " ", from, " on ",
                                  fp.ToString(), " -> ", to, " on ", tp.ToString());
  std::vector<double> logical(desc.shape.NumElements());
  std::uniform_int_distribution<int> values(-20, 20);
  for (double& v : logical) v = values(*rng);
  std::vector<Tensor> sources = SourceSlices(logical, desc, fp, from, rng);

  auto plan = PlanBoxing(desc, fp, from, tp, to, "x");
  if (!plan.ok()) return what + ": " + plan.status().message();
  for (const auto& step : plan.value().steps) ++(*kinds)[BoxingKindName(step.kind)];
  int64_t num_ranks = 0;
  for (int64_t r : fp.ranks()) num_ranks = std::max(num_ranks, r + 1);
  for (int64_t r : tp.ranks()) num_ranks = std::max(num_ranks, r + 1);
  PlanBuilder builder(num_ranks);
  std::vector<int64_t> inputs;
  for (int64_t i = 0; i < fp.size(); ++i) {
    inputs.push_back(builder.AddRegister("x", fp.ranks()[i], {sources[i].shape(), desc.dtype}));
  }
  std::vector<int64_t> outputs = EmitBoxing(plan.value(), "x", inputs, &builder);
  const proto::Plan physical = builder.Release();
  auto groups = BoxingGroups::Create(physical, std::chrono::milliseconds(10000));
  if (!groups.ok()) return what + ": " + groups.status().message();
  std::vector<Tensor> registers;
  for (const auto& r : physical.registers()) {
    registers.emplace_back(DescFromProto(r.desc()).value().shape, desc.dtype);
  }
  for (int64_t i = 0; i < fp.size(); ++i) registers[inputs[i]].CopyFrom(sources[i]);

  std::vector<std::string> errors(num_ranks);
  std::vector<std::thread> threads;
  for (int64_t rank = 0; rank < num_ranks; ++rank) {
    threads.emplace_back([&, rank] {
      for (const auto& task : physical.tasks()) {
        if (task.rank() != rank) continue;
        Tensor none;
        const Tensor& in = task.inputs_size() > 0 ? registers[task.inputs(0)] : none;
        Tensor* out = task.outputs_size() > 0 ? &registers[task.outputs(0)] : nullptr;
        Status s =
            RunBoxingStep(task, in, out, groups.value()->For(task.boxing_conf().group_id(), rank));
        if (!s.ok()) {
          errors[rank] = s.message();
          return;
        }
      }
    });
  }
  for (auto& t : threads) t.join();
  for (const auto& e : errors) {
    if (!e.empty()) return what + ": " + e + "\n" + plan.value().ToString();
  }

  // Outputs: replicas along B agree; the reps (B coordinates 0) summed in
  // place give the logical tensor, and without P each one is its block.
  std::vector<double> sum(logical.size(), 0.0);
  for (int64_t i = 0; i < tp.size(); ++i) {
    std::vector<int64_t> coords = tp.Coordinates(i), rep = coords;
    for (int64_t a = 0; a < to.size(); ++a) {
      if (to[a].is_broadcast()) rep[a] = 0;
    }
    Block block = BlockOf(desc.shape, tp.hierarchy(), to, coords);
    const Tensor& out = registers[outputs[i]];
    if (out.shape().dims() != block.shape)
      return StrCat(what, ": rank ", i, " shape ", out.shape());
    const Tensor& rep_out = registers[outputs[IndexOf(tp, rep)]];
    for (int64_t e = 0; e < out.numel(); ++e) {
      if (Get(out, e) != Get(rep_out, e)) return StrCat(what, ": replica ", i, " differs at ", e);
      if (rep == coords) sum[LogicalIndex(desc.shape, block, e)] += Get(out, e);
    }
  }
  for (size_t e = 0; e < logical.size(); ++e) {
    if (sum[e] != logical[e]) {
      return StrCat(what, ": element ", e, " is ", sum[e], ", expected ", logical[e], "\n",
                    plan.value().ToString());
    }
  }
  std::map<int64_t, int64_t> counted = groups.value()->BytesSentByRank();
  if (counted_out != nullptr) *counted_out = counted;
  for (const auto& [rank, bytes] : plan.value().bytes_sent) {
    if (counted[rank] != bytes) {
      return StrCat(what, ": rank ", rank, " sent ", counted[rank], " bytes, the plan says ", bytes,
                    "\n", plan.value().ToString());
    }
  }
  for (const auto& [rank, bytes] : counted) {
    if (bytes != 0 && !plan.value().bytes_sent.count(rank)) return what + ": unplanned bytes";
  }
  return "";
}

uint64_t Seed() {
  const char* env = std::getenv("OFL_BOXING_SEED");
  return env != nullptr ? std::strtoull(env, nullptr, 10) : kSeed;
}

bool HasSplit(const NdSbp& sbp) {
  for (const Sbp& s : sbp.axes()) {
    if (s.is_split()) return true;
  }
  return false;
}

// Every target layout of tp's rank for each of `froms`, on four shapes each
// (a scalar too when neither layout splits); `salt` varies the stream.
void RunPairs(const Placement& fp, const std::vector<NdSbp>& froms, const Placement& tp,
              uint64_t salt) {
  const uint64_t seed = Seed() + salt;
  std::cout << "boxing seed " << seed << " (OFL_BOXING_SEED=" << Seed() << ")" << std::endl;
  std::mt19937_64 rng(seed);
  const std::vector<DataType> dtypes = {DataType::kFloat32, DataType::kFloat64, DataType::kInt32,
                                        DataType::kInt64};
  int64_t runs = 0;
  std::map<std::string, int64_t> kinds;
  for (const NdSbp& from : froms) {
    for (const NdSbp& to : AllLayouts(tp.hierarchy().ndim())) {
      std::uniform_int_distribution<int64_t> dim2(0, 7), dim3(0, 5);
      std::vector<Shape> shapes = {Shape({5, 3}), Shape({1, 2}), Shape({dim2(rng), dim2(rng)}),
                                   Shape({dim3(rng), dim3(rng), dim3(rng)})};
      if (!HasSplit(from) && !HasSplit(to)) shapes.push_back(Shape());
      for (const Shape& shape : shapes) {
        const TensorDesc desc{shape, dtypes[runs++ % dtypes.size()]};
        std::string failure = RunCase(desc, fp, from, tp, to, &rng, &kinds);
        if (!failure.empty()) ADD_FAILURE() << "seed " << seed << ": " << failure;
      }
    }
  }
  std::cout << runs << " conversions checked; steps:";
  for (const auto& [kind, n] : kinds) std::cout << " " << kind << " " << n;
  std::cout << std::endl;
}

TEST(BoxingRunTest, EveryPairOnFourRanks) {
  const Placement p = Make({0, 1, 2, 3});
  RunPairs(p, AllLayouts(1), p, 0);
}

class BoxingRunGridTest : public ::testing::TestWithParam<int> {};

// One source layout per instance (16), every target: 256 pairs on [2, 2].
TEST_P(BoxingRunGridTest, EveryPairOnTwoByTwo) {
  const Placement p = Make({0, 1, 2, 3}, {2, 2});
  RunPairs(p, {AllLayouts(2)[GetParam()]}, p, 100 + GetParam());
}
INSTANTIATE_TEST_SUITE_P(Sources, BoxingRunGridTest, ::testing::Range(0, 16));

// Meshes of 2 x 3 and 3 x 2: one source layout per instance, every target.
class BoxingRunSixTest : public ::testing::TestWithParam<std::tuple<int, int>> {};

TEST_P(BoxingRunSixTest, EveryPairOnSixRanks) {
  const auto [mesh, source] = GetParam();
  const Placement p = Make({0, 1, 2, 3, 4, 5}, mesh == 0 ? Shape({2, 3}) : Shape({3, 2}));
  RunPairs(p, {AllLayouts(2)[source]}, p, 700 + 16 * mesh + source);
}
INSTANTIATE_TEST_SUITE_P(Sources, BoxingRunSixTest,
                         ::testing::Combine(::testing::Range(0, 2), ::testing::Range(0, 16)));

// The two conversions that once moved up to 4x what the ranks lack,
// 600 x 600 float32: values as everywhere here, and each rank's bytes as
// the communicators count them, worked out by hand (graph/boxing_test.cpp
// has the arithmetic: each rank sends what the least-loaded holder of a box
// another rank lacks sends).
std::map<int64_t, int64_t> NonZero(std::map<int64_t, int64_t> bytes) {
  for (auto it = bytes.begin(); it != bytes.end();) it = it->second == 0 ? bytes.erase(it) : ++it;
  return bytes;
}

TEST(BoxingRunTest, SeveralAxesMoveOnlyWhatIsMissing) {
  std::mt19937_64 rng(Seed() + 800);
  std::map<std::string, int64_t> kinds;
  const TensorDesc x{Shape({600, 600}), DataType::kFloat32};
  std::map<int64_t, int64_t> counted;
  const Placement two_by_three = Make({0, 1, 2, 3, 4, 5}, {2, 3});
  const NdSbp s0_b = NdSbp::Parse("(S(0), B)").value();
  const NdSbp s1_s0 = NdSbp::Parse("(S(1), S(0))").value();
  EXPECT_EQ(RunCase(x, two_by_three, s0_b, two_by_three, s1_s0, &rng, &kinds, &counted), "");
  // 720,000 bytes in all, not the all-to-all's 2,160,000.
  EXPECT_EQ(NonZero(counted),
            (std::map<int64_t, int64_t>{{0, 240000}, {1, 120000}, {3, 120000}, {4, 240000}}));
  const Placement three_by_two = Make({0, 1, 2, 3, 4, 5}, {3, 2});
  const NdSbp b_s0 = NdSbp::Parse("(B, S(0))").value();
  const NdSbp s0_b2 = NdSbp::Parse("(S(0), B)").value();
  EXPECT_EQ(RunCase(x, three_by_two, b_s0, three_by_two, s0_b2, &rng, &kinds, &counted), "");
  // 1,440,000 bytes in all, not the all-gather's 4,320,000.
  EXPECT_EQ(NonZero(counted),
            (std::map<int64_t, int64_t>{{0, 480000}, {1, 240000}, {2, 240000}, {3, 480000}}));
  EXPECT_EQ(kinds, (std::map<std::string, int64_t>{{"SEND_RECV", 2}}));
}

TEST(BoxingRunTest, TwoRanksToThreeOthers) {
  RunPairs(Make({0, 1}), AllLayouts(1), Make({2, 3, 4}), 200);
}

TEST(BoxingRunTest, FlatToGridOnOtherRanks) {
  RunPairs(Make({0, 1, 2, 3}), AllLayouts(1), Make({4, 5, 6, 7}, {2, 2}), 300);
}

TEST(BoxingRunTest, FlatToGridOnTheSameRanks) {
  RunPairs(Make({0, 1, 2, 3}), AllLayouts(1), Make({0, 1, 2, 3}, {2, 2}), 400);
}

TEST(BoxingRunTest, GridToThreeOverlappingRanks) {
  RunPairs(Make({0, 1, 2, 3}, {2, 2}), AllLayouts(2), Make({1, 2, 3}), 500);
}

TEST(BoxingRunTest, GridToPermutedGrid) {
  // Same hierarchy, ranks in another order: a different placement.
  const std::vector<NdSbp> some = {NdSbp::Parse("(S(0), B)").value(),
                                   NdSbp::Parse("(P, S(1))").value(),
                                   NdSbp::Parse("(S(1), S(0))").value()};
  RunPairs(Make({3, 1, 0, 2}, {2, 2}), some, Make({0, 1, 2, 3}, {2, 2}), 600);
}

}  // namespace
}  // namespace ofl
