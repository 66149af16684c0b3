#include "oneflow_lite/core/data_type.h"

namespace ofl {

int64_t SizeOf(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return 4;
    case DataType::kFloat64:
      return 8;
    case DataType::kInt32:
      return 4;
    case DataType::kInt64:
      return 8;
    case DataType::kBFloat16:
      return 2;
    case DataType::kFloat16:
      return 2;
    case DataType::kBool:
      return 1;
  }
  LOG(FATAL) << "unknown DataType " << static_cast<int>(dtype);
  return 0;
}

const char* DataTypeName(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat32:
      return "float32";
    case DataType::kFloat64:
      return "float64";
    case DataType::kInt32:
      return "int32";
    case DataType::kInt64:
      return "int64";
    case DataType::kBFloat16:
      return "bfloat16";
    case DataType::kFloat16:
      return "float16";
    case DataType::kBool:
      return "bool";
  }
  LOG(FATAL) << "unknown DataType " << static_cast<int>(dtype);
  return "";
}

Maybe<DataType> ParseDataType(const std::string& name) {
  for (DataType t : {DataType::kFloat32, DataType::kFloat64, DataType::kInt32, DataType::kInt64,
                     DataType::kBFloat16, DataType::kFloat16, DataType::kBool}) {
    if (name == DataTypeName(t)) return t;
  }
  return InvalidArgument("unknown dtype '", name,
                         "' (expected float32, float64, int32, int64, bfloat16, float16 or bool)");
}

bool IsFloating(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat64 ||
         dtype == DataType::kBFloat16 || dtype == DataType::kFloat16;
}
bool IsComputeFloat(DataType dtype) {
  return dtype == DataType::kFloat32 || dtype == DataType::kFloat64;
}

}  // namespace ofl
