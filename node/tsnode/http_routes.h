// The HTTP port's routes as the gate (http_gate.h) checks them before a
// request's body is read: an unknown path is 404, a known path with a
// method it does not take is 405 with an Allow header, both with a JSON
// body {"code", "message"}. Also which request slots each route uses.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "node/tsnode/http_gate.h"

namespace ts::tsnode {

// The methods `path` (percent-encoded, without the query) takes, as an
// Allow header's value ("GET, POST"); nullopt if no route has that path.
std::optional<std::string> AllowedMethods(std::string_view path);

// 404, 405 or the slot to serve the request in (http_gate.h).
HttpRouteCheck CheckRoute(const HttpHead& head);

}  // namespace ts::tsnode
