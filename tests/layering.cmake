# Checks that no file of a layer includes a public header of a higher layer. Internal headers
# cannot be reached upwards at all (each layer's include path holds only its own folder and those
# below it, see the top-level CMakeLists.txt); the public headers in include/sgraph/ are on every
# layer's path, so this test keeps those in order too.
# With -DCXX=<compiler> -DLAYERS=<build>/layers -DINCLUDE=<repo>/include it also checks that the
# build's per-layer include paths do what they promise: from each layer, an internal header of a
# higher layer is not found, and one of its own layer is.
#   cmake -DSRC=<repo>/src [-DCXX=... -DLAYERS=... -DINCLUDE=...] -P layering.cmake
set(order ir ops jit runtime onnx)
# The layer each public header belongs to.
set(layer_of_error.h ir)
set(layer_of_tensor.h ir)
set(layer_of_graph.h ir)
set(layer_of_op_list.h ir)
set(layer_of_session.h runtime)
set(layer_of_report.h runtime)
set(layer_of_runtime.h runtime)
set(layer_of_train.h runtime)
set(layer_of_onnx.h onnx)
set(layer_of_sgraph.h onnx)  # the umbrella header: everything
set(bad "")
foreach(layer IN LISTS order)
  list(FIND order ${layer} rank)
  file(GLOB files ${SRC}/${layer}/*.h ${SRC}/${layer}/*.cpp ${SRC}/${layer}/*.inc)
  foreach(f IN LISTS files)
    file(STRINGS ${f} includes REGEX "^#include \"sgraph/[a-z_]+\\.h\"")
    foreach(line IN LISTS includes)
      string(REGEX REPLACE "^#include \"sgraph/([a-z_]+\\.h)\".*" "\\1" header "${line}")
      if(NOT DEFINED layer_of_${header})
        list(APPEND bad "${f}: sgraph/${header} has no layer in tests/layering.cmake")
        continue()
      endif()
      list(FIND order ${layer_of_${header}} header_rank)
      if(header_rank GREATER rank)
        list(APPEND bad "${f} (layer ${layer}) includes sgraph/${header} (layer ${layer_of_${header}})")
      endif()
    endforeach()
  endforeach()
endforeach()
# A header of each layer that includes only its own layer's and lower ones.
set(probe_ir ir/region.h)
set(probe_ops ops/op.h)
set(probe_jit jit/jit.h)
set(probe_runtime runtime/interpreter.h)
set(probe_onnx onnx/import.h)
if(CXX)
  foreach(layer IN LISTS order)
    list(FIND order ${layer} rank)
    foreach(other IN LISTS order)
      list(FIND order ${other} other_rank)
      file(WRITE ${LAYERS}/probe_${layer}_${other}.cpp "#include \"${probe_${other}}\"\n")
      execute_process(COMMAND ${CXX} -std=c++20 -fsyntax-only -I${INCLUDE} -I${LAYERS}/${layer}
                              ${EXTRA_INCLUDES} ${LAYERS}/probe_${layer}_${other}.cpp
                      RESULT_VARIABLE failed OUTPUT_QUIET ERROR_VARIABLE err)
      if(other_rank GREATER rank AND NOT failed)
        list(APPEND bad "layer ${layer} can include ${probe_${other}} (layer ${other})")
      elseif(NOT other_rank GREATER rank AND failed)
        list(APPEND bad "layer ${layer} cannot include ${probe_${other}}: ${err}")
      endif()
    endforeach()
  endforeach()
endif()
if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "includes against the layer order:\n  ${text}")
endif()
message(STATUS "layering: every public include respects the layer order")
