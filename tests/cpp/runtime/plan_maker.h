// PlanMaker: builds small Plans by hand for the runtime tests (registers and
// tasks with dense ids, as the runtime expects of a Plan), plus tensor
// helpers. Test-only; not synchronised.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "oneflow_lite/core/attr.h"
#include "oneflow_lite/core/proto/plan.pb.h"
#include "oneflow_lite/core/tensor.h"

namespace ofl {

class PlanMaker {
 public:
  explicit PlanMaker(int64_t num_ranks) { plan_.set_num_ranks(num_ranks); }

  int64_t Register(const std::string& name, int64_t rank, std::vector<int64_t> shape,
                   int64_t slots = 1, bool persistent = false) {
    auto* r = plan_.add_registers();
    r->set_id(plan_.registers_size() - 1);
    r->set_name(name);
    r->set_rank(rank);
    int64_t n = 1;
    for (int64_t d : shape) {
      r->mutable_desc()->mutable_shape()->add_dims(d);
      n *= d;
    }
    r->mutable_desc()->set_dtype("float32");
    r->set_num_slots(slots);
    r->set_bytes(n * 4);
    r->set_persistent(persistent);
    return r->id();
  }
  int64_t Ctrl(const std::string& name, int64_t rank) { return Register(name, rank, {0}); }

  proto::TaskProto* Task(proto::TaskProto::Kind kind, int64_t rank, int64_t stream,
                         const std::string& name, const std::string& op_type,
                         std::vector<int64_t> inputs, std::vector<int64_t> outputs) {
    auto* t = plan_.add_tasks();
    t->set_id(plan_.tasks_size() - 1);
    t->set_kind(kind);
    t->set_rank(rank);
    t->set_stream(stream);
    t->mutable_op_conf()->set_name(name);
    t->mutable_op_conf()->set_op_type(op_type);
    for (int64_t id : inputs) t->add_inputs(id);
    for (int64_t id : outputs) t->add_outputs(id);
    return t;
  }
  proto::TaskProto* Source(const std::string& name, int64_t rank, int64_t stream, int64_t reg) {
    return Task(proto::TaskProto::SOURCE, rank, stream, name, "", {}, {reg});
  }
  proto::TaskProto* Variable(const std::string& name, int64_t rank, int64_t stream, int64_t reg) {
    return Task(proto::TaskProto::VARIABLE, rank, stream, name, "", {}, {reg});
  }
  proto::TaskProto* Sink(const std::string& name, int64_t rank, int64_t stream, int64_t reg) {
    return Task(proto::TaskProto::SINK, rank, stream, name, "", {reg}, {});
  }
  proto::TaskProto* Compute(const std::string& op_type, const std::string& name, int64_t rank,
                            int64_t stream, std::vector<int64_t> inputs,
                            std::vector<int64_t> outputs) {
    return Task(proto::TaskProto::COMPUTE, rank, stream, name, op_type, inputs, outputs);
  }

  proto::Plan& plan() { return plan_; }

 private:
  proto::Plan plan_;
};

inline void SetAttr(proto::TaskProto* task, const std::string& name, AttrValue value) {
  (*task->mutable_op_conf()->mutable_attrs())[name] = AttrToProto(value);
}

// A float32 tensor whose element i is `f(i)`.
template <typename F>
Tensor MakeTensor(std::vector<int64_t> shape, F f) {
  Tensor t(Shape(shape), DataType::kFloat32);
  float* p = t.data<float>();
  for (int64_t i = 0; i < t.numel(); ++i) p[i] = static_cast<float>(f(i));
  return t;
}

inline void ExpectClose(const Tensor& a, const Tensor& b, float tolerance = 1e-5f) {
  ASSERT_EQ(a.shape(), b.shape());
  const float* x = a.data<float>();
  const float* y = b.data<float>();
  for (int64_t i = 0; i < a.numel(); ++i) {
    EXPECT_NEAR(x[i], y[i], tolerance * (1 + std::fabs(y[i]))) << "element " << i;
  }
}

}  // namespace ofl
