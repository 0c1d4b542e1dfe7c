#include "core/row_match.hpp"

#include <algorithm>

#include "core/sql_text.hpp"

namespace pg_idempotent::core {

std::string keys_match(const std::vector<AssignmentTarget>& keys, const std::vector<std::string>& key_eq,
                       const std::string& a, const std::string& b)
{
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < keys.size(); ++i)
        parts.push_back(a + "." + keys[i].name + " " + key_eq[i] + " " + b + "." + keys[i].name);
    return join(parts, " AND ");
}

std::string key_list(const std::vector<AssignmentTarget>& keys, const std::string& alias)
{
    std::vector<std::string> parts;
    for (const auto& k : keys)
        parts.push_back(alias.empty() ? k.name : alias + "." + k.name);
    return join(parts);
}

// record_image_eq is the image comparison behind `*=`: it decides exactly
// what equal v1 digests decide (the digest hashes these images), without
// hashing, and the types match by construction (b is the target's row).
// idem._images_equal compares the same pairs the same way; a call takes at
// most kMaxCallArguments arguments, so wider rows take one per 50 columns.
std::string images_equal(const std::vector<AssignmentTarget>& cols, const std::string& a, const std::string& b,
                         bool pairwise, bool cast_a)
{
    constexpr std::size_t kPairsPerCall = kMaxCallArguments / 2;
    std::vector<std::string> left;
    std::vector<std::string> right;
    for (const auto& c : cols) {
        const std::string ref = a + "." + c.name;
        left.push_back(cast_a ? cast_to_target(ref, c) : ref);
        right.push_back(b + "." + c.name);
    }
    if (!pairwise)
        return "pg_catalog.record_image_eq(ROW(" + join(left) + "), ROW(" + join(right) + "))";
    if (cols.empty())
        return "true";
    std::vector<std::string> calls;
    for (std::size_t i = 0; i < cols.size(); i += kPairsPerCall) {
        std::vector<std::string> pairs;
        for (std::size_t j = i; j < std::min(cols.size(), i + kPairsPerCall); ++j)
            pairs.push_back(left[j] + ", " + right[j]);
        calls.push_back("idem._images_equal(" + join(pairs) + ")");
    }
    return calls.size() == 1 ? calls.front() : "(" + join(calls, " AND ") + ")";
}

std::string row_digest(const std::vector<AssignmentTarget>& cols, const std::string& alias, bool cast)
{
    std::vector<std::string> parts;
    for (const auto& c : cols) {
        const std::string ref = alias + "." + c.name;
        parts.push_back(cast ? cast_to_target(ref, c) : ref);
    }
    // ROW() of one column is still a row; of none, the empty row.
    return "idem._row_digest(ROW(" + join(parts) + "))";
}

std::string key_text(const std::vector<AssignmentTarget>& keys, const std::string& alias)
{
    std::vector<std::string> names;
    std::vector<std::string> values;
    for (const auto& k : keys) {
        names.push_back(k.name_literal);
        values.push_back("COALESCE(" + alias + "." + k.name + "::pg_catalog.text, 'NULL')");
    }
    return "pg_catalog.format('(%s)=(%s)', pg_catalog.concat_ws(', ', " + join(names) +
           "), pg_catalog.concat_ws(', ', " + join(values) + "))";
}

std::string count_where(const std::string& from, const std::string& where)
{
    return "(SELECT pg_catalog.count(*) FROM " + from + (where.empty() ? "" : " WHERE " + where) + ")";
}

std::string null_key_checks(const std::vector<AssignmentTarget>& keys)
{
    std::string c;
    for (std::size_t i = 0; i < keys.size(); ++i) {
        const std::string n = "st.null_" + std::to_string(i);
        c += " WHEN " + n +
             " OPERATOR(pg_catalog.>) 0 THEN idem._raise('23502', pg_catalog.format("
             "'null value in key column %s of the source', pg_catalog.quote_ident(" +
             keys[i].name_literal + ")), pg_catalog.format('%s source %s a NULL in key column %s.', " + n +
             ", CASE WHEN " + n +
             " OPERATOR(pg_catalog.=) 1 THEN 'row has' ELSE 'rows have' END, pg_catalog.quote_ident(" +
             keys[i].name_literal + ")), 'Every key column of every source row must have a value.')\n";
    }
    return c;
}

std::string repeat_hashes_column(const std::vector<AssignmentTarget>& keys)
{
    return "idem._repeat_hashes(" + key_list(keys, "src") + ") AS \"idem$repeats\"";
}

std::string repeat_candidates(const std::vector<AssignmentTarget>& keys)
{
    const std::string repeats = "st.\"idem$repeats\"";
    return "(SELECT " + repeats + " IS NULL OR pg_catalog.cardinality(" + repeats +
           ") OPERATOR(pg_catalog.>) 0 FROM stats st) AND idem._key_repeats((SELECT " + repeats + " FROM stats st), " +
           key_list(keys, "src") + ")";
}

std::string repeated_keys_cte(const std::vector<AssignmentTarget>& keys, bool from_hashes)
{
    const std::string k = key_list(keys, "src");
    const std::string only = from_hashes ? " WHERE " + repeat_candidates(keys) : "";
    return "tops AS MATERIALIZED (SELECT " + k + ", pg_catalog.count(*) AS \"idem$n\" FROM src" + only + " GROUP BY " +
           k + " HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1)";
}

}  // namespace pg_idempotent::core
