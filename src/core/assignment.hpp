// A column as a statement writes it, and how a value is converted to its type
// the way INSERT converts it (an assignment). Pure C++: the boundary fills it
// from the catalog (pg::assignment_target), merge and overwrite build SQL
// text with it.
#pragma once

#include <string>

namespace pg_idempotent::core {

struct AssignmentTarget {
    std::string name;          // quoted identifier
    std::string type;          // schema-qualified target type, for CAST
    std::string name_literal;  // the name as a quoted SQL literal, for messages
    // varchar(n), char(n), bit(n), varbit(n): an explicit CAST truncates where
    // an INSERT raises 22001, so these are converted by the type's length
    // coercion function with isExplicit = false, as an assignment is:
    // <length_coercion>(CAST(x AS <base_type>), <typmod>, false). Empty: CAST.
    std::string length_coercion = {};
    std::string base_type = {};
    int typmod = -1;
    // A domain over such a type: the coerced value is then CAST to the
    // domain (type), which checks its constraints. false: not a domain.
    bool domain = false;
    // The column's collation when it is not its type's default (quoted,
    // schema-qualified), else empty: a key compares in the collation of the
    // target's unique index, not the source's (a case-insensitive ICU one
    // makes 'Ann' and 'ANN' one key).
    std::string collation = {};
};

// ref converted to c's target type as an INSERT would convert it (see
// AssignmentTarget): the form keys, versions and the "unchanged" test compare in.
std::string cast_to_target(const std::string& ref, const AssignmentTarget& c);

}  // namespace pg_idempotent::core
