# Third-party packages, found once for every target (ENVIRONMENT.md lists the
# Debian packages and their CMake names). CUDA is detected, never required.
# No find_package(gflags): no target of ours uses it; glog's config finds it
# for glog itself.
find_package(Threads REQUIRED)
find_package(glog CONFIG REQUIRED)
find_package(TBB CONFIG REQUIRED)
find_package(Protobuf REQUIRED)
find_package(dnnl CONFIG REQUIRED)
set(BLA_VENDOR OpenBLAS)
find_package(BLAS REQUIRED)
find_package(OpenMP REQUIRED)
find_package(Gloo CONFIG REQUIRED)  # target gloo (Debian's libgloo-dev)
find_path(OFL_CBLAS_INCLUDE_DIR cblas.h PATHS /usr/include/x86_64-linux-gnu/openblas-pthread
          /usr/include/openblas REQUIRED)

include(CheckLanguage)
check_language(CUDA)
if(CMAKE_CUDA_COMPILER)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES 90)
  endif()
  enable_language(CUDA)
  set(OFL_HAVE_CUDA ON)
  message(STATUS "oneflow_lite: CUDA toolkit found (${CMAKE_CUDA_COMPILER}); CUDA code is compiled")
else()
  set(OFL_HAVE_CUDA OFF)
  message(STATUS "oneflow_lite: no CUDA toolkit; CPU only")
endif()
