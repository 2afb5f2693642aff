# Builds against the torch package of the interpreter PLN_TORCH_PYTHON (pip's
# torch 2.x: make test-torch2, and the Python package's pip build): its
# LibTorch is found first, and the Python tests run with that interpreter.
execute_process(
  COMMAND "${PLN_TORCH_PYTHON}" -c
          "import os, torch; print(torch.__version__); print(torch.utils.cmake_prefix_path); print(os.path.dirname(torch.__file__)); print(int(torch._C._GLIBCXX_USE_CXX11_ABI))"
  OUTPUT_VARIABLE _pln_torch_probe OUTPUT_STRIP_TRAILING_WHITESPACE
  ERROR_VARIABLE _pln_torch_error RESULT_VARIABLE _pln_torch_result)
if(NOT _pln_torch_result EQUAL 0)
  string(REGEX REPLACE ".*\n([^\n]+)$" "\\1" _pln_torch_error "${_pln_torch_error}")
  message(FATAL_ERROR "pln: ${PLN_TORCH_PYTHON} cannot import torch (${_pln_torch_error}). "
                      "pln builds against the torch already installed: install it first "
                      "(for example `${PLN_TORCH_PYTHON} -m pip install torch==2.11.0`), then build again.")
endif()
string(REPLACE "\n" ";" _pln_torch_probe "${_pln_torch_probe}")
list(GET _pln_torch_probe 0 PLN_TORCH_PYTHON_VERSION)
list(GET _pln_torch_probe 1 _pln_torch_cmake_dir)
list(GET _pln_torch_probe 2 _pln_torch_dir)
list(GET _pln_torch_probe 3 PLN_TORCH_CXX11_ABI)
# The Debian libraries the tests and tools link (GoogleTest, fmt, ...) use the
# C++11 ABI; a torch built with the old one cannot share objects with them.
if(NOT PLN_TORCH_CXX11_ABI)
  message(FATAL_ERROR "pln: torch ${PLN_TORCH_PYTHON_VERSION} of ${PLN_TORCH_PYTHON} is built with "
                      "the pre-C++11 ABI (_GLIBCXX_USE_CXX11_ABI=0); the libraries pln links use the C++11 ABI")
endif()
list(PREPEND CMAKE_PREFIX_PATH "${_pln_torch_dir}" "${_pln_torch_cmake_dir}")
# A CUDA wheel's own NVRTC, rather than the toolkit's, in torch's link
# interface (torch's CMake looks in the toolkit; the wheel loads its own).
file(GLOB _pln_wheel_nvrtc "${_pln_torch_dir}/../nvidia/*/lib/libnvrtc.so.[0-9]*")
if(_pln_wheel_nvrtc AND NOT DEFINED CACHE{CUDA_NVRTC_LIB})
  list(GET _pln_wheel_nvrtc 0 _pln_wheel_nvrtc)
  get_filename_component(_pln_wheel_nvrtc "${_pln_wheel_nvrtc}" REALPATH)
  set(CUDA_NVRTC_LIB "${_pln_wheel_nvrtc}" CACHE FILEPATH "NVRTC of the torch wheel")
endif()
message(STATUS "pln: torch ${PLN_TORCH_PYTHON_VERSION} of ${PLN_TORCH_PYTHON}")
