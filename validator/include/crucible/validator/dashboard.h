// The dashboard the validator serves at "/" (docs/dashboard.md): one page of
// HTML, script and style built into the binary from validator/dashboard/,
// which draws its charts from the JSON API in the browser (no second data
// path). Read-only, on the API's server, under its limits.
#pragma once

#include <optional>
#include <span>
#include <string_view>

#include "crucible/common/embedded_asset.h"
#include "crucible/common/http_server.h"

namespace crucible::validator {

// Every file under validator/dashboard/, served at its path there
// ("/index.html", "/assets/dashboard.js", ...). Generated at build time.
std::span<const EmbeddedAsset> dashboard_assets();

// The answer for a GET of `path` when it is the dashboard's: "/" and
// "/uid/<n>" (a uid's page) are index.html, "/assets/<file>" the files.
// None for any other path (the API's).
std::optional<http::Response> dashboard_get(std::string_view path);

}  // namespace crucible::validator
