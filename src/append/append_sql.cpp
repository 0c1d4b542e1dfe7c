#include "append/append_sql.hpp"

#include "core/row_match.hpp"
#include "core/sql_text.hpp"

namespace pg_idempotent::core {

namespace {

const char* const kGt = "OPERATOR(pg_catalog.>)";
const char* const kMinus = "OPERATOR(pg_catalog.-)";
const char* const kAction = "\"idem$action\"";

// Action codes of plan.
enum AppendAction : int { kNew = 1, kSame = 2, kOther = 3 };

std::string action_is(const std::string& alias, int action)
{
    return alias + "." + kAction + " OPERATOR(pg_catalog.=) " + std::to_string(action);
}

bool is_key(const AppendSpec& s, const AssignmentTarget& c)
{
    for (const auto& k : s.keys)
        if (k.name == c.name)
            return true;
    return false;
}

// src: keys cast to the target's types, so that they compare the way the
// target's index does; a table is read by each step (merge_sql.cpp's src).
// checked: each row must fall in the partitions planned (ID901 otherwise);
// without it, the caller checks the rows it inserts (the check raises, so
// it is volatile, and a CTE holding it is copied instead of read again).
std::string src_select(const AppendSpec& s, bool checked = true)
{
    std::vector<std::string> cols;
    for (const auto& c : s.insert_columns)
        cols.push_back(is_key(s, c) ? cast_to_target("s." + c.name, c) + " AS " + c.name : "s." + c.name);
    const std::string where = s.prune && checked ? " WHERE " + prune_row_check(*s.prune, "s") : std::string();
    return "SELECT " + join(cols) + " FROM (" + s.source_sql + "\n) AS s" + where;
}

std::string src_cte(const AppendSpec& s)
{
    return std::string("src AS ") + (s.stable_source ? "NOT MATERIALIZED" : "MATERIALIZED") + " (" + src_select(s) +
           ")";
}

bool finds_repeats(const AppendSpec& s)
{
    return s.check_duplicates && s.hash_keys;
}

// stats: in one pass over the batch, its row count, the NULL keys, the keys
// that may repeat (finds_repeats) and the range of its window column.
std::string stats_cte(const AppendSpec& s)
{
    std::vector<std::string> cols = {"pg_catalog.count(*) AS n"};
    if (s.check_nulls)
        for (std::size_t i = 0; i < s.keys.size(); ++i)
            cols.push_back("pg_catalog.count(*) FILTER (WHERE " + s.keys[i].name + " IS NULL) AS null_" +
                           std::to_string(i));
    if (finds_repeats(s))
        cols.push_back(repeat_hashes_column(s.keys));
    if (s.window_column)
        cols.push_back("pg_catalog.min(src." + s.window_column->name + ") AS lo, pg_catalog.max(src." +
                       s.window_column->name + ") AS hi");
    return "stats AS MATERIALIZED (SELECT " + join(cols) + " FROM src)";
}

// tops and dups: as merge's, over the compared columns as the target would
// store them (two deliveries of one event that differ only in an excluded
// column are the same event).
std::string tops_cte(const AppendSpec& s)
{
    return repeated_keys_cte(s.keys, finds_repeats(s));
}

std::string dups_cte(const AppendSpec& s)
{
    const std::string k = key_list(s.keys, "src");
    return "dups AS MATERIALIZED (SELECT " + k + " FROM src JOIN tops ON " +
           keys_match(s.keys, s.key_eq, "src", "tops") + " GROUP BY " + k + " HAVING pg_catalog.count(DISTINCT " +
           row_digest(s.compare_columns, "src", true) + ") " + kGt + " 1)";
}

std::string checks_cte(const AppendSpec& s)
{
    std::string whens = s.check_nulls ? null_key_checks(s.keys) : std::string();
    if (!s.check_duplicates)
        return whens.empty() ? "checks AS MATERIALIZED (SELECT true AS ok)"
                             : "checks AS MATERIALIZED (SELECT CASE\n" + whens + " ELSE true END AS ok FROM stats st)";
    whens +=
        " WHEN EXISTS (SELECT FROM dups) THEN (SELECT idem._raise('ID005', "
        "'events with the same key differ within the batch', pg_catalog.format('Key %s appears more than once "
        "with different content; keys like it in the batch: %s.', " +
        key_text(s.keys, "d") +
        ", (SELECT pg_catalog.count(*) FROM dups)), 'A key names one event: find out why the source "
        "repeats it with other content, or name columns that differ by nature in exclude_columns.') FROM "
        "dups d LIMIT 1)\n";
    return "checks AS MATERIALIZED (SELECT CASE\n" + whens + " ELSE true END AS ok FROM stats st)";
}

// dedup: one row per key; the source itself when no key repeats (one-time
// filters: merge_sql.cpp's dedup explains why).
std::string dedup_cte(const AppendSpec& s)
{
    const std::string ok = "(SELECT ok FROM checks)";
    if (!s.check_duplicates)
        return "dedup AS NOT MATERIALIZED (SELECT * FROM src WHERE " + ok + ")";
    const std::string k = key_list(s.keys, "");
    const std::string repeated = "EXISTS (SELECT FROM tops r WHERE " + keys_match(s.keys, s.key_eq, "r", "src") + ")";
    const std::string some = "EXISTS (SELECT FROM tops)";
    return "dedup AS NOT MATERIALIZED (SELECT * FROM src WHERE " + ok + " AND NOT " + some +
           "\n UNION ALL SELECT * FROM src WHERE " + ok + " AND " + some + " AND NOT " + repeated +
           "\n UNION ALL (SELECT DISTINCT ON (" + k + ") * FROM src WHERE " + ok + " AND " + some + " AND " + repeated +
           " ORDER BY " + k + "))";
}

// win: the partition key values the batch could repeat, the batch's own
// range widened by $2 either side; the target is read there only, so the
// executor skips the other partitions.
// From stats (its lo and hi), or from the source when there is no stats.
std::string win_cte(const AppendSpec& s, bool from_stats)
{
    const AssignmentTarget& w = *s.window_column;
    const std::string lo = from_stats ? "st.lo" : "pg_catalog.min(src." + w.name + ")";
    const std::string hi = from_stats ? "st.hi" : "pg_catalog.max(src." + w.name + ")";
    return "win AS MATERIALIZED (SELECT CAST(" + lo + " " + kMinus + " $2::pg_catalog.interval AS " + w.type +
           ") AS lo, CAST(" + hi + " OPERATOR(pg_catalog.+) $2::pg_catalog.interval AS " + w.type + ") AS hi FROM " +
           (from_stats ? "stats st)" : "src)");
}

// The target's rows a batch row can meet: the window's (within) and the
// pruned partitions' (the planner leaves the others out).
std::string window_filter(const AppendSpec& s, const std::string& alias = "t")
{
    const std::string pruned = s.prune ? prune_condition(*s.prune, alias) : std::string();
    if (!s.window_column)
        return pruned;
    const std::string t = alias + "." + s.window_column->name;
    return " AND " + t + " OPERATOR(pg_catalog.>=) (SELECT lo FROM win) AND " + t +
           " OPERATOR(pg_catalog.<=) (SELECT hi FROM win)" + pruned;
}

// plan: each key against the target. The keys whose event is already there
// (kSame) are counted, not kept (a replay copies nothing).
std::string plan_cte(const AppendSpec& s)
{
    return "plan AS MATERIALIZED (SELECT * FROM (SELECT d.*, CASE WHEN t." + s.keys[0].name + " IS NULL THEN " +
           std::to_string(kNew) + " WHEN " + images_equal(s.compare_columns, "d", "t", s.pairwise_images) + " THEN " +
           std::to_string(kSame) + " ELSE " + std::to_string(kOther) + " END AS " + kAction +
           "\n FROM dedup d LEFT JOIN " + s.target + " AS t ON " + keys_match(s.keys, s.key_eq, "t", "d") +
           window_filter(s) + "\n OFFSET 0) AS x WHERE " + "x." + kAction + " OPERATOR(pg_catalog.<>) " +
           std::to_string(kSame) + ")";
}

std::string checks2_cte(const AppendSpec& s)
{
    if (s.keep_first)
        return "checks2 AS MATERIALIZED (SELECT true AS ok)";
    return "checks2 AS MATERIALIZED (SELECT CASE WHEN EXISTS (SELECT FROM plan p WHERE " + action_is("p", kOther) +
           ") THEN (SELECT idem._raise('ID005', 'an event came back with different content', pg_catalog.format('Key "
           "%s is already in %s with other content; keys like it in the batch: %s.', " +
           key_text(s.keys, "p") + ", " + s.target_literal + ", (SELECT pg_catalog.count(*) FROM plan q WHERE " +
           action_is("q", kOther) +
           ")), 'An event is written once: find out why it changed upstream, pass on_conflict => ''keep_first'' "
           "to keep what is there and count it, or name columns that differ by nature in exclude_columns.') FROM "
           "plan p WHERE " +
           action_is("p", kOther) + " LIMIT 1) ELSE true END AS ok)";
}

std::string tally_cte()
{
    return std::string("tally AS MATERIALIZED (SELECT pg_catalog.count(*) FILTER (WHERE ") + action_is("p", kNew) +
           ") AS to_insert, pg_catalog.count(*) FILTER (WHERE " + action_is("p", kOther) +
           ") AS conflicting FROM plan p)";
}

// ins: the new events. With a unique index on the key, a key a concurrent
// writer inserted meanwhile is counted (idem._count_conflict), never
// updated; without one, appends of one target take turns (append.cpp).
std::string ins_cte(const AppendSpec& s)
{
    std::vector<std::string> names;
    std::vector<std::string> values;
    for (const auto& c : s.insert_columns) {
        names.push_back(c.name);
        values.push_back("p." + c.name);
    }
    std::string conflict;
    if (s.arbiter && !s.citus)
        conflict = "\n ON CONFLICT (" + key_list(s.keys, "") + ") DO UPDATE SET " + s.keys[0].name + " = t." +
                   s.keys[0].name + " WHERE idem._count_conflict($1::pg_catalog.regclass, " +
                   images_equal(s.compare_columns, "EXCLUDED", "t", s.pairwise_images, false) + ", false)";
    return "ins AS (INSERT INTO " + s.target + " AS t (" + join(names) + ")\n SELECT " + join(values) +
           " FROM plan p WHERE " + action_is("p", kNew) + " AND (SELECT ok FROM checks2)" + conflict + ")";
}

}  // namespace

// Without a unique index, a batch that may repeat a key takes the one
// INSERT only behind a guard that first finds no key repeats (stats): it
// reads the source twice, so only a table.
bool guarded_fast_append(const AppendSpec& s)
{
    return !s.arbiter && s.check_duplicates;
}

bool fast_append_applies(const AppendSpec& s)
{
    if (s.citus)
        return false;
    if (guarded_fast_append(s))
        return finds_repeats(s) && s.stable_source;
    return s.arbiter || !s.check_duplicates ? !s.window_column || s.stable_source : false;
}

std::string build_fast_append_sql(const AppendSpec& s)
{
    std::vector<std::string> names;
    std::vector<std::string> values;
    for (const auto& c : s.insert_columns) {
        names.push_back(c.name);
        values.push_back("s." + c.name);
    }
    std::vector<std::string> not_null;
    for (const auto& k : s.keys)
        not_null.push_back("s." + k.name + " IS NOT NULL");
    const std::string nulls =
        s.check_nulls ? "(" + join(not_null, " AND ") + ") OR idem._raise('23502', 'null key in an append', NULL, NULL)"
                      : std::string("true");
    const std::string tally = "idem._count_conflict($1::pg_catalog.regclass, ";
    std::string window;
    std::string with;
    std::string guard;
    if (guarded_fast_append(s)) {
        // 23505, as a unique index would: the caller gives way to the whole
        // statement, which collapses or refuses the repeats.
        with =
            "WITH src AS NOT MATERIALIZED (" + src_select(s, false) + "),\n" + stats_cte(s) + ",\n" +
            "guard AS MATERIALIZED (SELECT st.\"idem$repeats\" IS NOT NULL AND pg_catalog.cardinality(st.\"idem$repeats\") "
            "OPERATOR(pg_catalog.=) 0 OR idem._raise('23505', 'keys may repeat in the batch', NULL, NULL) AS ok "
            "FROM stats st)" +
            (s.window_column ? ",\n" + win_cte(s, true) : std::string()) + "\n";
        guard = " AND (SELECT ok FROM guard)";
    } else if (s.window_column) {
        with = "WITH src AS NOT MATERIALIZED (" + src_select(s, false) + "),\n" + win_cte(s, false) + "\n";
    }
    window = window_filter(s, "e");
    const std::string from = with.empty() ? "(" + src_select(s, false) + ") AS s" : "src AS s";
    // The rows inserted are the rows checked: src is read again by each
    // step (a table), not copied, so the partitions' check is here.
    const std::string routed = s.prune ? " AND " + prune_row_check(*s.prune, "s") : std::string();
    // An empty target (its pruned partitions): no event of the batch is
    // there, so nothing to join. The join would also be planned as a scan
    // of the (analyzed, empty) target per batch row, which then reads the
    // pages the INSERT adds: quadratic (200,000 events: 283 s).
    if (s.target_empty)
        return with + "INSERT INTO " + s.target + " AS t (" + join(names) + ")\n SELECT " + join(values) + " FROM " +
               from + "\n WHERE (" + nulls + ")" + routed + guard;
    return with + "INSERT INTO " + s.target + " AS t (" + join(names) + ")\n SELECT " + join(values) + " FROM " + from +
           " LEFT JOIN " + s.target + " AS e ON " + keys_match(s.keys, s.key_eq, "e", "s") + window + "\n WHERE (" +
           nulls + ")" + routed + guard + " AND (e." + s.keys[0].name + " IS NULL OR " + tally +
           images_equal(s.compare_columns, "s", "e", s.pairwise_images) + ", false))";
}

std::string build_append_sql(const AppendSpec& s)
{
    std::vector<std::string> ctes = {src_cte(s), stats_cte(s)};
    if (s.check_duplicates) {
        ctes.push_back(tops_cte(s));
        ctes.push_back(dups_cte(s));
    }
    ctes.push_back(checks_cte(s));
    ctes.push_back(dedup_cte(s));
    if (s.window_column)
        ctes.push_back(win_cte(s, true));
    for (auto& cte : {plan_cte(s), checks2_cte(s), tally_cte(), ins_cte(s)})
        ctes.push_back(cte);
    return "WITH\n" + join(ctes, ",\n") + "\nSELECT ta.to_insert::pg_catalog.int8,\n ((SELECT st.n FROM stats st) " +
           kMinus + " ta.to_insert " + kMinus +
           " ta.conflicting)::pg_catalog.int8,\n ta.conflicting::pg_catalog.int8\n FROM checks, checks2, tally ta";
}

}  // namespace pg_idempotent::core
