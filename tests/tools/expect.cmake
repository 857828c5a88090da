# Runs a command and checks its exit code and its output (stdout and stderr together):
#   cmake [-DEXIT=<code>] [-DREQUIRE_DIR=<dir>] -P expect.cmake -- <command> <args>... \
#         [--match <regex>...]
# Every regex must match somewhere in the output. EXIT defaults to 0. REQUIRE_DIR names a folder the
# test needs; when it is missing the test fails saying so (it never passes silently).
cmake_minimum_required(VERSION 3.25)
if(NOT DEFINED EXIT)
  set(EXIT 0)
endif()
if(DEFINED REQUIRE_DIR AND NOT IS_DIRECTORY "${REQUIRE_DIR}")
  message(FATAL_ERROR "shared testdata missing at ${REQUIRE_DIR}")
endif()

set(command "")
set(patterns "")
set(target "")
math(EXPR last "${CMAKE_ARGC} - 1")
foreach(i RANGE ${last})
  set(arg "${CMAKE_ARGV${i}}")
  if(arg STREQUAL "--" AND target STREQUAL "")
    set(target command)
  elseif(arg STREQUAL "--match" AND target STREQUAL "command")
    set(target patterns)
  elseif(NOT target STREQUAL "")
    list(APPEND ${target} "${arg}")
  endif()
endforeach()

execute_process(COMMAND ${command} RESULT_VARIABLE code OUTPUT_VARIABLE out ERROR_VARIABLE out)
message("${out}")
if(NOT code STREQUAL "${EXIT}")
  message(FATAL_ERROR "exit code ${code}, expected ${EXIT}")
endif()
foreach(p IN LISTS patterns)
  if(NOT out MATCHES "${p}")
    message(FATAL_ERROR "the output does not match '${p}'")
  endif()
endforeach()
