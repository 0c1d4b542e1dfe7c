#include "snapshot/snapshot_sql.hpp"

#include "core/row_match.hpp"
#include "core/sql_text.hpp"

namespace pg_idempotent::core {

namespace {

const char* const kEq = "OPERATOR(pg_catalog.=)";
const char* const kLt = "OPERATOR(pg_catalog.<)";
const char* const kGt = "OPERATOR(pg_catalog.>)";
const char* const kAction = "\"idem$action\"";
const char* const kFrom = "\"idem$from\"";

// Action codes of plan (unchanged keys, 4, never leave it).
enum SnapshotAction : int { kNew = 1, kChanged = 2, kUnchanged = 4, kStale = 5 };

std::string action_is(const std::string& alias, int action)
{
    return alias + "." + kAction + " " + kEq + " " + std::to_string(action);
}

bool is_key(const SnapshotSpec& s, const AssignmentTarget& c)
{
    for (const auto& k : s.keys)
        if (k.name == c.name)
            return true;
    return false;
}

std::vector<AssignmentTarget> data_columns(const SnapshotSpec& s)
{
    std::vector<AssignmentTarget> data;
    for (const auto& c : s.insert_columns)
        if (!is_key(s, c))
            data.push_back(c);
    return data;
}

// valid_to of a current version: NULL, or valid_to_current ($3).
std::string open_end(const SnapshotSpec& s)
{
    return s.current_value ? "CAST($3::pg_catalog.text AS " + s.validity_type + ")"
                           : "CAST(NULL AS " + s.validity_type + ")";
}

std::string current(const SnapshotSpec& s, const std::string& alias)
{
    if (s.current_value)
        return alias + "." + s.valid_to + " " + kEq + " " + open_end(s);
    return alias + "." + s.valid_to + " IS NULL";
}

std::string run_cte()
{
    return "run AS MATERIALIZED (SELECT COALESCE($2::pg_catalog.timestamptz, pg_catalog.now()) AS at)";
}

// The run's time as the validity columns' type.
std::string run_at(const SnapshotSpec& s)
{
    return "CAST((SELECT r.at FROM run r) AS " + s.validity_type + ")";
}

// src: keys (and updated_at) cast to the target's types, so that they
// compare as the target's do.
std::string src_cte(const SnapshotSpec& s)
{
    std::vector<std::string> cols;
    for (const auto& c : s.insert_columns) {
        const bool cast = is_key(s, c) || s.updated_at.has(c.name);
        cols.push_back(cast ? cast_to_target("s." + c.name, c) + " AS " + c.name : "s." + c.name);
    }
    // The partitions' row check is made in plan (merge_sql.cpp's src says
    // why): here, being volatile, it would make PostgreSQL copy the table.
    return std::string("src AS ") + (s.stable_source ? "NOT MATERIALIZED" : "MATERIALIZED") + " (SELECT " + join(cols) +
           " FROM (" + s.source_sql + "\n) AS s)";
}

bool finds_repeats(const SnapshotSpec& s)
{
    return s.check_duplicates && s.hash_keys;
}

std::string stats_cte(const SnapshotSpec& s)
{
    std::vector<std::string> cols = {"pg_catalog.count(*) AS n"};
    if (s.check_nulls)
        for (std::size_t i = 0; i < s.keys.size(); ++i)
            cols.push_back("pg_catalog.count(*) FILTER (WHERE " + s.keys[i].name + " IS NULL) AS null_" +
                           std::to_string(i));
    if (!s.updated_at.empty())
        cols.push_back("pg_catalog.count(*) FILTER (WHERE " + s.updated_at.any_null("") + ") AS null_updated_at");
    if (finds_repeats(s))
        cols.push_back(repeat_hashes_column(s.keys));
    return "stats AS MATERIALIZED (SELECT " + join(cols) + " FROM src)";
}

std::string tops_cte(const SnapshotSpec& s)
{
    return repeated_keys_cte(s.keys, finds_repeats(s));
}

// dups: repeated keys whose rows differ in any data column; with
// updated_at, only among the rows of the key's largest updated_at (older
// rows lose, as merge's lower versions do).
std::string dups_cte(const SnapshotSpec& s)
{
    const std::string joined = "SELECT src.* FROM src JOIN tops ON " + keys_match(s.keys, s.key_eq, "src", "tops");
    std::string rows = joined;
    if (!s.updated_at.empty())
        rows = "SELECT * FROM (SELECT j.*, pg_catalog.rank() OVER (PARTITION BY " + key_list(s.keys, "j") +
               " ORDER BY " + s.updated_at.descending("j") + ") AS \"idem$rank\" FROM (" + joined +
               ") j) r WHERE r.\"idem$rank\" " + kEq + " 1";
    const std::string k = key_list(s.keys, "x");
    return "dups AS MATERIALIZED (SELECT " + k + " FROM (" + rows + ") x GROUP BY " + k +
           " HAVING pg_catalog.count(DISTINCT " + row_digest(data_columns(s), "x", true) + ") " + kGt + " 1)";
}

std::string checks_cte(const SnapshotSpec& s)
{
    std::string whens = s.check_nulls ? null_key_checks(s.keys) : std::string();
    if (s.refuse_empty)
        whens += " WHEN st.n " + std::string(kEq) +
                 " 0 THEN idem._raise('22023', 'the source is empty and hard_deletes => ''invalidate'' would close "
                 "every current version', NULL, 'Pass allow_empty => true if the source is empty on purpose.')\n";
    if (!s.updated_at.empty())
        whens += " WHEN st.null_updated_at " + std::string(kGt) +
                 " 0 THEN idem._raise('23502', pg_catalog.format('null value in updated_at column %s of the source', " +
                 s.updated_at.names_literal() +
                 "), pg_catalog.format('%s source rows have no updated_at.', st.null_updated_at), "
                 "'The timestamp strategy orders the versions of a key by updated_at: every row needs one.')\n";
    if (s.check_duplicates)
        whens +=
            " WHEN EXISTS (SELECT FROM dups) THEN (SELECT idem._raise('21000', "
            "'source rows with the same key differ', pg_catalog.format('Key %s appears more than once with "
            "different values" +
            std::string(!s.updated_at.empty() ? " at its largest updated_at" : "") + ".', " + key_text(s.keys, "d") +
            "), " +
            (!s.updated_at.empty()
                 ? "'Give each change of a key a larger updated_at.'"
                 : "'Remove the duplicates, or use the timestamp strategy so that the newest row wins.'") +
            ") FROM dups d LIMIT 1)\n";
    if (whens.empty())
        return "checks AS MATERIALIZED (SELECT true AS ok)";
    return "checks AS MATERIALIZED (SELECT CASE\n" + whens + " ELSE true END AS ok FROM stats st)";
}

// dedup: one row per key, the source itself when no key repeats.
std::string dedup_cte(const SnapshotSpec& s)
{
    const std::string ok = "(SELECT ok FROM checks)";
    if (!s.check_duplicates)
        return "dedup AS NOT MATERIALIZED (SELECT * FROM src WHERE " + ok + ")";
    const std::string k = key_list(s.keys, "");
    const std::string order = k + (s.updated_at.empty() ? "" : ", " + s.updated_at.descending(""));
    const std::string repeated = "EXISTS (SELECT FROM tops r WHERE " + keys_match(s.keys, s.key_eq, "r", "src") + ")";
    const std::string some = "EXISTS (SELECT FROM tops)";
    return "dedup AS NOT MATERIALIZED (SELECT * FROM src WHERE " + ok + " AND NOT " + some +
           "\n UNION ALL SELECT * FROM src WHERE " + ok + " AND " + some + " AND NOT " + repeated +
           "\n UNION ALL (SELECT DISTINCT ON (" + k + ") * FROM src WHERE " + ok + " AND " + some + " AND " + repeated +
           " ORDER BY " + order + "))";
}

std::string action_case(const SnapshotSpec& s)
{
    const std::string same = images_equal(s.compare_columns, "d", "c", s.pairwise_images);
    std::string c = "CASE WHEN c.\"idem$found\" IS NULL THEN " + std::to_string(kNew);
    if (s.deleted_column)
        c += " WHEN c." + *s.deleted_column + " IS TRUE THEN " + std::to_string(kChanged);
    if (!s.updated_at.empty()) {
        const std::string du = s.updated_at.value("d");
        const std::string cu = s.updated_at.value("c");
        c += " WHEN " + s.updated_at.less(du, cu) + " THEN " + std::to_string(kStale) + " WHEN " +
             s.updated_at.equal(du, cu) + " THEN CASE WHEN " + same + " THEN " + std::to_string(kUnchanged) + " ELSE " +
             std::to_string(kStale) + " END ELSE " + std::to_string(kChanged);
    } else {
        c += " WHEN " + same + " THEN " + std::to_string(kUnchanged) + " ELSE " + std::to_string(kChanged);
    }
    return c + " END";
}

// The condition that keeps a read of the history to the batch's partitions.
std::string pruned(const SnapshotSpec& s, const std::string& alias)
{
    return s.prune ? prune_condition(*s.prune, alias) : std::string();
}

// plan: each key of the source against its current version. OFFSET 0 keeps
// the action computed once per row.
std::string plan_cte(const SnapshotSpec& s)
{
    return "plan AS MATERIALIZED (SELECT * FROM (SELECT d.*, c." + s.valid_from + " AS " + kFrom + ", " +
           action_case(s) + " AS " + kAction + " FROM dedup d LEFT JOIN (SELECT true AS \"idem$found\", t.* FROM " +
           s.target + " t WHERE " + current(s, "t") + pruned(s, "t") + ") c ON " +
           keys_match(s.keys, s.key_eq, "c", "d") +
           (s.prune ? "\n WHERE " + prune_row_check(*s.prune, "d") : std::string()) + " OFFSET 0) x WHERE x." +
           kAction + " OPERATOR(pg_catalog.<>) " + std::to_string(kUnchanged) + ")";
}

std::string gone_cte(const SnapshotSpec& s)
{
    if (!s.invalidate)
        return "gone AS MATERIALIZED (SELECT " + key_list(s.keys, "c") + ", c." + s.valid_from + " AS " + kFrom +
               " FROM " + s.target + " c WHERE false)";
    const std::string marker = s.deleted_column ? " AND c." + *s.deleted_column + " IS NOT TRUE" : "";
    return "gone AS MATERIALIZED (SELECT c.*, c." + s.valid_from + " AS " + kFrom + " FROM " + s.target + " c WHERE " +
           current(s, "c") + marker + " AND (SELECT ok FROM checks) AND NOT EXISTS (SELECT FROM dedup d WHERE " +
           keys_match(s.keys, s.key_eq, "c", "d") + "))";
}

// A new key with a version current under the other convention (written by
// hand): refused, naming the key.
std::string other_convention_check(const SnapshotSpec& s)
{
    using M = SnapshotSpec::OtherMark;
    if (s.other_mark == M::kNone)
        return "";
    const std::string other =
        s.other_mark == M::kNull
            ? "h." + s.valid_to + " IS NULL"
            : "h." + s.valid_to + " OPERATOR(pg_catalog.>=) CAST('9999-01-01' AS " + s.validity_type + ")";
    // The first EXISTS (no new key: the usual replay) spares the second its
    // read of the history: no index holds the other convention's rows, so
    // that read is a scan of every version, and AND evaluates the join's
    // initplan only when the first is true.
    return " WHEN EXISTS (SELECT FROM plan p WHERE " + action_is("p", kNew) + ") AND EXISTS (SELECT FROM plan p JOIN " +
           s.target + " h ON " + keys_match(s.keys, s.key_eq, "h", "p") + pruned(s, "h") + " WHERE " +
           action_is("p", kNew) + " AND " + other +
           ") THEN (SELECT idem._raise('55000', "
           "pg_catalog.format('%s holds versions current under another convention', $1::pg_catalog.regclass), "
           "pg_catalog.format('Key %s has a version with valid_to %s, which marks it current; this call would open "
           "a second current version.', " +
           key_text(s.keys, "p") + ", COALESCE(h." + s.valid_to +
           "::pg_catalog.text, 'NULL')), 'Write the history only through idem.snapshot, with one convention: close "
           "or remove the versions written otherwise.') FROM plan p JOIN " +
           s.target + " h ON " + keys_match(s.keys, s.key_eq, "h", "p") + pruned(s, "h") + " WHERE " +
           action_is("p", kNew) + " AND " + other + " LIMIT 1)";
}

// Time moves forward: a version closed now began before now, and a key that
// comes back after invalidate opens after its last version closed; else
// intervals would overlap. Without as_of the run's time is its
// transaction's start: a later snapshot that took the target first makes
// this one retry (40001).
std::string checks2_cte(const SnapshotSpec& s)
{
    const std::string at = run_at(s);
    std::string late = "EXISTS (SELECT FROM plan p WHERE " + action_is("p", kChanged) + " AND NOT (p." + kFrom + " " +
                       kLt + " " + at + ")) OR EXISTS (SELECT FROM gone g WHERE NOT (g." + kFrom + " " + kLt + " " +
                       at + "))";
    if (s.invalidate)
        late += " OR EXISTS (SELECT FROM plan p JOIN " + s.target + " h ON " + keys_match(s.keys, s.key_eq, "h", "p") +
                " WHERE " + action_is("p", kNew) + " AND h." + s.valid_to + " " + kGt + " " + at + ")";
    return "checks2 AS MATERIALIZED (SELECT CASE WHEN " + late +
           " THEN idem._raise(CASE WHEN $2 IS NULL THEN '40001' ELSE '22023' END, pg_catalog.format('the snapshot''s "
           "time is not after the versions of %s it would close', $1::pg_catalog.regclass), "
           "pg_catalog.format('Its time is %s; versions of a key must not overlap: each one starts where the one before "
           "ended.', (SELECT r.at FROM run r)), CASE WHEN $2 IS NULL "
           "THEN 'A snapshot that began later has written first: retry the transaction (two snapshots that change "
           "rows in one transaction need as_of).' ELSE 'Pass an as_of later than every version it would close.' "
           "END)" +
           other_convention_check(s) + " ELSE true END AS ok)";
}

std::string tally_cte()
{
    const std::string f = "pg_catalog.count(*) FILTER (WHERE ";
    return "tally AS MATERIALIZED (SELECT " + f + action_is("p", kNew) + ") AS to_insert, " + f +
           action_is("p", kChanged) + ") AS to_change, " + f + action_is("p", kStale) +
           ") AS stale, pg_catalog.count(*) AS kept FROM plan p)";
}

std::string cls_cte(const SnapshotSpec& s)
{
    return "cls AS (UPDATE " + s.target + " AS t SET " + s.valid_to + " = " + run_at(s) + " FROM (SELECT " +
           key_list(s.keys, "p") + " FROM plan p WHERE " + action_is("p", kChanged) + " UNION ALL SELECT " +
           key_list(s.keys, "g") + " FROM gone g) AS p WHERE " + keys_match(s.keys, s.key_eq, "t", "p") +
           pruned(s, "t") + " AND " + current(s, "t") + " AND (SELECT ok FROM checks2) RETURNING 1)";
}

std::string ins_cte(const SnapshotSpec& s)
{
    std::vector<std::string> names;
    std::vector<std::string> values;
    for (const auto& c : s.insert_columns) {
        names.push_back(c.name);
        values.push_back("p." + c.name);
    }
    const std::string gate = " AND " + count_where("cls") + " OPERATOR(pg_catalog.>=) 0";
    std::string cols = join(names) + ", " + s.valid_from + ", " + s.valid_to;
    // Typed: in a UNION an untyped NULL would be text.
    std::string rows = "SELECT " + join(values) + ", " + run_at(s) + ", " + open_end(s) +
                       (s.deleted_column ? ", false" : "") + " FROM plan p WHERE p." + kAction +
                       " OPERATOR(pg_catalog.<=) " + std::to_string(kChanged) + gate;
    if (s.deleted_column) {
        cols += ", " + *s.deleted_column;
        std::vector<std::string> copied;
        for (const auto& c : s.insert_columns)
            copied.push_back("g." + c.name);
        rows += " UNION ALL SELECT " + join(copied) + ", " + run_at(s) + ", " + open_end(s) +
                ", true FROM gone g WHERE true" + gate;
    }
    return "ins AS (INSERT INTO " + s.target + " AS t (" + cols + ") " + rows + " RETURNING 1)";
}

}  // namespace

std::string build_snapshot_sql(const SnapshotSpec& s)
{
    std::vector<std::string> ctes = {run_cte(), src_cte(s), stats_cte(s)};
    if (s.check_duplicates) {
        ctes.push_back(tops_cte(s));
        ctes.push_back(dups_cte(s));
    }
    ctes.push_back(checks_cte(s));
    ctes.push_back(dedup_cte(s));
    ctes.push_back(plan_cte(s));
    ctes.push_back(gone_cte(s));
    ctes.push_back(checks2_cte(s));
    ctes.push_back(tally_cte());
    ctes.push_back(cls_cte(s));
    ctes.push_back(ins_cte(s));
    return "WITH " + join(ctes, ",\n") + "\nSELECT ta.to_insert, ta.to_change, " + count_where("gone") + ", " +
           count_where("dedup") + " OPERATOR(pg_catalog.-) ta.kept, ta.stale, " + count_where("cls") + ", " +
           count_where("ins") + " FROM tally ta";
}

}  // namespace pg_idempotent::core
