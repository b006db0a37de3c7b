# cmake -P: what a user of `cmake --install` + find_package(gpuagg) does. Configures gpuagg's
# source afresh (the library alone), installs it into a prefix under WORK_DIR, then configures,
# builds and runs tests/install_consumer against that prefix. A fresh configure, not the suite's
# build directory: there a second configure finds GNUInstallDirs' cache variables already set,
# which hid a first configure's install without include directories.
# -D: SOURCE_DIR, WORK_DIR, CONSUMER_DIR, GENERATOR, MAKE_PROGRAM (may be empty), CXX_COMPILER.
foreach(var IN ITEMS SOURCE_DIR WORK_DIR CONSUMER_DIR GENERATOR CXX_COMPILER)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "install_test.cmake needs -D${var}=...")
  endif()
endforeach()

file(REMOVE_RECURSE "${WORK_DIR}")
set(prefix "${WORK_DIR}/prefix")
set(tools -G "${GENERATOR}" "-DCMAKE_CXX_COMPILER=${CXX_COMPILER}")
if(MAKE_PROGRAM)
  list(APPEND tools "-DCMAKE_MAKE_PROGRAM=${MAKE_PROGRAM}")
endif()

execute_process(COMMAND "${CMAKE_COMMAND}" -S "${SOURCE_DIR}" -B "${WORK_DIR}/gpuagg-build" ${tools}
                        -DGPUAGG_BUILD_TESTS=OFF -DGPUAGG_BUILD_EXAMPLES=OFF -DGPUAGG_BUILD_BENCH=OFF
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${CMAKE_COMMAND}" --install "${WORK_DIR}/gpuagg-build" --prefix "${prefix}"
                OUTPUT_QUIET COMMAND_ERROR_IS_FATAL ANY)
# No build type: an unoptimized build of one small program keeps the test short.
execute_process(COMMAND "${CMAKE_COMMAND}" -S "${CONSUMER_DIR}" -B "${WORK_DIR}/consumer-build" ${tools}
                        "-DCMAKE_PREFIX_PATH=${prefix}"
                COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${CMAKE_COMMAND}" --build "${WORK_DIR}/consumer-build" COMMAND_ERROR_IS_FATAL ANY)
execute_process(COMMAND "${WORK_DIR}/consumer-build/app" COMMAND_ERROR_IS_FATAL ANY)
