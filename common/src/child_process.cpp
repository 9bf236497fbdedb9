#include "crucible/common/child_process.h"

#include <sys/prctl.h>
#include <unistd.h>

namespace crucible {

void reset_child_for_exec(int death_signal) noexcept {
  const pid_t parent = getppid();
  sigset_t none;
  sigemptyset(&none);
  sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig == SIGKILL || sig == SIGSTOP) continue;
    sigaction(sig, &dfl, nullptr);  // fails harmlessly for the few that cannot be set
  }
  prctl(PR_SET_PDEATHSIG, death_signal);
  if (getppid() != parent) _exit(1);  // the parent died before the death signal was armed
}

}  // namespace crucible
