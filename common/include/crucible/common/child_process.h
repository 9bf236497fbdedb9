// What every process crucible starts gets between fork and exec: a clean
// signal mask and default dispositions (a parent that blocks SIGTERM for
// sigwait, or ignores SIGPIPE, must not hand that on: a child that inherits
// a blocked SIGTERM cannot be stopped, and its death signal never lands),
// and death with its parent.
#pragma once

#include <csignal>
#include <cstdint>

#include "crucible/common/status.h"

namespace crucible {

// A port on 127.0.0.1 that was free just now, for a server a child process
// will bind. Drawn below the kernel's ephemeral range (32768-60999 on
// Linux): a port from that range (what binding port 0 gives) can be handed
// to any outgoing connection of this machine between this check and the
// child's bind, which then fails with "address already in use". Never the
// same port twice in this process.
Result<std::uint16_t> free_loopback_port();

// Call in the forked child only (async-signal-safe calls). `death_signal`
// is sent to the child when the parent dies (PR_SET_PDEATHSIG); a parent
// that is already gone makes the child exit at once.
void reset_child_for_exec(int death_signal = SIGTERM) noexcept;

}  // namespace crucible
