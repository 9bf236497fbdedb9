#include "crucible/common/secret.h"

#include <string.h>  // explicit_bzero (glibc)

namespace crucible {

Secret::~Secret() { explicit_bzero(value_.data(), value_.size()); }

}  // namespace crucible
