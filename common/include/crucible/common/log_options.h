// Binds log::LogOptions to the [log] section of a config file.
#pragma once

#include "crucible/common/config.h"
#include "crucible/common/log.h"

namespace crucible::log {

void bind_options(config::Schema& schema, LogOptions& options);

// Parses "info", "json", ... as the config file spells them.
Result<Level> parse_level(std::string_view name);
Result<Format> parse_format(std::string_view name);

}  // namespace crucible::log
