# abi_symbols.cmake — the exported-symbols list of libetchat_runner.dylib
# (ld64's -exported_symbols_list: one Mach-O name, "_" + the C name, a
# line), made from etchat_runner.h so it never drifts from the header.
#
# Included by CMakeLists.txt on Apple; also runs as a script for tests and
# scripts/check-mac (which compares it with nm -gU of the built dylib):
#   cmake -DETCHAT_ABI_HEADER=etchat_runner.h -DETCHAT_ABI_OUT=list.txt -P abi_symbols.cmake

# etchat_abi_symbols(<header> <out>): every function the header declares
# with ETCHAT_API (a declaration's name is the word before its "(").
function(etchat_abi_symbols header out)
  file(STRINGS "${header}" _decls REGEX "^ETCHAT_API ")
  set(_names)
  foreach(_d IN LISTS _decls)
    if(_d MATCHES "(etchat_[a-z_0-9]+)[ \t]*\\(")
      list(APPEND _names "_${CMAKE_MATCH_1}")
    endif()
  endforeach()
  list(REMOVE_DUPLICATES _names)
  list(JOIN _names "\n" _list)
  file(WRITE "${out}" "${_list}\n")
endfunction()

if(CMAKE_SCRIPT_MODE_FILE AND ETCHAT_ABI_HEADER)
  etchat_abi_symbols("${ETCHAT_ABI_HEADER}" "${ETCHAT_ABI_OUT}")
endif()
