# netqos_warnings(TARGET): the project's warning set; -Werror only when NETQOS_WERROR is on (CI).
function(netqos_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wconversion -Wnon-virtual-dtor)
  # clang's -Wconversion also warns about sign conversions, which GCC's (the product's compiler)
  # leaves to -Wsign-conversion: the same set in both, so a clang build (sanitizers, fuzzing)
  # stops on what GCC's stops on.
  if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
    target_compile_options(${target} PRIVATE -Wno-sign-conversion)
  endif()
  if(NETQOS_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
