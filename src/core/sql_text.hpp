// Small helpers for SQL text the extension writes itself. Pure C++: callers
// pass identifiers already quoted by the boundary layer (pg::quote_ident) and
// values only as $n parameters, so nothing here can splice caller text.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace pg_idempotent::core {

// "a, b, c" (or "" for none).
std::string join(const std::vector<std::string>& parts, const std::string& separator = ", ");

// The text of a text[] literal of names, as a caller writes it in a hint
// ('{a,b}' is {a,b}): an element that array input would read otherwise
// (empty, NULL, white space, quotes, commas, braces, backslashes) is
// double-quoted, with quotes and backslashes escaped.
std::string text_array_literal(const std::vector<std::string>& names);

// "SELECT <columns> FROM <relation>"; an empty column list selects zero-column
// rows, which still count.
std::string select_columns(const std::vector<std::string>& quoted_columns, const std::string& qualified_relation);

// A scalar subquery turning options (a text[] expression of name=value
// items, as pg_class.reloptions and pg_attribute.attoptions hold them) into
// the list ALTER ... SET (...) takes, name='value', ... (NULL for none);
// filter, if given, is a further condition on each item o.
std::string option_list_sql(const std::string& options, const std::string& filter = "");

// name + suffix within PostgreSQL's 63-byte identifier limit: the name is cut
// (never inside a UTF-8 character) so that the suffix survives whole.
std::string identifier_with_suffix(const std::string& name, const std::string& suffix);

// Rewrites "CREATE <prefix> ON <from> <rest>" as "CREATE <prefix> ON <to>
// <rest>", where definition is a statement PostgreSQL deparsed (an index or
// a trigger) and from is the relation's quoted name exactly as deparsed.
// Returns "" unless " ON <from> " occurs exactly once, so a name that looks
// like the marker can never retarget the wrong part of the text.
std::string retarget_definition(const std::string& definition, const std::string& from, const std::string& to);

// The parent's index, deparsed by pg_get_indexdef as
//   CREATE [UNIQUE] INDEX <index> ON ONLY <parent> USING ...
// as an unnamed index on another table (PostgreSQL picks a free name):
//   CREATE [UNIQUE] INDEX ON <table> USING ...
// Returns "" when the definition does not start exactly that way.
std::string index_definition_on(const std::string& definition, const std::string& quoted_index, const std::string& from,
                                const std::string& to);

// A caller's statement as the body of a subquery in FROM: "(\n<statement>\n)",
// without the trailing semicolons and white space it may end with. The new
// lines keep a trailing "-- comment" from swallowing the parenthesis. In a
// subquery the statement may start with its own WITH, and still sees the
// CTEs of the statement around it. (A semicolon followed by a comment stays,
// and is the syntax error it would be in any subquery.)
std::string as_subquery(const std::string& statement);

// The most arguments a function or aggregate call takes (FUNC_MAX_ARGS):
// idem._digest_agg and idem._digest_sample_agg take one per column, so wider
// rows are hashed by the digest receiver instead.
constexpr std::size_t kMaxCallArguments = 100;

// The v1 checksum of the rows of a statement (SQL the extension wrote, which
// returns column_count >= 1 columns) computed by the aggregate
// idem._digest_agg, so that PostgreSQL may split the scan among parallel
// workers. Its one row, one column is the digest text ("v1:<count>:<hex>").
// The columns are renamed by position, so unnamed or equally named ones stay
// distinct.
std::string digest_aggregate_sql(const std::string& statement, std::size_t column_count);

// c1, c2, ... cN, each after qualifier ("q." gives q.c1, ...): the names a
// statement's columns get when it is renamed by position (AS q (c1, ...)),
// so that unnamed or equally named columns stay distinct.
std::vector<std::string> positional_columns(std::size_t column_count, const std::string& qualifier = "");

// From one pass over a statement's rows: the digest and sample of the rows
// as it returns them (idem._digest_sample_agg over columns q.c1, q.c2, ...),
// and the digest of expressions over those columns (idem._digest_agg; each
// expression names them q.cN, e.g. casts). One row of two texts.
std::string sampled_digest_and_digest_sql(const std::string& statement, std::size_t column_count,
                                          const std::vector<std::string>& expressions);

// A statement's rows renamed by position (columns q.c1, q.c2, ...), followed
// by expressions over those columns (each naming them q.cN, e.g. casts):
// the rows as it returns them and what they become, side by side, from one
// pass over it.
std::string columns_beside_sql(const std::string& statement, std::size_t column_count,
                               const std::vector<std::string>& expressions = {});

}  // namespace pg_idempotent::core
