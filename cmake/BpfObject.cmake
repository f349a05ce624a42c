# netqos_bpf_object(NAME SRC): compiles a BPF C file to NAME.bpf.o (clang -target bpf, BTF on) and
# generates NAME.skel.h with bpftool; target NAME_skel (INTERFACE) puts the skeleton on the
# include path as a SYSTEM directory (generated code is not held to our warning set).
find_program(NETQOS_BPF_CLANG NAMES clang clang-14 REQUIRED)
find_program(NETQOS_BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

function(netqos_bpf_object name src)
  set(out_dir ${CMAKE_BINARY_DIR}/bpf)
  set(obj ${out_dir}/${name}.bpf.o)
  set(skel ${out_dir}/${name}.skel.h)
  get_filename_component(src_abs ${src} ABSOLUTE)
  # UAPI headers include <asm/types.h>, which Debian keeps under the multiarch directory;
  # -target bpf does not search it by itself.
  set(arch_inc)
  if(CMAKE_LIBRARY_ARCHITECTURE)
    set(arch_inc -I/usr/include/${CMAKE_LIBRARY_ARCHITECTURE})
  endif()
  file(GLOB bpf_headers CONFIGURE_DEPENDS ${CMAKE_SOURCE_DIR}/bpf/*.h)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${out_dir}
    COMMAND ${NETQOS_BPF_CLANG} -target bpf -O2 -g -Wall -Werror -I${CMAKE_SOURCE_DIR}/bpf
            ${arch_inc} -c ${src_abs} -o ${obj}
    DEPENDS ${src_abs} ${bpf_headers}
    COMMENT "BPF ${name}.bpf.o"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${NETQOS_BPFTOOL} gen skeleton ${obj} name ${name} > ${skel}
    DEPENDS ${obj}
    COMMENT "BPF skeleton ${name}.skel.h"
    VERBATIM)
  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_library(${name}_skel INTERFACE)
  target_include_directories(${name}_skel SYSTEM INTERFACE ${out_dir} ${CMAKE_SOURCE_DIR}/bpf)
  add_dependencies(${name}_skel ${name}_skel_gen)
endfunction()
