// What every process crucible starts gets between fork and exec: a clean
// signal mask and default dispositions (a parent that blocks SIGTERM for
// sigwait, or ignores SIGPIPE, must not hand that on: a child that inherits
// a blocked SIGTERM cannot be stopped, and its death signal never lands),
// and death with its parent.
#pragma once

#include <csignal>

namespace crucible {

// Call in the forked child only (async-signal-safe calls). `death_signal`
// is sent to the child when the parent dies (PR_SET_PDEATHSIG); a parent
// that is already gone makes the child exit at once.
void reset_child_for_exec(int death_signal = SIGTERM) noexcept;

}  // namespace crucible
