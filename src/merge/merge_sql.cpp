#include "merge/merge_sql.hpp"

#include "core/sql_text.hpp"

namespace pg_idempotent::core {

namespace {

const char* const kEq = "OPERATOR(pg_catalog.=)";
const char* const kGt = "OPERATOR(pg_catalog.>)";
const char* const kPlus = "OPERATOR(pg_catalog.+)";
const char* const kMinus = "OPERATOR(pg_catalog.-)";
const char* const kDeleteFlag = "\"idem$delete\"";
const char* const kAction = "\"idem$action\"";

std::string action_is(const std::string& alias, int action)
{
    return alias + "." + kAction + " " + kEq + " " + std::to_string(action);
}

// a.k1 = b.k1 AND a.k2 = b.k2, with each key's own equality operator.
std::string keys_match(const MergeSpec& s, const std::string& a, const std::string& b)
{
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < s.keys.size(); ++i)
        parts.push_back(a + "." + s.keys[i].name + " " + s.key_eq[i] + " " + b + "." + s.keys[i].name);
    return join(parts, " AND ");
}

std::string key_list(const MergeSpec& s, const std::string& alias)
{
    std::vector<std::string> parts;
    for (const auto& k : s.keys)
        parts.push_back(alias.empty() ? k.name : alias + "." + k.name);
    return join(parts);
}

// The row image digest of some columns; cast = compare as the target stores.
std::string digest_of(const std::vector<MergeColumn>& cols, const std::string& alias, bool cast)
{
    std::vector<std::string> parts;
    for (const auto& c : cols) {
        const std::string ref = alias + "." + c.name;
        parts.push_back(cast ? cast_to_target(ref, c) : ref);
    }
    // ROW() of one column is still a row; of none, the empty row.
    return "idem._row_digest(ROW(" + join(parts) + "))";
}

// Whether two rows' columns have the same stored images (what "unchanged"
// means: docs/merge.md), a's cast to the target's types first when
// cast_a: record_image_eq, the image comparison behind `*=`, column by
// column. It decides exactly what equal v1 digests decide (the digest hashes
// these images), without hashing, and the types match by construction (b
// is the target's row). ROW() of no column is the empty row: equal.
std::string images_equal(const std::vector<MergeColumn>& cols, const std::string& a, const std::string& b,
                         bool cast_a = true)
{
    std::vector<std::string> left;
    std::vector<std::string> right;
    for (const auto& c : cols) {
        const std::string ref = a + "." + c.name;
        left.push_back(cast_a ? cast_to_target(ref, c) : ref);
        right.push_back(b + "." + c.name);
    }
    return "pg_catalog.record_image_eq(ROW(" + join(left) + "), ROW(" + join(right) + "))";
}

// "(k1, k2)=(v1, v2)" for messages, from the row alias.
std::string key_text(const MergeSpec& s, const std::string& alias)
{
    std::vector<std::string> names;
    std::vector<std::string> values;
    for (const auto& k : s.keys) {
        names.push_back(k.name_literal);
        values.push_back("COALESCE(" + alias + "." + k.name + "::pg_catalog.text, 'NULL')");
    }
    return "pg_catalog.format('(%s)=(%s)', pg_catalog.concat_ws(', ', " + join(names) +
           "), pg_catalog.concat_ws(', ', " + join(values) + "))";
}

std::string count_where(const std::string& from, const std::string& where = {})
{
    return "(SELECT pg_catalog.count(*) FROM " + from + (where.empty() ? "" : " WHERE " + where) + ")";
}

}  // namespace

std::string cast_to_target(const std::string& ref, const MergeColumn& c)
{
    if (c.length_coercion.empty())
        return "CAST(" + ref + " AS " + c.type + ")";
    const std::string coerced =
        c.length_coercion + "(CAST(" + ref + " AS " + c.base_type + "), " + std::to_string(c.typmod) + ", false)";
    return c.domain ? "CAST(" + coerced + " AS " + c.type + ")" : coerced;
}

