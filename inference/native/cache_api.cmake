# cache_api.cmake — which ExecuTorch cache API the given tree has, and the
# adapter (cache_adapter_*.cpp) that speaks it.
#
# ExecuTorch renamed its off-graph cache API after commit cff6f4dd (the one
# etchat is built and tested against): CacheBuilderRegistry / CacheSession /
# SequenceControl became CacheFactory / InstallGuard / Cache::as<...>(). The
# two are told apart by extension/llm/cache/cache_registry.h:
#
#   class CacheBuilderRegistry  -> "builder-registry" -> cache_adapter_cff6f4d.cpp
#   class CacheFactory          -> "factory"          -> cache_adapter_factory.cpp
#                                  (not written yet: no ExecuTorch with that API
#                                   could be fetched to check one against)
#
# Included by CMakeLists.txt; also runs as a script for tests:
#   cmake -DETCHAT_CACHE_HEADER=path/to/cache_registry.h -P cache_api.cmake
# prints "cache-api=<api> adapter=<file>" or fails with the message a build
# would stop with.

# etchat_cache_api(<header> <api_var>): "builder-registry", "factory" or
# "unknown".
function(etchat_cache_api header api_var)
  file(READ "${header}" _text)
  if(_text MATCHES "class[ \t\r\n]+CacheFactory[ \t\r\n{:]")
    set(${api_var} "factory" PARENT_SCOPE)
  elseif(_text MATCHES "class[ \t\r\n]+CacheBuilderRegistry[ \t\r\n{:]")
    set(${api_var} "builder-registry" PARENT_SCOPE)
  else()
    set(${api_var} "unknown" PARENT_SCOPE)
  endif()
endfunction()

# etchat_cache_adapter(<header> <adapter_dir> <adapter_var>): the adapter
# source for the API in <header>; stops with a message naming the file to
# write when there is none.
function(etchat_cache_adapter header adapter_dir adapter_var)
  etchat_cache_api("${header}" _api)
  if(_api STREQUAL "builder-registry")
    set(_file "cache_adapter_cff6f4d.cpp")
  elseif(_api STREQUAL "factory")
    set(_file "cache_adapter_factory.cpp")
  else()
    message(FATAL_ERROR
      "${header} declares neither CacheBuilderRegistry (ExecuTorch cff6f4dd) "
      "nor CacheFactory (its successor): an ExecuTorch cache API etchat does "
      "not know. Write ${adapter_dir}/cache_adapter_<commit>.cpp implementing "
      "cache_adapter.h against it and pass -DETCHAT_CACHE_ADAPTER=<that file>.")
  endif()
  if(NOT EXISTS "${adapter_dir}/${_file}")
    message(FATAL_ERROR
      "${header} has ExecuTorch's \"${_api}\" cache API (CacheFactory, "
      "InstallGuard, kind::kSingle, Cache::as<SequenceControl>()), which "
      "etchat has no adapter for yet. Write ${adapter_dir}/${_file} "
      "implementing cache_adapter.h with those calls (cache_adapter_cff6f4d.cpp "
      "is the model), or build against ExecuTorch cff6f4dd.")
  endif()
  set(${adapter_var} "${adapter_dir}/${_file}" PARENT_SCOPE)
endfunction()

if(CMAKE_SCRIPT_MODE_FILE STREQUAL CMAKE_CURRENT_LIST_FILE)
  if(NOT ETCHAT_CACHE_HEADER)
    message(FATAL_ERROR "usage: cmake -DETCHAT_CACHE_HEADER=<cache_registry.h> [-DETCHAT_ADAPTER_DIR=<dir>] -P cache_api.cmake")
  endif()
  if(NOT ETCHAT_ADAPTER_DIR)
    get_filename_component(ETCHAT_ADAPTER_DIR "${CMAKE_CURRENT_LIST_FILE}" DIRECTORY)
  endif()
  etchat_cache_api("${ETCHAT_CACHE_HEADER}" _api)
  etchat_cache_adapter("${ETCHAT_CACHE_HEADER}" "${ETCHAT_ADAPTER_DIR}" _adapter)
  get_filename_component(_name "${_adapter}" NAME)
  message(STATUS "cache-api=${_api} adapter=${_name}")
endif()
