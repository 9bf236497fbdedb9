# Helpers that give every crucible target the same shape: warnings as errors
# on project code (third-party headers come in as SYSTEM through their
# imported targets), public headers under <module>/include.

# -Wno-restrict: GCC 12 reports false overlaps inside libstdc++'s string
# code at -O2 and above (GCC bug 105329).
function(crucible_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Werror -Wno-restrict>)
endfunction()

# crucible_module(NAME SOURCES ... DEPS ...) -> library crucible_<NAME>, alias crucible::<NAME>
function(crucible_module name)
  cmake_parse_arguments(M "" "" "SOURCES;DEPS;PRIVATE_DEPS" ${ARGN})
  add_library(crucible_${name} ${M_SOURCES})
  add_library(crucible::${name} ALIAS crucible_${name})
  target_include_directories(crucible_${name} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>)
  target_link_libraries(crucible_${name} PUBLIC ${M_DEPS} PRIVATE ${M_PRIVATE_DEPS})
  crucible_warnings(crucible_${name})
endfunction()

function(crucible_executable name)
  cmake_parse_arguments(E "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${E_SOURCES})
  target_link_libraries(${name} PRIVATE ${E_DEPS})
  crucible_warnings(${name})
endfunction()
