#pragma once

// JSON forms of the table's options, state and info (nlohmann::json), for
// checkpoint manifests and for the service's info and admin replies.
// Non-finite doubles are written as the strings "inf", "-inf" and "nan"
// (JSON has no such numbers). The *FromJson functions throw InvalidArgument
// naming the missing or mistyped key; they do not Validate() the result.

#include <nlohmann/json.hpp>

#include "replay/table_types.h"

namespace rlswarm::replay {

nlohmann::json SignatureToJson(const Signature& signature);
Signature SignatureFromJson(const nlohmann::json& j);

nlohmann::json RateLimiterOptionsToJson(const RateLimiterOptions& options);
RateLimiterOptions RateLimiterOptionsFromJson(const nlohmann::json& j);

nlohmann::json TableOptionsToJson(const TableOptions& options);
TableOptions TableOptionsFromJson(const nlohmann::json& j);

nlohmann::json TableStateToJson(const TableState& state);
TableState TableStateFromJson(const nlohmann::json& j);

nlohmann::json TableInfoToJson(const TableInfo& info);

}  // namespace rlswarm::replay
