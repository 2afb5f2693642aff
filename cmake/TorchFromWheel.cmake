# LibTorch from a torch wheel unpacked as pip lays it out
# (${PLN_TORCH_SITE}/torch/{include,lib}), for a cross build: make
# test-aarch64 builds for aarch64 against pip's torch 2.11.0 aarch64 wheel,
# which scripts/aarch64-setup unpacks into third_party/aarch64/site/.
#
# The wheel's own CMake package cannot serve there: pip's aarch64 torch is a
# CUDA build, and its configuration requires a CUDA toolkit for the target.
# The targets below are the wheel's CPU libraries, libtorch_cpu and libc10,
# which hold every CPU operator and the C++ frontend (libtorch.so adds only
# libtorch_cuda). libtorch_cpu loads the CUDA runtime and CUPTI (its profiler)
# from the site's nvidia/cu13/lib, through its own RUNPATH, as in a pip
# install; nothing here links them.
set(TORCH_INSTALL_PREFIX "${PLN_TORCH_SITE}/torch")
set(_pln_wheel_cmake "${TORCH_INSTALL_PREFIX}/share/cmake/Torch/TorchConfigVersion.cmake")
if(NOT EXISTS "${_pln_wheel_cmake}" OR NOT EXISTS "${TORCH_INSTALL_PREFIX}/include/ATen/ATen.h")
  message(FATAL_ERROR "pln: PLN_TORCH_SITE=${PLN_TORCH_SITE} holds no unpacked torch wheel "
                      "(torch/include and torch/share/cmake/Torch); scripts/aarch64-setup makes one")
endif()
# TorchConfigVersion.cmake sets PACKAGE_VERSION and nothing else that stays.
include("${_pln_wheel_cmake}")
set(Torch_VERSION "${PACKAGE_VERSION}")
foreach(_pln_lib torch_cpu c10)
  find_library(PLN_WHEEL_${_pln_lib} ${_pln_lib} PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH
               NO_CMAKE_FIND_ROOT_PATH)
  if(NOT PLN_WHEEL_${_pln_lib})
    message(FATAL_ERROR "pln: lib${_pln_lib}.so is missing from ${TORCH_INSTALL_PREFIX}/lib")
  endif()
endforeach()
add_library(c10 SHARED IMPORTED)
set_target_properties(c10 PROPERTIES IMPORTED_LOCATION "${PLN_WHEEL_c10}"
                      INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INSTALL_PREFIX}/include")
# The compile definitions are those of the wheel's torch_cpu target.
add_library(torch_cpu SHARED IMPORTED)
set_target_properties(torch_cpu PROPERTIES IMPORTED_LOCATION "${PLN_WHEEL_torch_cpu}"
                      INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INSTALL_PREFIX}/include"
                      INTERFACE_COMPILE_DEFINITIONS "USE_DISTRIBUTED;USE_C10D_GLOO;USE_RPC;USE_TENSORPIPE"
                      INTERFACE_LINK_LIBRARIES c10)
add_library(torch INTERFACE IMPORTED)
set_target_properties(torch PROPERTIES
                      INTERFACE_INCLUDE_DIRECTORIES
                        "${TORCH_INSTALL_PREFIX}/include;${TORCH_INSTALL_PREFIX}/include/torch/csrc/api/include"
                      INTERFACE_LINK_LIBRARIES torch_cpu)
set(TORCH_LIBRARIES torch)
set(TORCH_LIBRARY "${PLN_WHEEL_torch_cpu}")
set(Torch_FOUND TRUE)
# OpenMP: the wheel's libgomp, which libtorch_cpu loads, rather than the cross
# compiler's of the same soname; a process holds one, found beside LibTorch.
if(EXISTS "${TORCH_INSTALL_PREFIX}/lib/libgomp.so.1")
  set(OpenMP_gomp_LIBRARY "${TORCH_INSTALL_PREFIX}/lib/libgomp.so.1" CACHE FILEPATH "libgomp of the torch wheel")
endif()
