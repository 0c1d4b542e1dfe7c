#include "core/assignment.hpp"

namespace pg_idempotent::core {

std::string cast_to_target(const std::string& ref, const AssignmentTarget& c)
{
    const std::string collate = c.collation.empty() ? std::string() : " COLLATE " + c.collation;
    if (c.length_coercion.empty())
        return "CAST(" + ref + " AS " + c.type + ")" + collate;
    const std::string coerced =
        c.length_coercion + "(CAST(" + ref + " AS " + c.base_type + "), " + std::to_string(c.typmod) + ", false)";
    return (c.domain ? "CAST(" + coerced + " AS " + c.type + ")" : coerced) + collate;
}

}  // namespace pg_idempotent::core
