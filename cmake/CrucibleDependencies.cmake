# Third-party dependencies, all from Debian 12 packages (scripts/setup.sh
# installs them). libtorch comes from Debian's libtorch-dev by default, or from
# any libtorch given on CMAKE_PREFIX_PATH (e.g. the one inside a pip wheel).
find_package(Torch REQUIRED)
find_package(fmt CONFIG REQUIRED)
find_package(nlohmann_json 3.11 CONFIG REQUIRED)
find_package(CLI11 CONFIG REQUIRED)
find_package(prometheus-cpp CONFIG REQUIRED)
find_package(tomlplusplus CONFIG REQUIRED)
find_package(Threads REQUIRED)
find_package(Boost 1.74 REQUIRED)
if(CRUCIBLE_TESTS)
  find_package(GTest CONFIG REQUIRED)
  include(GoogleTest)
endif()
if(CRUCIBLE_BENCH)
  find_package(benchmark CONFIG REQUIRED)
endif()
