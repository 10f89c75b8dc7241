# Enables CUDA in the top-level directory, for targets outside src/cuda that compile .cu sources
# (bench/gpu/bench_*.cu). CMake needs a language enabled in the highest directory common to all
# of its targets; src/cuda/CMakeLists.txt enables CUDA only in its own scope, so a .cu target in
# bench/ fails to generate ("Missing variable is: CMAKE_CUDA_COMPILE_OBJECT").
# Use: cmake ... -DCMAKE_PROJECT_INCLUDE=<repo>/cmake/cuda_language.cmake (runs at the end of
# project()). The lasting fix is the same few lines in the top-level CMakeLists.txt.
if(NOT DEFINED EAGLESIM_CUDA OR NOT EAGLESIM_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    enable_language(CUDA)
  endif()
endif()
