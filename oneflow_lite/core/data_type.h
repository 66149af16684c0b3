// DataType: the element types a Tensor may hold, their sizes and names.
// bfloat16 and float16 are storage types (kernels compute in float32/64).
// bool is one byte per element, 0 or 1 (numpy's bool_): the result of
// comparisons and masks.
// Plain values; thread-safe.
#pragma once

#include <cstdint>
#include <string>

#include "oneflow_lite/core/status.h"

namespace ofl {

enum class DataType : int {
  kFloat32 = 0,
  kFloat64,
  kInt32,
  kInt64,
  kBFloat16,
  kFloat16,
  kBool,
};

int64_t SizeOf(DataType dtype);
const char* DataTypeName(DataType dtype);                // "float32"
Maybe<DataType> ParseDataType(const std::string& name);  // accepts DataTypeName's output
bool IsFloating(DataType dtype);                         // float32/64, bfloat16, float16
bool IsComputeFloat(DataType dtype);                     // float32 or float64: has CPU kernels

template <typename T>
struct DataTypeOf;
template <>
struct DataTypeOf<float> {
  static constexpr DataType value = DataType::kFloat32;
};
template <>
struct DataTypeOf<double> {
  static constexpr DataType value = DataType::kFloat64;
};
template <>
struct DataTypeOf<int32_t> {
  static constexpr DataType value = DataType::kInt32;
};
template <>
struct DataTypeOf<int64_t> {
  static constexpr DataType value = DataType::kInt64;
};
template <>
struct DataTypeOf<bool> {
  static constexpr DataType value = DataType::kBool;
};

}  // namespace ofl
