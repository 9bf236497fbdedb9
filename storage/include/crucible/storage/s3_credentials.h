// An S3 access key: what a store URL's credentials come down to (SigV4,
// storage/src, signs with it).
#pragma once

#include <string>

#include "crucible/common/secret.h"

namespace crucible::storage {

struct S3Credentials {
  std::string access_key_id;
  Secret secret_access_key;
  std::string session_token;  // temporary credentials; empty if none
  bool empty() const noexcept { return access_key_id.empty(); }
};

}  // namespace crucible::storage
