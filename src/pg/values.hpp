// Values of any type (anyelement arguments) for C++ code: compared with their
// type's own btree ordering and written as canonical text that does not
// depend on session settings (ISO dates, UTC timestamps, postgres-style
// intervals, shortest exact floats), so stored state reads back the same in
// every session and after dump/restore.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace pg_idempotent::pg {

struct TypedValue {
    std::uintptr_t datum = 0;  // a Datum, valid in the memory context it came from
    std::uint32_t type = 0;    // type OID
    bool is_null = true;
};

// <0, 0, >0 by the type's default btree operator class (its collation, for
// text). UserError 42883 when the type has no ordering.
int compare_values(const TypedValue& a, const TypedValue& b);

// The settings-independent text form, and back.
std::string canonical_text(const TypedValue& value);
TypedValue parse_canonical(const std::string& text, std::uint32_t type);

// "timestamp with time zone" (for messages) and "pg_catalog.timestamptz"
// (always schema-qualified, for SQL).
std::string type_display(std::uint32_t type);
std::string type_qualified(std::uint32_t type);

// The built-in types a family writes type-specific SQL for, told apart by
// type OID here (PostgreSQL's own constants), so that no family compares
// type names or OID numbers. kOther for any other type; a domain is kOther
// too (classify its base_type).
enum class TypeKind { kOther, kInteger, kBigint, kNumeric, kDate, kTimestamp, kTimestamptz, kInterval };
TypeKind type_kind(std::uint32_t type);

// The type of an array of the type (0 when it has none).
std::uint32_t array_type(std::uint32_t type);

// A domain's base type (the type itself for any other type).
std::uint32_t base_type(std::uint32_t type);

// The type a stored value is kept and read back as: a domain's base type
// (its CHECK runs for the writer, never for a reader), and only a type a
// superuser owns (built in, or installed by an extension's script). A type is
// the code that parses and compares the value, and whoever reads the state
// later must not run code that the writer chose. UserError 42501 otherwise.
std::uint32_t trusted_state_type(std::uint32_t type);

// Whether the type has a default btree ordering.
bool type_is_ordered(std::uint32_t type);

// The settings used for canonical text, applied around fn (a GUC nest level,
// like a function's SET clauses): state SQL that casts text to a type runs
// inside this, so it parses the canonical form.
void with_canonical_settings(const std::function<void()>& fn);

}  // namespace pg_idempotent::pg
