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

#include "core/assignment.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent::pg {

struct Column {
    std::string name;
    int number = 0;  // attnum
    std::uint32_t type_oid = 0;
    std::int32_t typmod = -1;
    std::uint32_t collation = 0;
    bool not_null = false;
    char generated = '\0';       // attgenerated: 's' = stored generated
    char identity = '\0';        // attidentity: 'a' always, 'd' by default
    std::string type_name;       // format_type_with_typemod, for messages
    std::string qualified_type;  // always schema-qualified, for SQL (casts)
};

struct UniqueIndex {
    std::string name;
    bool primary = false;
    bool usable = false;               // valid, immediate, plain columns, no predicate
    std::vector<std::string> columns;  // key columns, in index order
};

struct Relation {
    std::uint32_t oid = 0;
    std::string schema;
    std::string name;
    std::string qualified;        // "schema"."name", quoted as needed
    std::string display;          // schema.name, unquoted: for messages
    char kind = '\0';             // relkind
    std::vector<Column> columns;  // live columns in attnum order (dropped ones left out)
};

// The lock describe_relation takes before it reads the catalog, held to the
// end of the transaction like the locks of a statement.
enum class RelationLock {
    // None: for a caller that must take a serializing lock (pg/unit_lock.hpp)
    // before any relation lock, and for one that takes a stronger lock later
    // under its own lock_timeout (an earlier weaker one would be an upgrade).
    // The relation may then be dropped meanwhile.
    kNone,
    kAccessShare,   // what a statement that reads the relation takes
    kRowExclusive,  // what one that writes it takes
};

// Looks the relation up: locks it first (so a concurrent DROP either waits
// for the description or is over before it starts and the catalog read is
// consistent), then reads it. A relation that does not exist, or no longer
// does once the lock is granted, is one error: UserError 42P01 "relation with
// OID N does not exist" (also with RelationLock::kNone, whatever look-up
// finds it gone). The one-argument form takes AccessShareLock.
Relation describe_relation(std::uint32_t oid, RelationLock lock);
Relation describe_relation(std::uint32_t oid);

// The unique indexes (and primary key) of a table or partitioned table.
std::vector<UniqueIndex> unique_indexes(std::uint32_t relation);

// Columns of the rows a query returns (planned, not run), named as the query
// names them. Caller SQL: runs under the caller's search_path and privileges.
// params: the values of its $1, $2, ... (idem.params), which it may use.
std::vector<Column> describe_query(const std::string& sql, const Params& params = {});

// The relations a query reads (tables, views and the tables behind them),
// found by parsing and rewriting it as the caller, without running it; in
// the order PostgreSQL lists them, each once.
std::vector<std::uint32_t> query_relations(const std::string& sql, const Params& params = {});

// Whether the type is timestamp or timestamptz (with any precision).
bool is_timestamp_type(std::uint32_t type_oid);

// "OPERATOR(schema.op)" for a btree strategy (1 <, 3 =, 5 >) of the type's
// default btree operator class, so citext and other extension types compare
// the way their unique indexes do. UserError 42883 when the type has none.
std::string btree_operator(std::uint32_t type_oid, int strategy, const std::string& column);

// Whether idem._key_hash can hash a key column of this type and collation
// so that keys equal by the type's default btree equality hash alike
// (core/repeat_hashes.hpp): the type's default hash operator family holds
// that equality and gives a 64-bit hash, and a nondeterministic collation
// (equal strings of other bytes) is the only collatable column of the key.
bool key_hashable(std::uint32_t type_oid, std::uint32_t collation, bool only_collatable);

// Whether the type is boolean (not a domain over it: a flag merge reads).
bool is_boolean_type(std::uint32_t type_oid);

// Whether a value of type from converts to type to by assignment (as INSERT does).
bool can_assign(std::uint32_t from, std::uint32_t to);

// Whether CAST(x AS to(to_typmod)), x of type from(from_typmod), gives the
// same result for the same x whatever the session or the time: the
// coercion PostgreSQL builds for it calls only immutable functions (no
// DateStyle or TimeZone dependent input or output), and to is not a domain
// (whose constraints may change). False when there is no such cast.
bool conversion_is_immutable(std::uint32_t from, std::int32_t from_typmod, std::uint32_t to, std::int32_t to_typmod);

// A SQL string literal (quote_literal): for names in messages the SQL builds.
std::string quote_literal(const std::string& text);

// quote_identifier: quotes only when needed (upper case, spaces, quotes...).
std::string quote_ident(const std::string& name);

// The display form of a relation for messages (as regclass prints it).
std::string relation_display_name(std::uint32_t oid);

// The length coercion of varchar, bpchar, bit and varbit (the function that
// applies a typmod, and the type without one), whose isExplicit argument
// decides between truncating (a CAST) and raising 22001 (an assignment);
// nullopt for every other type.
struct LengthCoercion {
    std::string function;   // e.g. pg_catalog.varchar
    std::string base_type;  // e.g. pg_catalog.varchar
};
std::optional<LengthCoercion> length_coercion(std::uint32_t type_oid);

// How INSERT converts a value to column's type (an assignment), in the form
// core::cast_to_target takes: a plain CAST, except for varchar(n), char(n),
// bit(n) and varbit(n), also under a domain, whose length coercion raises
// 22001 for a value too long instead of cutting it as a CAST does.
core::AssignmentTarget assignment_target(const Column& column);

// Whether schema.name is a relation (a syscache look-up, no SPI): for state
// that a newer module version uses before ALTER EXTENSION ... UPDATE ran.
bool relation_exists(const std::string& schema, const std::string& name);
// Its OID, or 0 when there is none.
std::uint32_t relation_oid(const std::string& schema, const std::string& name);

// What pg_class holds now for schema.name: its OID, owner and relkind.
// Syscache look-ups (no SPI, no lock) after taking in the invalidations of
// what committed, so a relation another session created or dropped is seen
// as a fresh catalog read would. nullopt when no relation has that name.
struct RelationHead {
    std::uint32_t oid = 0;
    std::uint32_t owner = 0;
    char kind = '\0';  // relkind
};
std::optional<RelationHead> relation_head(const std::string& schema, const std::string& name);
// Whether a relation with this OID exists now (the same look-up).
bool relation_exists(std::uint32_t oid);

// Sets the relation's comment (as COMMENT ON TABLE, without parsing one:
// publish comments every version table it makes).
void comment_on_relation(std::uint32_t relation, const std::string& text);

// Whether schema.name is a function (of any arguments; a syscache look-up).
bool function_exists(const std::string& schema, const std::string& name);

// Whether schema.table exists and has a live column of that name.
bool column_exists(const std::string& schema, const std::string& table, const std::string& column);

}  // namespace pg_idempotent::pg
