# Checks the float GEMM variants' object files (src/ops/gemm_eigen.inc compiled by gemm_base.cpp,
# gemm_avx2.cpp and gemm_avx512.cpp with different -m flags): every external symbol each defines
# names its own variant (sgraph_eigen_<isa>, sgraph::ops::gemm_<isa>), and none runs code at load
# time. Otherwise the linker could keep one TU's copy of a shared inline function for all callers,
# and code built for AVX-512 could run on a CPU without it.
#   cmake -DNM=nm "-DOBJECTS=a.o;b.o;..." -P gemm_symbols.cmake
set(checked 0)
foreach(obj IN LISTS OBJECTS)
  if(NOT obj MATCHES "gemm_(base|avx2|avx512|avx512_eigen)\\.cpp\\.o$")
    continue()
  endif()
  set(isa ${CMAKE_MATCH_1})
  math(EXPR checked "${checked} + 1")
  # Mangled names: only [A-Za-z0-9_.], safe to split into a CMake list.
  execute_process(COMMAND ${NM} --defined-only -g ${obj} OUTPUT_VARIABLE out RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${NM} failed on ${obj}")
  endif()
  string(REPLACE "\n" ";" lines "${out}")
  set(own 0)
  foreach(line IN LISTS lines)
    if(line MATCHES "sgraph_eigen_${isa}|gemm_${isa}")
      math(EXPR own "${own} + 1")
    elseif(line AND NOT line MATCHES " DW\\.ref\\.__gxx_personality_v0$")
      message(FATAL_ERROR "${obj} defines a symbol outside its variant's namespaces: ${line}")
    endif()
  endforeach()
  if(own LESS 2)
    message(FATAL_ERROR "${obj} defines no Eigen symbol of its own: is Eigen renamed?")
  endif()
  execute_process(COMMAND ${NM} ${obj} OUTPUT_VARIABLE all)
  if(all MATCHES "_GLOBAL__sub_I")
    message(FATAL_ERROR "${obj} runs code at load time (a static initialiser)")
  endif()
  message(STATUS "${isa}: ${own} symbols, all its own")
endforeach()
if(NOT checked EQUAL 4)
  message(FATAL_ERROR "expected the 4 GEMM variant objects among ${OBJECTS}, found ${checked}")
endif()
