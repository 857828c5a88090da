# Fails when a doctest TEST_CASE name holds ';' or '[': doctest_discover_tests splits names at ';'
# and CTest's test filter treats '[' as a pattern, so such a case would run nothing under CTest
# and still pass. Run as: cmake -DDIR=<tests dir> -P test_case_names.cmake
file(GLOB_RECURSE sources "${DIR}/*.cpp" "${DIR}/*.h")
set(found 0)
foreach(f IN LISTS sources)
  file(READ "${f}" text)
  foreach(pattern "TEST_CASE\\(\"[^\"]*;" "TEST_CASE\\(\"[^\"]*\\[")
    string(REGEX MATCH "${pattern}" bad "${text}")
    if(bad)
      message(SEND_ERROR "${f}: a TEST_CASE name with ';' or '[': ${bad}")
      set(found 1)
    endif()
  endforeach()
endforeach()
if(found)
  message(FATAL_ERROR "rename those test cases (CTest would skip them)")
endif()
