// Catalog look-ups and identifier quoting, as plain C++ values.
//
// Relations arrive as regclass (an OID) and leave as a fully quoted,
// schema-qualified name: SQL the extension writes never depends on the
// caller's search_path to find a relation.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace pg_idempotent::pg {

struct Column {
    std::string name;
    int number = 0;               // attnum
    std::uint32_t type_oid = 0;
    std::int32_t typmod = -1;
    std::uint32_t collation = 0;
    bool not_null = false;
    char generated = '\0';        // attgenerated: 's' = stored generated
    char identity = '\0';         // attidentity: 'a' always, 'd' by default
    std::string type_name;        // format_type_with_typemod, for messages
};

struct Relation {
    std::uint32_t oid = 0;
    std::string schema;
    std::string name;
    std::string qualified;        // "schema"."name", quoted as needed
    char kind = '\0';             // relkind
    std::vector<Column> columns;  // live columns in attnum order (dropped ones left out)
};

// Looks the relation up; UserError (42P01) when the OID names nothing.
Relation describe_relation(std::uint32_t oid);

// quote_identifier: quotes only when needed (upper case, spaces, quotes...).
std::string quote_ident(const std::string& name);

// The display form of a relation for messages (as regclass prints it).
std::string relation_display_name(std::uint32_t oid);

}  // namespace pg_idempotent::pg
