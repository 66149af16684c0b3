// The communicators of device groups that span processes, by device type: a
// backend's runtime library registers its factory during static
// initialisation (runtime/nccl_communicator.cpp: NCCL for CUDA), so boxing
// (runtime/boxing.h) makes them without naming a backend. CPU groups across
// processes use Gloo and are not here. Thread safety: a mutex guards the
// table; every call from any thread.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "oneflow_lite/core/communicator.h"
#include "oneflow_lite/core/device.h"
#include "runtime/tcp_store.h"

namespace ofl {

// The communicator of world rank `world_rank` in the group `group` of
// processes whose members are `members` (world ranks), on `device`: its
// rendezvous goes through `store`, each call bounded by `timeout`.
using DeviceCommunicatorFactory = std::function<Maybe<std::unique_ptr<Communicator>>(
    TcpStore* store, const std::string& group, const std::vector<int64_t>& members,
    int64_t world_rank, const Device& device, std::chrono::milliseconds timeout)>;

// Registers the factory of `type` (CHECK: once, not CPU); returns true, for a
// namespace-scope initialiser.
bool RegisterDeviceCommunicator(DeviceType type, DeviceCommunicatorFactory factory);

// The registered factory's communicator, or an error naming the device
// ("cuda:0: this build has no cuda backend").
Maybe<std::unique_ptr<Communicator>> MakeDeviceCommunicator(
    TcpStore* store, const std::string& group, const std::vector<int64_t>& members,
    int64_t world_rank, const Device& device, std::chrono::milliseconds timeout);

}  // namespace ofl
