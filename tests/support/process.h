// Runs a program as a child process and captures what it printed, for tests
// that drive the real binaries.
#pragma once

#include <map>
#include <string>
#include <vector>

namespace crucible::testing {

struct ProcessResult {
  int exit_code = -1;   // -1 when killed by a signal
  std::string out;      // stdout
  std::string err;      // stderr
};

// argv[0] is a path; `env` entries are added to (or replace) the inherited environment.
ProcessResult run_process(const std::vector<std::string>& argv, const std::map<std::string, std::string>& env = {});

// Path of a built binary: bin("crucible") -> "<build>/bin/crucible".
std::string bin(const std::string& name);

}  // namespace crucible::testing
