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

# CUDA: compiled when a toolkit is found, never required. Sanitizer and
# fuzz builds stay CPU only (nvcc does not take -fsanitize). OFL_HAVE_CUDA
# says whether .cu sources and the CUDA targets (CUDA::cudart,
# CUDA::cublasLt, OFL_CUDNN_LIBRARY, OFL_NCCL_LIBRARY) exist in this build;
# whether a device exists is decided at run time (tests skip with "no CUDA
# device").
option(OFL_WITH_CUDA "Compile the CUDA backend when a CUDA toolkit is found" ON)
set(OFL_HAVE_CUDA OFF)
if(OFL_WITH_CUDA AND NOT OFL_SANITIZER AND NOT OFL_BUILD_FUZZ)
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)  # H100/H200; override with -DCMAKE_CUDA_ARCHITECTURES
    endif()
    enable_language(CUDA)
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    find_package(CUDAToolkit REQUIRED)
    find_library(OFL_NCCL_LIBRARY nccl HINTS ${CUDAToolkit_LIBRARY_DIR} REQUIRED)
    find_library(OFL_CUDNN_LIBRARY cudnn HINTS ${CUDAToolkit_LIBRARY_DIR} REQUIRED)
    find_path(OFL_CUDA_EXTRA_INCLUDE_DIR nccl.h HINTS ${CUDAToolkit_INCLUDE_DIRS} REQUIRED)
    set(OFL_HAVE_CUDA ON)
    message(STATUS "oneflow_lite: CUDA toolkit ${CUDAToolkit_VERSION} found; CUDA code is compiled")
  endif()
endif()
if(NOT OFL_HAVE_CUDA)
  message(STATUS "oneflow_lite: CUDA backend not compiled (no toolkit, OFL_WITH_CUDA=OFF, or a sanitizer/fuzz build)")
endif()
