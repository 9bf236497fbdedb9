// Where a wallet password comes from, in order: --password-file, the
// CRUCIBLE_WALLET_PASSWORD environment variable, a prompt on the terminal.
#pragma once

#include <string>

#include "crucible/chain/keys.h"
#include "crucible/common/secret.h"
#include "crucible/common/status.h"

namespace crucible::cli {

inline constexpr const char* kPasswordEnv = "CRUCIBLE_WALLET_PASSWORD";

// `confirm` asks twice on a terminal (for new keys). A password file must be
// 0600 like a key; one trailing newline is stripped.
Result<Secret> obtain_password(const std::string& password_file, bool confirm);

// A keystore file opened with the password from obtain_password; errors
// name the file.
Result<chain::PrivateKey> open_keystore(const std::string& key_file, const std::string& password_file);

}  // namespace crucible::cli
