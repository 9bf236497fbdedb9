#include "crucible/cli/password.h"

#include <fcntl.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>

#include "crucible/chain/keystore.h"

namespace crucible::cli {
namespace {

std::string strip_newline(std::string s) {
  if (!s.empty() && s.back() == '\n') s.pop_back();
  if (!s.empty() && s.back() == '\r') s.pop_back();
  return s;
}

// Reads a line from /dev/tty with echo off.
Result<Secret> prompt(const char* question) {
  int fd = open("/dev/tty", O_RDWR | O_CLOEXEC);
  if (fd < 0) {
    return invalid_argument(
        "no terminal to ask for the keystore password on: pass --password-file FILE (mode 0600) "
        "or set {}",
        kPasswordEnv);
  }
  termios old{};
  bool have_termios = tcgetattr(fd, &old) == 0;
  if (have_termios) {
    termios quiet = old;
    quiet.c_lflag &= ~static_cast<tcflag_t>(ECHO);
    tcsetattr(fd, TCSAFLUSH, &quiet);
  }
  (void)!write(fd, question, std::char_traits<char>::length(question));
  std::string line;
  char c = 0;
  while (read(fd, &c, 1) == 1 && c != '\n') line += c;
  (void)!write(fd, "\n", 1);
  if (have_termios) tcsetattr(fd, TCSAFLUSH, &old);
  close(fd);
  return Secret(strip_newline(std::move(line)));
}

}  // namespace

Result<Secret> obtain_password(const std::string& password_file, bool confirm) {
  if (!password_file.empty()) {
    CRUCIBLE_ASSIGN_OR_RETURN(std::string content, chain::read_secret_file(password_file, 4096));
    return Secret(strip_newline(std::move(content)));
  }
  if (const char* env = std::getenv(kPasswordEnv); env != nullptr) return Secret(env);
  CRUCIBLE_ASSIGN_OR_RETURN(Secret first, prompt("Password: "));
  if (confirm) {
    CRUCIBLE_ASSIGN_OR_RETURN(Secret second, prompt("Repeat password: "));
    if (first.reveal() != second.reveal()) return invalid_argument("the passwords differ");
  }
  return first;
}

Result<chain::PrivateKey> open_keystore(const std::string& key_file, const std::string& password_file) {
  CRUCIBLE_ASSIGN_OR_RETURN(std::string text, chain::read_secret_file(key_file));
  CRUCIBLE_ASSIGN_OR_RETURN(Secret password, obtain_password(password_file, false));
  auto key = chain::decrypt_keystore(text, password);
  if (!key.is_ok()) return key.status().with_context(key_file);
  return key;
}

}  // namespace crucible::cli
