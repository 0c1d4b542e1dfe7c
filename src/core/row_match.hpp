// SQL text that matches rows on a key and compares their content, shared by
// the statements of merge and append (pure C++: text building only). Every
// identifier, type and operator arrives quoted and qualified
// (core/assignment.hpp).
#pragma once

#include <string>
#include <vector>

#include "core/assignment.hpp"

namespace pg_idempotent::core {

// "a.k1 <eq1> b.k1 AND a.k2 <eq2> b.k2": each key with its own equality
// operator (so citext keys compare as their unique index does).
std::string keys_match(const std::vector<AssignmentTarget>& keys, const std::vector<std::string>& key_eq,
                       const std::string& a, const std::string& b);

// "a.k1, a.k2" (or "k1, k2" for an empty alias).
std::string key_list(const std::vector<AssignmentTarget>& keys, const std::string& alias);

// Whether two rows' columns have the same stored images (the one definition
// of "the same row", docs/row-image.md), a's cast to the target's types
// first when cast_a. pairwise: idem._images_equal(a1, b1, a2, b2, ...)
// (0.9.0's SQL objects), which compares the pairs without forming the two
// records; else record_image_eq(ROW(a...), ROW(b...)). No column: equal.
std::string images_equal(const std::vector<AssignmentTarget>& cols, const std::string& a, const std::string& b,
                         bool pairwise, bool cast_a = true);

// idem._row_digest of some columns of a row (cast: as the target stores them).
std::string row_digest(const std::vector<AssignmentTarget>& cols, const std::string& alias, bool cast);

// "(k1, k2)=(v1, v2)" for messages, from the row alias.
std::string key_text(const std::vector<AssignmentTarget>& keys, const std::string& alias);

// "(SELECT pg_catalog.count(*) FROM <from> [WHERE <where>])".
std::string count_where(const std::string& from, const std::string& where = {});

// The WHENs of a CASE over "stats st" (with columns null_0, null_1, ... per
// key column) that raise 23502 for a NULL key in the source.
std::string null_key_checks(const std::vector<AssignmentTarget>& keys);

// stats' column of the key hashes seen more than once:
// idem._repeat_hashes over the key columns of src, AS "idem$repeats".
std::string repeat_hashes_column(const std::vector<AssignmentTarget>& keys);

// tops, for append's and snapshot's statements: the keys with more than one
// row of src (usually none), AS MATERIALIZED; with from_hashes, only the
// rows whose key hash repeats (repeat_candidates).
std::string repeated_keys_cte(const std::vector<AssignmentTarget>& keys, bool from_hashes);

// The WHERE of tops when stats holds the repeated key hashes (column
// "idem$repeats" of "stats", idem._repeat_hashes over the key columns): only
// the rows of those keys (idem._key_repeats: the key's hash among them, no
// operator looked up on the caller's search_path), no row at all when no key repeats
// (a one-time filter: the scan does not run), and every row when stats
// could not tell (NULL).
std::string repeat_candidates(const std::vector<AssignmentTarget>& keys);

}  // namespace pg_idempotent::core
