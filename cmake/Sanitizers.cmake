# Sanitizers apply to every userspace target when NETQOS_SANITIZE is set (BPF objects never see them).
if(NETQOS_SANITIZE)
  string(REPLACE ";" "," _netqos_san "${NETQOS_SANITIZE}")
  add_compile_options(-fsanitize=${_netqos_san} -fno-omit-frame-pointer)
  add_link_options(-fsanitize=${_netqos_san})
endif()
