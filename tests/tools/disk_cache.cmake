# The disk kernel cache across processes: two `sgraph check` processes fill one empty cache
# directory at the same time, then a third compiles nothing and loads every kernel from it.
#   cmake -DSGRAPH=<tool> -DWORK_DIR=<scratch> -P disk_cache.cmake -- <test folder>...
cmake_minimum_required(VERSION 3.25)
set(models "")
set(seen_dashes OFF)
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  if(seen_dashes)
    if(NOT IS_DIRECTORY "${CMAKE_ARGV${i}}")
      message(FATAL_ERROR "shared testdata missing at ${CMAKE_ARGV${i}}")
    endif()
    list(APPEND models "${CMAKE_ARGV${i}}")
  elseif("${CMAKE_ARGV${i}}" STREQUAL "--")
    set(seen_dashes ON)
  endif()
endforeach()
file(REMOVE_RECURSE "${WORK_DIR}")
# Two threads: a region's threads follow its profiled warm-up time, which the concurrent checks
# push up, but its kernel's code does not, so the third process finds every kernel it needs.
set(check "${SGRAPH}" check ${models} --threads 2 --cache-dir "${WORK_DIR}")

# A pipeline runs its commands concurrently; the first writes its output to a file (the second
# does not read its input).
execute_process(COMMAND sh -c "exec \"$@\" > \"$0\" 2>&1" "${WORK_DIR}.log" ${check}
  COMMAND ${check} RESULTS_VARIABLE codes OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT codes STREQUAL "0;0")
  message(FATAL_ERROR "the concurrent checks exited with ${codes}")
endif()
file(GLOB entries "${WORK_DIR}/*.sgk")
file(GLOB leftovers "${WORK_DIR}/*.tmp")
list(LENGTH entries n)
if(n EQUAL 0 OR leftovers)
  message(FATAL_ERROR "after the concurrent checks: ${n} entries, temporary files: ${leftovers}")
endif()

execute_process(COMMAND ${check} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT code EQUAL 0 OR NOT out MATCHES "\ncheck: 0 kernels compiled, ${n} loaded from the disk cache ")
  message(FATAL_ERROR "the third check did not load its ${n} kernels from the cache")
endif()
