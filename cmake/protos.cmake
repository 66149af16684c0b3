# ofl_proto: the generated protobuf code. It is included from the top-level
# CMakeLists because CMake's protobuf_generate names outputs relative to the
# calling directory, and protoc names them relative to the import root: the
# two agree only at the root.
set(OFL_PROTOS tensor job plan cluster strategy)
list(TRANSFORM OFL_PROTOS PREPEND ${PROJECT_SOURCE_DIR}/oneflow_lite/core/proto/)
list(TRANSFORM OFL_PROTOS APPEND .proto)
add_library(ofl_proto STATIC ${OFL_PROTOS})
protobuf_generate(TARGET ofl_proto LANGUAGE cpp
  IMPORT_DIRS ${PROJECT_SOURCE_DIR} PROTOC_OUT_DIR ${PROJECT_BINARY_DIR})
# The generated headers only ("oneflow_lite/core/proto/x.pb.h" under the
# binary dir); the sources' folder is exposed by ofl_core.
target_include_directories(ofl_proto PUBLIC ${PROJECT_BINARY_DIR})
target_link_libraries(ofl_proto PUBLIC protobuf::libprotobuf)
