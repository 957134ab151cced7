// What lrp.cc (commands) and lrp_snapshot.cc (views, snapshots, invariants)
// of the desired LRPs (lrp.h) share: the checks a definition, routes and an
// annotation pass, whether from a client or from a snapshot, and the
// invariants of one LRP.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "consensus/status.h"
#include "node/deploy/lrp.h"

namespace ts::deploy::lrp_parts {

// `j`["definition"]: a JSON object, bounded in depth and size, valid UTF-8,
// naming itself with a valid "definition_id" (copied to *id).
Status ParseDefinition(const nlohmann::json& j, nlohmann::json* out, std::string* id);
// A routes value: a JSON object, bounded like a definition
// (kRoutesBytesMax).
Status CheckRoutes(const nlohmann::json& routes);
// An annotation: a valid UTF-8 string of at most kAnnotationBytesMax bytes.
Status CheckAnnotation(const nlohmann::json& annotation);
// Corruption naming the first broken invariant of LRP `guid`.
Status CheckLrp(const std::string& guid, const DesiredLrp& l);

}  // namespace ts::deploy::lrp_parts
