# netqos_warnings(TARGET): the project's warning set; -Werror only when NETQOS_WERROR is on (CI).
function(netqos_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wshadow -Wconversion -Wnon-virtual-dtor)
  if(NETQOS_WERROR)
    target_compile_options(${target} PRIVATE -Werror)
  endif()
endfunction()
