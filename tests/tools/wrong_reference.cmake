# `sgraph check` must fail on a wrong reference: copies a synthetic test folder to WORK_DIR,
# replaces test_data_set_0's output_0.pb with its input_0.pb (another shape), and runs the check.
#   cmake -DSGRAPH=<tool> -DMODEL_DIR=<test folder> -DWORK_DIR=<scratch> -P wrong_reference.cmake
cmake_minimum_required(VERSION 3.25)
if(NOT IS_DIRECTORY "${MODEL_DIR}")
  message(FATAL_ERROR "shared testdata missing at ${MODEL_DIR}")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
file(COPY "${MODEL_DIR}/" DESTINATION "${WORK_DIR}" NO_SOURCE_PERMISSIONS)
file(COPY_FILE "${WORK_DIR}/test_data_set_0/input_0.pb" "${WORK_DIR}/test_data_set_0/output_0.pb")

execute_process(COMMAND "${SGRAPH}" check "${WORK_DIR}" RESULT_VARIABLE code OUTPUT_VARIABLE out
  ERROR_VARIABLE out)
message("${out}")
if(code EQUAL 0)
  message(FATAL_ERROR "sgraph check passed a folder with a wrong reference")
endif()
foreach(p "FAIL  [^\n]*  test_data_set_0  [^\n]*output 0: " "PASS  [^\n]*  test_data_set_1  "
          "\n[0-9]+ passed, 1 failed\n")
  if(NOT out MATCHES "${p}")
    message(FATAL_ERROR "the output does not match '${p}'")
  endif()
endforeach()
