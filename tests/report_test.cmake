# bench/report.py on a fixture: cmake -DPYTHON=... -DREPORT=bench/report.py -DRESULTS=DIR
# -DEXPECT_EXIT=N -DEXPECT=REGEX -P report_test.cmake. Passes when report.py exits with N and
# prints REGEX (on stdout or stderr): a crash is not taken for the refusal the test expects.
execute_process(COMMAND ${PYTHON} ${REPORT} ${RESULTS} --no-plots
                RESULT_VARIABLE exit_code OUTPUT_VARIABLE out ERROR_VARIABLE err)
set(text "${out}${err}")
if(NOT exit_code STREQUAL EXPECT_EXIT)
  message(FATAL_ERROR "report.py ${RESULTS}: exit ${exit_code}, expected ${EXPECT_EXIT}\n${text}")
endif()
if(NOT text MATCHES "${EXPECT}")
  message(FATAL_ERROR "report.py ${RESULTS}: output does not match '${EXPECT}'\n${text}")
endif()
message(STATUS "report-test: ok (exit ${exit_code})")
