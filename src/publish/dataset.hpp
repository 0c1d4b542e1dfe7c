// A published dataset's name as publish and its siblings resolve it.
#pragma once

#include <string>

#include "pg/spi.hpp"

namespace pg_idempotent {

struct Dataset {
    std::string schema;
    std::string name;
    std::string qualified;  // quoted
    std::string display;    // schema.name
};

// The dataset named "view" (in the current schema, as CREATE VIEW would put
// it) or "schema.view", quoted as the parser reads identifiers; 22023 for
// an empty name, 42602 for more than two parts, 42622 for a part over 63
// bytes, 3F000 when no schema is selected.
Dataset resolve(pg::SpiSession& spi, const std::string& dataset);

}  // namespace pg_idempotent
