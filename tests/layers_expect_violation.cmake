# Runs the include-order check on a tree with a planted back edge and passes only if the check
# fails naming that edge (so the real-tree check cannot pass by checking nothing).
#   cmake -DCHECK=tools/check_layers.cmake -DDOC=docs/architecture.md -DROOT=fixture -DEXPECT=regex -P ...
execute_process(COMMAND ${CMAKE_COMMAND} -DDOC=${DOC} -DROOT=${ROOT} -P ${CHECK}
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(rc EQUAL 0)
  message(FATAL_ERROR "the check passed a tree with a planted back edge:\n${out}${err}")
endif()
if(NOT "${err}" MATCHES "${EXPECT}")
  message(FATAL_ERROR "the check failed, but not naming the planted edge (${EXPECT}):\n${err}")
endif()
message(STATUS "planted back edge found: ${EXPECT}")
