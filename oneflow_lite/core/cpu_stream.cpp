#include "oneflow_lite/core/cpu_stream.h"

#include <utility>

namespace ofl {

void CpuPoint::Set() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    set_ = true;
  }
  cv_.notify_all();
}

bool CpuPoint::IsSet() const {
  std::lock_guard<std::mutex> lock(mu_);
  return set_;
}

void CpuPoint::WaitSet() const {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [this] { return set_; });
}

CpuStream::CpuStream(Device device) : device_(device) {
  CHECK(device.type == DeviceType::kCPU) << "a CPU stream on " << device;
}

void CpuStream::Wait(const Event& event) {
  const auto* cpu = dynamic_cast<const CpuEvent*>(&event);
  CHECK(cpu != nullptr) << device_ << ": a CPU stream waits only on a CPU event";
  std::shared_ptr<CpuPoint> point = cpu->point();
  if (point != nullptr && !point->IsSet()) WaitFor(std::move(point));
}

CpuWorkerStream::CpuWorkerStream(Device device) : CpuStream(device) {
  thread_ = std::thread([this] { Main(); });
}

CpuWorkerStream::~CpuWorkerStream() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void CpuWorkerStream::Enqueue(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mu_);
    queue_.push_back(std::move(work));
  }
  cv_.notify_all();
}

void CpuWorkerStream::Synchronize() { Mark()->WaitSet(); }

std::shared_ptr<CpuPoint> CpuWorkerStream::Mark() {
  auto point = std::make_shared<CpuPoint>();
  Enqueue([point] { point->Set(); });
  return point;
}

void CpuWorkerStream::WaitFor(std::shared_ptr<CpuPoint> point) {
  Enqueue([point = std::move(point)] { point->WaitSet(); });
}

void CpuWorkerStream::Main() {
  for (;;) {
    std::function<void()> work;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [this] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stopped, and everything enqueued ran
      work = std::move(queue_.front());
      queue_.pop_front();
    }
    work();
  }
}

void CpuEvent::Record(Stream* stream) {
  auto* cpu = dynamic_cast<CpuStream*>(stream);
  CHECK(cpu != nullptr) << "a CPU event is recorded only on a CPU stream, not on "
                        << stream->device();
  std::shared_ptr<CpuPoint> point = cpu->Mark();
  std::lock_guard<std::mutex> lock(mu_);
  point_ = std::move(point);
}

std::shared_ptr<CpuPoint> CpuEvent::point() const {
  std::lock_guard<std::mutex> lock(mu_);
  return point_;
}

bool CpuEvent::Query() const {
  std::shared_ptr<CpuPoint> p = point();
  return p == nullptr || p->IsSet();
}

void CpuEvent::Synchronize() const {
  std::shared_ptr<CpuPoint> p = point();
  if (p != nullptr) p->WaitSet();
}

}  // namespace ofl