std::string build_merge_sql(const MergeSpec& s)
{
    const bool versioned = s.version.has_value();
    const bool deletes = s.delete_column.has_value();
    std::string sql = "WITH\n";

    // src: keys (and the version) cast to the target's types so that they
    // compare the way the unique index does; other columns stay as given and
    // are converted by the INSERT/UPDATE itself (assignment casts).
    {
        std::vector<std::string> cols;
        for (const auto& c : s.insert_columns) {
            bool is_key = false;
            for (const auto& k : s.keys)
                is_key = is_key || k.name == c.name;
            const bool cast = is_key || (versioned && s.version->name == c.name);
            cols.push_back(cast ? cast_to_target("s." + c.name, c) + " AS " + c.name
                                : "s." + c.name);
        }
        if (deletes)
            cols.push_back("CAST(s." + *s.delete_column + " AS pg_catalog.bool) AS " + kDeleteFlag);
        // A source known unique on the key (a table with such an index) is
        // not copied: inlined, the planner can join it to the target through
        // both indexes, as a hand-written MERGE would.
        sql += std::string("src AS ") + (s.check_duplicates ? "MATERIALIZED" : "NOT MATERIALIZED") + " (SELECT " +
               join(cols) + " FROM (" + s.source_sql + "\n) AS s),\n";
    }

    // stats and dups: what the checks need.
    {
        std::vector<std::string> cols = {"pg_catalog.count(*) AS n"};
        if (s.check_nulls) {
            for (std::size_t i = 0; i < s.keys.size(); ++i)
                cols.push_back("pg_catalog.count(*) FILTER (WHERE " + s.keys[i].name +
                               " IS NULL) AS null_" + std::to_string(i));
        }
        if (versioned)
            cols.push_back("pg_catalog.count(*) FILTER (WHERE " + s.version->name + " IS NULL) AS null_version");
        sql += "stats AS MATERIALIZED (SELECT " + join(cols) + " FROM src),\n";
    }
    std::vector<MergeColumn> all_src = s.insert_columns;
    if (deletes)
        all_src.push_back(MergeColumn{kDeleteFlag, "pg_catalog.bool", "'delete'"});
    if (s.check_duplicates) {
        const std::string k = key_list(s, "src");
        if (!versioned) {
            sql += "dups AS MATERIALIZED (SELECT " + k + " FROM src GROUP BY " + k +
                   " HAVING pg_catalog.count(DISTINCT " + digest_of(all_src, "src", false) + ") " + kGt +
                   " 1 LIMIT 1),\n";
        } else {
            // Only the rows of the highest version compete.
            sql += "tops AS MATERIALIZED (SELECT " + k + ", pg_catalog.max(src." + s.version->name +
                   ") AS top FROM src GROUP BY " + k + " HAVING pg_catalog.count(*) " + kGt + " 1),\n";
            sql += "dups AS MATERIALIZED (SELECT " + key_list(s, "src") + " FROM src JOIN tops ON " +
                   keys_match(s, "src", "tops") + " AND src." + s.version->name + " " + s.version_eq +
                   " tops.top GROUP BY " + k + " HAVING pg_catalog.count(DISTINCT " +
                   digest_of(all_src, "src", false) + ") " + kGt + " 1 LIMIT 1),\n";
        }
    }

    // checks: the first problem raises (in this order), else true.
    {
        std::string c = "checks AS MATERIALIZED (SELECT CASE\n";
        if (s.check_nulls) {
            for (std::size_t i = 0; i < s.keys.size(); ++i) {
                const std::string n = "st.null_" + std::to_string(i);
                c += " WHEN " + n + " " + kGt + " 0 THEN idem._raise('23502', pg_catalog.format("
                     "'null value in key column %s of the source', pg_catalog.quote_ident(" +
                     s.keys[i].name_literal + ")), pg_catalog.format('%s source rows have a NULL in key column %s.', " +
                     n + ", pg_catalog.quote_ident(" + s.keys[i].name_literal +
                     ")), 'Every key column of every source row must have a value.')\n";
            }
        }
        if (versioned) {
            c += " WHEN st.null_version " + std::string(kGt) + " 0 THEN idem._raise('23502', pg_catalog.format("
                 "'null value in version column %s of the source', pg_catalog.quote_ident(" +
                 s.version->name_literal + ")), pg_catalog.format('%s source rows have no version.', st.null_version), "
                 "'Every source row needs a version when version_column is given.')\n";
        }
        if (s.check_duplicates) {
            c += " WHEN EXISTS (SELECT FROM dups) THEN (SELECT idem._raise('21000', "
                 "'source rows with the same key differ', pg_catalog.format('Key %s appears more than once with different values" +
                 std::string(versioned ? " at its highest version" : "") + ".', " + key_text(s, "d") +
                 "), " +
                 (versioned ? "'Give each change of a key a higher version.'"
                            : "'Remove the duplicates, or pass version_column so that the newest row wins.'") +
                 ") FROM dups d)\n";
        }
        if (s.delete_missing && !s.allow_empty) {
            c += " WHEN st.n " + std::string(kEq) + " 0 THEN idem._raise('22023', "
                 "'the source is empty and delete_missing would delete every target row in scope', "
                 "'An empty snapshot usually means a failed extract.', "
                 "'Pass allow_empty => true if the source is really empty.')\n";
        }
        if (c.find(" WHEN ") == std::string::npos)
            c = "checks AS MATERIALIZED (SELECT true AS ok),\n";  // nothing to check: stats is never read
        else
            c += " ELSE true END AS ok FROM stats st),\n";
        sql += c;
    }

    // dedup: one row per key.
    if (s.check_duplicates) {
        const std::string k = key_list(s, "");
        sql += "dedup AS MATERIALIZED (SELECT DISTINCT ON (" + k + ") * FROM src WHERE (SELECT ok FROM checks) ORDER BY " +
               k + (versioned ? ", " + s.version->name + " DESC" : "") + "),\n";
    } else {
        sql += "dedup AS NOT MATERIALIZED (SELECT * FROM src WHERE (SELECT ok FROM checks)),\n";
    }

    // plan: each source key's action.
    {
        const std::string matched = "t." + s.keys[0].name + " IS NOT NULL";
        // Only the keys with something to do (or to report as stale, a
        // conflict, an absent delete) are kept: a replay's unchanged keys
        // are counted (count of dedup less the rows kept), not copied into
        // the CTE's tuplestore (1M rows of a replay spilled 74 MB to temp
        // files and were read back for the counts). OFFSET 0 keeps the
        // action computed once per row (a flattened subquery would compute
        // the CASE, row comparisons included, in the filter and again in the
        // list).
        std::string p = "plan AS MATERIALIZED (SELECT * FROM (SELECT d.*, CASE\n";
        if (s.tombstones) {
            // A key deleted at a version at least this row's stays deleted.
            // The tombstone's canonical text is parsed as the caller (the
            // version type's input function is the caller's to run).
            // A row at the tombstone's version stays deleted (a delete wins a
            // tie); a replayed delete at that version is simply unchanged.
            const std::string tbv = "idem._from_canonical(tb.version, NULL::" + s.version_type + ")";
            p += " WHEN NOT (" + matched + ") AND tb.version IS NOT NULL AND d." + std::string(kDeleteFlag) +
                 " IS NOT TRUE AND NOT (" + tbv + " " + s.version_lt + " d." + s.version->name + ") THEN " +
                 std::to_string(kStale) + "\n";
            p += " WHEN NOT (" + matched + ") AND tb.version IS NOT NULL AND d." + std::string(kDeleteFlag) +
                 " IS TRUE AND d." + s.version->name + " " + s.version_lt + " " + tbv + " THEN " +
                 std::to_string(kStale) + "\n";
        }
        if (deletes)
            p += " WHEN d." + std::string(kDeleteFlag) + " IS TRUE AND NOT (" + matched + ") THEN " +
                 std::to_string(kDeleteAbsent) + "\n";
        p += " WHEN NOT (" + matched + ") THEN " + std::to_string(kInsert) + "\n";
        if (versioned)
            p += " WHEN d." + s.version->name + " " + s.version_lt + " t." + s.version->name + " THEN " +
                 std::to_string(kStale) + "\n";
        if (deletes)
            p += " WHEN d." + std::string(kDeleteFlag) + " IS TRUE THEN " + std::to_string(kDelete) + "\n";
        p += " WHEN " + images_equal(s.update_columns, "d", "t") + " THEN " + std::to_string(kUnchanged) + "\n";
        if (versioned)
            p += " WHEN d." + s.version->name + " " + s.version_eq + " t." + s.version->name + " THEN " +
                 std::to_string(kConflict) + "\n";
        p += " ELSE " + std::to_string(kUpdate) + " END AS " + kAction + "\n";
        p += " FROM dedup d LEFT JOIN " + s.target + " AS t ON " + keys_match(s, "t", "d");
        if (s.tombstones)
            p += std::string("\n LEFT JOIN idem._tombstones($1::pg_catalog.regclass) AS tb ON tb.key_digest ") + kEq + " " +
                 digest_of(s.keys, "d", false);
        p += "\n OFFSET 0) AS x WHERE x." + std::string(kAction) + " OPERATOR(pg_catalog.<>) " +
             std::to_string(kUnchanged) + "),\n";
        sql += p;
    }

    if (versioned) {
        sql += "checks2 AS MATERIALIZED (SELECT CASE WHEN EXISTS (SELECT FROM plan p WHERE " +
               action_is("p", kConflict) + ") THEN (SELECT idem._raise('21000', "
               "'a source row has the same version as the target row but different content', "
               "pg_catalog.format('Key %s has version %s in both.', " + key_text(s, "p") + ", p." +
               s.version->name + "::pg_catalog.text), 'A changed row needs a higher version.') FROM plan p WHERE " +
               action_is("p", kConflict) + " LIMIT 1) ELSE true END AS ok),\n";
    } else {
        sql += "checks2 AS MATERIALIZED (SELECT true AS ok),\n";
    }

    std::string scope = s.delete_scope ? "(" + *s.delete_scope + "\n) AND " : "";
    std::string missing_where = scope + "NOT EXISTS (SELECT FROM dedup d WHERE " + keys_match(s, "t", "d") + ")";

    // What the counts need of plan and dedup, in one pass over each (plan's
    // tuplestore holds every source row of a first load: each count read it
    // once more). The keys plan left out are the unchanged ones; absent
    // deletes count as unchanged too.
    auto tally_of = [&](int action) {
        return "pg_catalog.count(*) FILTER (WHERE p." + std::string(kAction) + " " + kEq + " " +
               std::to_string(action) + ")";
    };
    sql += "tally AS MATERIALIZED (SELECT " + count_where("dedup") + " AS n, pg_catalog.count(*) AS kept, " +
           tally_of(kInsert) + " AS to_insert, " + tally_of(kUpdate) + " AS to_update, " + tally_of(kDelete) +
           " AS to_delete, " + tally_of(kStale) + " AS stale, " + tally_of(kDeleteAbsent) + " AS absent FROM plan p),\n";
    const std::string unchanged_in_plan = "ta.n " + std::string(kMinus) + " ta.kept " + kPlus + " ta.absent";
    std::string counts;
    if (s.dry_run) {
        const std::string missing =
            s.delete_missing ? count_where(s.target + " AS t", missing_where) : std::string("0");
        counts = "SELECT ta.to_insert::pg_catalog.int8 AS inserted,\n ta.to_update::pg_catalog.int8 AS updated,\n (ta.to_delete " +
                 std::string(kPlus) + " " + missing + ")::pg_catalog.int8 AS deleted,\n (" + unchanged_in_plan +
                 ")::pg_catalog.int8 AS unchanged,\n ta.stale::pg_catalog.int8 AS stale\n FROM checks, checks2, tally ta";
        // (checks2 raises for conflicts, as a real run would.)
        return sql.substr(0, sql.size() - 2) + "\n" + counts;
    }

    // Not copied again: ins, lck and the counts each read plan's tuplestore
    // through it (on a first load, plan holds every source row).
    sql += "todo AS NOT MATERIALIZED (SELECT * FROM plan p WHERE p." + std::string(kAction) +
           " OPERATOR(pg_catalog.=) ANY ('{1,2,3}'::pg_catalog.int4[]) AND (SELECT ok FROM checks2)),\n";

    // Inserts: new keys, in key order. A key a concurrent transaction has
    // inserted meanwhile is updated instead (as if the two ran one after the
    // other), unless its content is already the same.
    {
        std::vector<std::string> names;
        for (const auto& c : s.insert_columns)
            names.push_back(c.name);
        std::vector<std::string> from_todo;
        for (const auto& c : s.insert_columns)
            from_todo.push_back("p." + c.name);
        std::string ins = "ins AS (INSERT INTO " + s.target + " AS t (" + join(names) + ")" +
                          (s.override_identity ? " OVERRIDING SYSTEM VALUE" : "") + "\n SELECT " + join(from_todo) +
                          " FROM todo p WHERE " + action_is("p", kInsert) + " ORDER BY " + key_list(s, "p") +
                          "\n ON CONFLICT (" + key_list(s, "") + ") ";
        if (s.update_columns.empty()) {
            ins += "DO NOTHING";
        } else {
            std::vector<std::string> upd;
            std::vector<std::string> exc;
            for (const auto& c : s.update_columns) {
                upd.push_back(c.name);
                exc.push_back("EXCLUDED." + c.name);
            }
            ins += "DO UPDATE SET (" + join(upd) + ") = ROW(" + join(exc) + ") WHERE NOT (" +
                   images_equal(s.update_columns, "EXCLUDED", "t", false) + ")";
            if (versioned)
                ins += " AND NOT (EXCLUDED." + s.version->name + " " + s.version_lt + " t." + s.version->name + ")";
        }
        // xmax = 0 tells a fresh insert from a conflict turned update. A
        // partitioned table has no xmax here: there a row a concurrent
        // transaction inserted meanwhile counts as inserted (docs/merge.md).
        ins += s.partitioned ? "\n RETURNING true AS fresh),\n"
                             : "\n RETURNING (t.xmax " + std::string(kEq) + " '0'::pg_catalog.xid) AS fresh),\n";
        sql += ins;
    }

    // Rows to update or delete are locked in key order first, so that two
    // merges over overlapping keys queue instead of deadlocking.
    // lck returns the planned rows it locked, so the UPDATE and DELETE below
    // join the target through them alone (one CTE scan, index look-ups).
    sql += "lck AS MATERIALIZED (SELECT p.* FROM " + s.target + " AS t JOIN todo p ON " +
           keys_match(s, "t", "p") + " WHERE p." + std::string(kAction) +
           " OPERATOR(pg_catalog.=) ANY ('{2,3}'::pg_catalog.int4[]) ORDER BY " + key_list(s, "t") +
           " FOR UPDATE OF t),\n";
    if (!s.update_columns.empty()) {
        std::vector<std::string> upd;
        std::vector<std::string> vals;
        for (const auto& c : s.update_columns) {
            upd.push_back(c.name);
            vals.push_back("p." + c.name);
        }
        // With versions, the guard is checked again against the row as it is
        // after any wait for its lock (EvalPlanQual): a newer version that a
        // concurrent merge committed meanwhile is never overwritten.
        const std::string newer_guard =
            versioned ? " AND NOT (p." + s.version->name + " " + s.version_lt + " t." + s.version->name + ")" : "";
        sql += "upd AS (UPDATE " + s.target + " AS t SET (" + join(upd) + ") = ROW(" + join(vals) +
               ") FROM lck AS p WHERE " + action_is("p", kUpdate) + " AND " + keys_match(s, "t", "p") + newer_guard +
               " RETURNING 1),\n";
    } else {
        sql += "upd AS (SELECT 1 WHERE false),\n";
    }
    if (deletes) {
        const std::string newer_guard =
            versioned ? " AND NOT (p." + s.version->name + " " + s.version_lt + " t." + s.version->name + ")" : "";
        sql += "del AS (DELETE FROM " + s.target + " AS t USING lck AS p WHERE " + action_is("p", kDelete) +
               " AND " + keys_match(s, "t", "p") + newer_guard + " RETURNING 1),\n";
    } else {
        sql += "del AS (SELECT 1 WHERE false),\n";
    }
    if (s.delete_missing) {
        sql += "miss AS (DELETE FROM " + s.target + " AS t WHERE " + missing_where +
               " AND (SELECT ok FROM checks2) RETURNING 1),\n";
    } else {
        sql += "miss AS (SELECT 1 WHERE false),\n";
    }
    if (s.tombstones) {
        // Versioned deletes (applied, or for keys the target lacks) leave a
        // tombstone so that an older row cannot bring the key back.
        sql += "tomb AS MATERIALIZED (SELECT idem._tombstones_put($1::pg_catalog.regclass,"
               " pg_catalog.array_agg(" + digest_of(s.keys, "p", false) + "),"
               " pg_catalog.array_agg(pg_catalog.jsonb_build_array(" + key_list(s, "p") + ")),"
               " pg_catalog.array_agg(idem._canonical_text(p." + s.version->name + "))) AS n"
               " FROM plan p WHERE p." + std::string(kAction) +
               " OPERATOR(pg_catalog.=) ANY ('{3,7}'::pg_catalog.int4[]) AND (SELECT ok FROM checks2)),\n";
    } else {
        sql += "tomb AS (SELECT 0 AS n),\n";
    }
    sql.erase(sql.size() - 2);  // the last ",\n"
    sql += "\nSELECT " + count_where("ins", "fresh") + "::pg_catalog.int8 AS inserted,\n (" +
           count_where("upd") + " " + kPlus + " " + count_where("ins", "NOT fresh") +
           ")::pg_catalog.int8 AS updated,\n (" + count_where("del") + " " + kPlus + " " + count_where("miss") +
           ")::pg_catalog.int8 AS deleted,\n (" +
           unchanged_in_plan + " " + kPlus + " ta.to_insert " + kMinus + " " + count_where("ins") +
           ")::pg_catalog.int8 AS unchanged,\n (ta.stale" +
           (versioned ? " " + std::string(kPlus) + " ta.to_update " + kMinus + " " + count_where("upd") + " " + kPlus +
                            " ta.to_delete " + kMinus + " " + count_where("del")
                      : std::string()) +
           ")::pg_catalog.int8 AS stale\n FROM checks, checks2, tomb, tally ta";
    return sql;
}

}  // namespace pg_idempotent::core
