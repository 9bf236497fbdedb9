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
  # The folder's internal headers (PCCL's internal_include/): its own
  # sources see them; other modules never do; tests and benches reach them
  # through crucible::<folder>_internal (crucible_internal_headers).
  if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/internal_include)
    target_include_directories(crucible_${name} PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/internal_include)
  endif()
  target_link_libraries(crucible_${name} PUBLIC ${M_DEPS} PRIVATE ${M_PRIVATE_DEPS})
  crucible_warnings(crucible_${name})
endfunction()

function(crucible_executable name)
  cmake_parse_arguments(E "" "" "SOURCES;DEPS" ${ARGN})
  add_executable(${name} ${E_SOURCES})
  target_link_libraries(${name} PRIVATE ${E_DEPS})
  crucible_warnings(${name})
endfunction()

# crucible_internal_headers(FOLDER MODULE) -> interface crucible::<FOLDER>_internal:
# the folder's internal_include/ plus MODULE, for tests and benches only.
function(crucible_internal_headers folder module)
  add_library(crucible_${folder}_internal INTERFACE)
  add_library(crucible::${folder}_internal ALIAS crucible_${folder}_internal)
  target_include_directories(crucible_${folder}_internal INTERFACE ${CMAKE_CURRENT_SOURCE_DIR}/internal_include)
  target_link_libraries(crucible_${folder}_internal INTERFACE crucible::${module})
endfunction()
