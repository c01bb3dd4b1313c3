# ctest's install.find_package: installs the build tree into a temporary prefix, builds the
# consumer project in this folder with find_package(Kiln), runs its programs and checks what
# they print. Run as
#   cmake -DKILN_BINARY_DIR=<build> -DWORK_DIR=<scratch> -DGENERATOR=<gen> -DCXX=<compiler>
#         -P run_install_test.cmake
foreach(var KILN_BINARY_DIR WORK_DIR GENERATOR CXX)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "run_install_test.cmake: -D${var}=... is required")
  endif()
endforeach()

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    string(REPLACE ";" " " cmd "${ARGN}")
    message(FATAL_ERROR "failed (${rc}): ${cmd}\n${out}\n${err}")
  endif()
  set(out "${out}" PARENT_SCOPE)
endfunction()

function(expect text pattern)
  if(NOT text MATCHES "${pattern}")
    message(FATAL_ERROR "expected output matching '${pattern}', got:\n${text}")
  endif()
endfunction()

set(prefix ${WORK_DIR}/prefix)
set(build ${WORK_DIR}/consumer)
file(REMOVE_RECURSE ${WORK_DIR})

run(${CMAKE_COMMAND} --install ${KILN_BINARY_DIR} --prefix ${prefix})
foreach(f lib/cmake/Kiln/KilnConfig.cmake include/kiln/kiln.h include/kiln/compat/torch/torch.h)
  if(NOT EXISTS ${prefix}/${f})
    message(FATAL_ERROR "cmake --install did not install ${f}")
  endif()
endforeach()

# Only the install prefix is searched, so the package (not the build tree) is what is tested.
# CONSUMER_FLAGS (optional): compile and link flags for the consumer, the sanitizers' when the
# installed Kiln is built with them.
run(${CMAKE_COMMAND} -S ${CMAKE_CURRENT_LIST_DIR} -B ${build} -G ${GENERATOR}
    -DCMAKE_CXX_COMPILER=${CXX} -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH=${prefix}
    -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF "-DCMAKE_CXX_FLAGS=${CONSUMER_FLAGS}"
    "-DCMAKE_EXE_LINKER_FLAGS=${CONSUMER_FLAGS}")
run(${CMAKE_COMMAND} --build ${build} -j 2)

run(${build}/app)
expect("${out}" "y = 14\n")
expect("${out}" "dy/dx\\[2\\] = 6\n")
run(${build}/torch_app)
expect("${out}" "torch y = 8, grad sum = 12\n")
expect("${out}" "kernel sum = 36\n")

run(${prefix}/bin/kiln ops)
expect("${out}" "[0-9]+ ops\n")

file(REMOVE_RECURSE ${WORK_DIR})
message(STATUS "install.find_package: ok")
