#include "merge/merge_sql.hpp"

#include "core/row_match.hpp"
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

// The shared pieces (core/row_match.hpp) over the spec's keys.
std::string keys_match(const MergeSpec& s, const std::string& a, const std::string& b)
{
    return core::keys_match(s.keys, s.key_eq, a, b);
}

std::string key_list(const MergeSpec& s, const std::string& alias)
{
    return core::key_list(s.keys, alias);
}

std::string key_text(const MergeSpec& s, const std::string& alias)
{
    return core::key_text(s.keys, alias);
}

// The statement's steps, one function each, in the order of the CTEs
// (merge_sql.hpp lists them). Each returns one CTE without the ",\n" that
// separates it from the next.

std::string prune_condition(const MergeSpec& s, const std::string& alias)
{
    return s.prune ? core::prune_condition(*s.prune, alias) : std::string();
}

bool is_key(const MergeSpec& s, const MergeColumn& c)
{
    for (const auto& k : s.keys)
        if (k.name == c.name)
            return true;
    return false;
}

// The source's columns as merge reads them: keys (and the version) cast to
// the target's types so that they compare the way the unique index does;
// other columns stay as given and are converted by the INSERT/UPDATE itself
// (assignment casts).
std::vector<std::string> source_columns(const MergeSpec& s)
{
    std::vector<std::string> cols;
    for (const auto& c : s.insert_columns) {
        const bool cast = is_key(s, c) || s.version.has(c.name);
        cols.push_back(cast ? cast_to_target("s." + c.name, c) + " AS " + c.name : "s." + c.name);
    }
    if (s.delete_column)
        cols.push_back("CAST(s." + *s.delete_column + " AS pg_catalog.bool) AS " + kDeleteFlag);
    return cols;
}

// src: the source rows.
std::string src_cte(const MergeSpec& s)
{
    // The source is copied once (MATERIALIZED) only when reading it again
    // could give other rows: a query or view may be volatile or costly. A
    // table is read as often as the steps need it, all in the statement's
    // one snapshot: a scan costs less than writing and reading back a copy
    // that spills to temp files. A source known unique on the key is
    // inlined too: the planner can then join it to the target through both
    // indexes, as a hand-written MERGE would.
    // The check that each row falls in the partitions planned is made in
    // plan, on the rows planned: here it would make src volatile (it
    // raises), and PostgreSQL copies a volatile CTE however it is marked.
    const bool copy = s.check_duplicates && !s.stable_source;
    return std::string("src AS ") + (copy ? "MATERIALIZED" : "NOT MATERIALIZED") + " (SELECT " +
           join(source_columns(s)) + " FROM (" + s.source_sql + "\n) AS s)";
}

// Whether stats finds the keys that may repeat, for tops to group only
// their rows (core/repeat_hashes.hpp).
bool finds_repeats(const MergeSpec& s)
{
    return s.check_duplicates && s.hash_keys;
}

// stats: the row count and the NULL counts the checks need.
std::string stats_cte(const MergeSpec& s)
{
    std::vector<std::string> cols = {"pg_catalog.count(*) AS n"};
    if (s.check_nulls) {
        for (std::size_t i = 0; i < s.keys.size(); ++i)
            cols.push_back("pg_catalog.count(*) FILTER (WHERE " + s.keys[i].name + " IS NULL) AS null_" +
                           std::to_string(i));
    }
    if (!s.version.empty())
        cols.push_back("pg_catalog.count(*) FILTER (WHERE " + s.version.any_null("") + ") AS null_version");
    if (finds_repeats(s))
        cols.push_back(repeat_hashes_column(s.keys));
    return "stats AS MATERIALIZED (SELECT " + join(cols) + " FROM src)";
}

// Every column of a source row (the delete flag included): what makes two
// rows of one key differ.
std::string source_row_digest(const MergeSpec& s)
{
    std::vector<MergeColumn> cols = s.insert_columns;
    if (s.delete_column)
        cols.push_back(MergeColumn{kDeleteFlag, "pg_catalog.bool", "'delete'"});
    return row_digest(cols, "src", false);
}

// tops: the keys with more than one source row (usually none), and for
// each its highest version (versioned: only the rows of that version
// compete). Found by the key alone, a hash aggregate, so that only these
// keys' rows are digested (dups) and sorted (dedup).
std::string tops_cte(const MergeSpec& s)
{
    const std::string k = key_list(s, "src");
    std::string top;
    if (s.version.single())
        top = ", pg_catalog.max(" + s.version.value("src") + ") AS top";
    else if (!s.version.empty())  // the newest of several columns: the first of them by their order
        top = ", (pg_catalog.array_agg(" + s.version.value("src") + " ORDER BY " + s.version.descending("src") +
              "))[1] AS top";
    const std::string only = finds_repeats(s) ? " WHERE " + repeat_candidates(s.keys) : "";
    return "tops AS MATERIALIZED (SELECT " + k + top + ", pg_catalog.count(*) AS \"idem$n\" FROM src" + only +
           " GROUP BY " + k + " HAVING pg_catalog.count(*) " + kGt + " 1)";
}

// dups: a key whose rows differ (at its highest version).
std::string dups_cte(const MergeSpec& s)
{
    const std::string k = key_list(s, "src");
    const std::string differ =
        " GROUP BY " + k + " HAVING pg_catalog.count(DISTINCT " + source_row_digest(s) + ") " + kGt + " 1 LIMIT 1)";
    const std::string from =
        "dups AS MATERIALIZED (SELECT " + k + " FROM src JOIN tops ON " + keys_match(s, "src", "tops");
    if (s.version.empty())
        return from + differ;
    return from + " AND " + s.version.equal(s.version.value("src"), "tops.top") + differ;
}

std::string null_version_check(const MergeSpec& s)
{
    return " WHEN st.null_version " + std::string(kGt) +
           " 0 THEN idem._raise('23502', pg_catalog.format("
           "'null value in version column %s of the source', " +
           s.version.names_literal("pg_catalog.quote_ident") +
           "), pg_catalog.format('%s source rows have no version.', st.null_version), "
           "'Every source row needs a version when version_column is given.')\n";
}

std::string duplicate_check(const MergeSpec& s)
{
    const bool versioned = !s.version.empty();
    return " WHEN EXISTS (SELECT FROM dups) THEN (SELECT idem._raise('21000', "
           "'source rows with the same key differ', pg_catalog.format('Key %s appears more than once with different values" +
           std::string(versioned ? " at its highest version" : "") + ".', " + key_text(s, "d") + "), " +
           (versioned ? "'Give each change of a key a higher version.'"
                      : "'Remove the duplicates, or pass version_column so that the newest row wins.'") +
           ") FROM dups d)\n";
}

std::string empty_source_check()
{
    return " WHEN st.n " + std::string(kEq) +
           " 0 THEN idem._raise('22023', "
           "'the source is empty and delete_missing would delete every target row in scope', "
           "'An empty snapshot usually means a failed extract.', "
           "'Pass allow_empty => true if the source is really empty.')\n";
}

// checks: the first problem raises (in this order), else true.
std::string checks_cte(const MergeSpec& s)
{
    std::string whens;
    if (s.check_nulls)
        whens += core::null_key_checks(s.keys);
    if (!s.version.empty())
        whens += null_version_check(s);
    if (s.check_duplicates)
        whens += duplicate_check(s);
    if (s.delete_missing && !s.allow_empty)
        whens += empty_source_check();
    if (whens.empty())
        return "checks AS MATERIALIZED (SELECT true AS ok)";  // nothing to check: stats is never read
    return "checks AS MATERIALIZED (SELECT CASE\n" + whens + " ELSE true END AS ok FROM stats st)";
}

// dedup: one row per key (the highest version).
// When no key repeats (tops is empty: the usual case) dedup is the source as
// it is, behind a one-time filter: no join, no sort. Otherwise the rows of
// the keys that repeat are sorted to keep one, and the others pass through
// an anti-join with tops. Each branch is gated on whether tops is empty
// (InitPlans, evaluated once): the planner estimates GROUP BY ... HAVING at
// a third of the keys, and with that estimate chose a merge anti-join that
// sorted the whole source (72 MB spilled at 1M rows) to find no repeated
// key. Not copied into a tuplestore of its own: plan reads it once, and
// tally counts its rows from stats and tops (dedup_count).
std::string dedup_cte(const MergeSpec& s)
{
    const std::string ok = "(SELECT ok FROM checks)";
    if (!s.check_duplicates)
        return "dedup AS NOT MATERIALIZED (SELECT * FROM src WHERE " + ok + ")";
    const std::string k = key_list(s, "");
    const std::string repeated = "EXISTS (SELECT FROM tops r WHERE " + keys_match(s, "r", "src") + ")";
    const std::string some = "EXISTS (SELECT FROM tops)";
    return "dedup AS NOT MATERIALIZED (SELECT * FROM src WHERE " + ok + " AND NOT " + some +
           "\n UNION ALL SELECT * FROM src WHERE " + ok + " AND " + some + " AND NOT " + repeated +
           "\n UNION ALL (SELECT DISTINCT ON (" + k + ") * FROM src WHERE " + ok + " AND " + some + " AND " + repeated +
           " ORDER BY " + k + (s.version.empty() ? "" : ", " + s.version.descending("")) + "))";
}

// A tombstone's version, parsed as the caller (the version type's input
// function is the caller's to run): one column's canonical text, or, for
// several, a jsonb array of their canonical texts (tomb_cte).
std::string tombstone_version(const MergeSpec& s)
{
    if (s.version.single())
        return "idem._from_canonical(tb.version, NULL::" + s.version_types.at(0) + ")";
    std::vector<std::string> parts;
    for (std::size_t i = 0; i < s.version_types.size(); ++i)
        parts.push_back("idem._from_canonical(tb.version::pg_catalog.jsonb OPERATOR(pg_catalog.->>) " +
                        std::to_string(i) + ", NULL::" + s.version_types[i] + ")");
    return "ROW(" + join(parts) + ")";
}

// The WHENs of plan that a key's tombstone decides (the target lacks the key).
// A key deleted at a version at least this row's stays deleted. The
// tombstone's canonical text is parsed as the caller (the version type's
// input function is the caller's to run). A row at the tombstone's version
// stays deleted (a delete wins a tie); a replayed delete at that version is
// simply unchanged.
std::string tombstone_actions(const MergeSpec& s, const std::string& matched)
{
    const std::string tbv = tombstone_version(s);
    const std::string dv = s.version.value("d");
    const std::string absent = " WHEN NOT (" + matched + ") AND tb.version IS NOT NULL AND d." + kDeleteFlag;
    return absent + " IS NOT TRUE AND NOT (" + s.version.less(tbv, dv) + ") THEN " + std::to_string(kStale) + "\n" +
           absent + " IS TRUE AND " + s.version.less(dv, tbv) + " THEN " + std::to_string(kStale) + "\n";
}

// The CASE of plan: each source key's action (MergeAction), first match wins.
std::string action_case(const MergeSpec& s)
{
    const std::string matched = "t." + s.keys[0].name + " IS NOT NULL";
    const std::string flag = std::string(" WHEN d.") + kDeleteFlag + " IS TRUE";
    std::string p = "CASE\n";
    if (s.tombstones)
        p += tombstone_actions(s, matched);
    if (s.delete_column)
        p += flag + " AND NOT (" + matched + ") THEN " + std::to_string(kDeleteAbsent) + "\n";
    p += " WHEN NOT (" + matched + ") THEN " + std::to_string(kInsert) + "\n";
    if (!s.version.empty())
        p += " WHEN " + s.version.less(s.version.value("d"), s.version.value("t")) + " THEN " + std::to_string(kStale) +
             "\n";
    if (s.delete_column)
        p += flag + " THEN " + std::to_string(kDelete) + "\n";
    p += " WHEN " + images_equal(s.update_columns, "d", "t", s.pairwise_images) + " THEN " +
         std::to_string(kUnchanged) + "\n";
    if (!s.version.empty())
        p += " WHEN " + s.version.equal(s.version.value("d"), s.version.value("t")) + " THEN " +
             std::to_string(kConflict) + "\n";
    return p + " ELSE " + std::to_string(kUpdate) + " END AS " + kAction;
}

// plan: each source key's action. Only the keys with something to do (or
// to report as stale, a conflict, an absent delete) are kept: a replay's
// unchanged keys are counted (count of dedup less the rows kept), not
// copied into the CTE's tuplestore, which a large replay would spill to
// temp files only to read back for the counts. OFFSET 0 keeps the action
// computed once per row (a flattened subquery would compute the CASE, row
// comparisons included, in the filter and again in the list).
std::string plan_cte(const MergeSpec& s)
{
    std::string p = "plan AS MATERIALIZED (SELECT * FROM (SELECT d.*, " + action_case(s) +
                    "\n FROM dedup d LEFT JOIN " + s.target + " AS t ON " + keys_match(s, "t", "d") +
                    prune_condition(s, "t");
    if (s.tombstones)
        p += "\n LEFT JOIN " + s.tombstones_reader + "($1::pg_catalog.regclass) AS tb ON tb.key_digest " + kEq + " " +
             row_digest(s.keys, "d", false);
    if (s.prune)
        p += "\n WHERE " + prune_row_check(*s.prune, "d");
    const std::string counted =
        s.count_unchanged ? " OR idem._count_conflict($1::pg_catalog.regclass, true, false)" : std::string();
    return p + "\n OFFSET 0) AS x WHERE x." + kAction + " OPERATOR(pg_catalog.<>) " + std::to_string(kUnchanged) +
           counted + ")";
}

// checks2: a key at the target's version with different content raises.
std::string checks2_cte(const MergeSpec& s)
{
    if (s.version.empty())
        return "checks2 AS MATERIALIZED (SELECT true AS ok)";
    return "checks2 AS MATERIALIZED (SELECT CASE WHEN EXISTS (SELECT FROM plan p WHERE " + action_is("p", kConflict) +
           ") THEN (SELECT idem._raise('ID006', "
           "'a source row has the same version as the target row but different content', "
           "pg_catalog.format('Key %s has version %s in both.', " +
           key_text(s, "p") + ", " + s.version.value("p") +
           "::pg_catalog.text), 'A changed row needs a higher version.') FROM plan p WHERE " +
           action_is("p", kConflict) + " LIMIT 1) ELSE true END AS ok)";
}

std::string action_count(int action)
{
    return "pg_catalog.count(*) FILTER (WHERE p." + std::string(kAction) + " " + kEq + " " + std::to_string(action) +
           ")";
}

// tally: what the counts need of plan and dedup, in one pass over each
// (plan's tuplestore holds every source row of a first load: each count
// read it once more). The keys plan left out are the unchanged ones;
// absent deletes count as unchanged too (unchanged_in_plan).
// How many rows dedup holds. With the duplicate check, without reading it:
// the source's rows less the extra rows of each repeated key.
std::string dedup_count(const MergeSpec& s)
{
    if (s.count_unchanged)
        return "0::pg_catalog.int8";  // not needed: unchanged_in_plan
    if (!s.check_duplicates)
        return count_where("dedup");
    return "((SELECT st.n FROM stats st) " + std::string(kMinus) + " (SELECT COALESCE(pg_catalog.sum(tp.\"idem$n\" " +
           kMinus + " 1), 0)::pg_catalog.int8 FROM tops tp))";
}

std::string tally_cte(const MergeSpec& s)
{
    return "tally AS MATERIALIZED (SELECT " + dedup_count(s) + " AS n, pg_catalog.count(*) AS kept, " +
           action_count(kInsert) + " AS to_insert, " + action_count(kUpdate) + " AS to_update, " +
           action_count(kDelete) + " AS to_delete, " + action_count(kStale) + " AS stale, " +
           action_count(kDeleteAbsent) + " AS absent FROM plan p)";
}

// With count_unchanged, the keys plan left out are the caller's to add.
std::string unchanged_in_plan(const MergeSpec& s)
{
    if (s.count_unchanged)
        return "ta.absent";
    return "ta.n " + std::string(kMinus) + " ta.kept " + kPlus + " ta.absent";
}

// The target rows in scope whose key the source lacks (delete_missing).
std::string missing_where(const MergeSpec& s)
{
    const std::string scope = s.delete_scope ? "(" + *s.delete_scope + "\n) AND " : "";
    return scope + "NOT EXISTS (SELECT FROM dedup d WHERE " + keys_match(s, "t", "d") + ")";
}

// The result row of a dry run: the counts as planned (checks2 raises for
// conflicts, as a real run would).
std::string dry_run_counts(const MergeSpec& s)
{
    const std::string missing = s.delete_missing ? count_where(s.target + " AS t", missing_where(s)) : "0";
    return "SELECT ta.to_insert::pg_catalog.int8 AS inserted,\n ta.to_update::pg_catalog.int8 AS updated,\n (ta.to_delete " +
           std::string(kPlus) + " " + missing + ")::pg_catalog.int8 AS deleted,\n (" + unchanged_in_plan(s) +
           ")::pg_catalog.int8 AS unchanged,\n ta.stale::pg_catalog.int8 AS stale\n FROM checks, checks2, tally ta";
}

// todo: the planned writes. Not copied again: ins, upd, del and the counts each
// read plan's tuplestore through it (on a first load, plan holds every
// source row).
std::string todo_cte()
{
    return "todo AS NOT MATERIALIZED (SELECT * FROM plan p WHERE p." + std::string(kAction) +
           " OPERATOR(pg_catalog.=) ANY ('{1,2,3}'::pg_catalog.int4[]) AND (SELECT ok FROM checks2))";
}

// " AND NOT (row.version < t.version)": with versions, a write never
// replaces a newer row.
std::string not_older(const MergeSpec& s, const std::string& row)
{
    if (s.version.empty())
        return {};
    return " AND NOT (" + s.version.less(s.version.value(row), s.version.value("t")) + ")";
}

// What an insert does with a key a concurrent transaction has inserted
// meanwhile: update it instead (as if the two ran one after the other),
// unless its content is already the same.
std::string on_conflict(const MergeSpec& s)
{
    const std::string head = "\n ON CONFLICT (" + key_list(s, "") + ") ";
    if (s.update_columns.empty())
        return head + "DO NOTHING";
    std::vector<std::string> upd;
    std::vector<std::string> exc;
    for (const auto& c : s.update_columns) {
        upd.push_back(c.name);
        exc.push_back("EXCLUDED." + c.name);
    }
    return head + "DO UPDATE SET (" + join(upd) + ") = ROW(" + join(exc) + ") WHERE NOT (" +
           images_equal(s.update_columns, "EXCLUDED", "t", s.pairwise_images, false) + ")" + not_older(s, "EXCLUDED");
}

// ins: new keys, in key order.
std::string ins_cte(const MergeSpec& s)
{
    std::vector<std::string> names;
    std::vector<std::string> from_todo;
    for (const auto& c : s.insert_columns) {
        names.push_back(c.name);
        from_todo.push_back("p." + c.name);
    }
    // xmax = 0 tells a fresh insert from a conflict turned update. A
    // partitioned table has no xmax here: there a row a concurrent
    // transaction inserted meanwhile counts as inserted (docs/merge.md).
    const std::string fresh = s.partitioned ? "true" : "(t.xmax " + std::string(kEq) + " '0'::pg_catalog.xid)";
    return "ins AS (INSERT INTO " + s.target + " AS t (" + join(names) + ")" +
           (s.override_identity ? " OVERRIDING SYSTEM VALUE" : "") + "\n SELECT " + join(from_todo) +
           " FROM todo p WHERE " + action_is("p", kInsert) + " ORDER BY " + key_list(s, "p") + on_conflict(s) +
           "\n RETURNING " + fresh + " AS fresh)";
}

// upd. Merges of one target run one at a time (merge.cpp's lock_target), so
// the rows need no locking in key order beforehand: the UPDATE locks each as
// it writes it, as a hand-written MERGE does. With versions, the guard is
// checked again against the row as it is after any wait for its lock
// (EvalPlanQual): a newer version that another writer committed meanwhile
// is never overwritten.
std::string upd_cte(const MergeSpec& s)
{
    if (s.update_columns.empty())
        return "upd AS (SELECT 1 WHERE false)";
    std::vector<std::string> upd;
    std::vector<std::string> vals;
    for (const auto& c : s.update_columns) {
        upd.push_back(c.name);
        vals.push_back("p." + c.name);
    }
    return "upd AS (UPDATE " + s.target + " AS t SET (" + join(upd) + ") = ROW(" + join(vals) +
           ") FROM todo AS p WHERE " + action_is("p", kUpdate) + " AND " + keys_match(s, "t", "p") +
           prune_condition(s, "t") + not_older(s, "p") + " RETURNING 1)";
}

// del: the source's deletes (delete_column).
std::string del_cte(const MergeSpec& s)
{
    if (!s.delete_column)
        return "del AS (SELECT 1 WHERE false)";
    return "del AS (DELETE FROM " + s.target + " AS t USING todo AS p WHERE " + action_is("p", kDelete) + " AND " +
           keys_match(s, "t", "p") + prune_condition(s, "t") + not_older(s, "p") + " RETURNING 1)";
}

// miss: the target's rows the source lacks (delete_missing).
std::string miss_cte(const MergeSpec& s)
{
    if (!s.delete_missing)
        return "miss AS (SELECT 1 WHERE false)";
    return "miss AS (DELETE FROM " + s.target + " AS t WHERE " + missing_where(s) +
           " AND (SELECT ok FROM checks2) RETURNING 1)";
}

// The version a tombstone keeps (read back by tombstone_version).
std::string tombstone_text(const MergeSpec& s)
{
    if (s.version.single())
        return "idem._canonical_text(" + s.version.value("p") + ")";
    std::vector<std::string> parts;
    for (const auto& c : s.version.columns)
        parts.push_back("idem._canonical_text(p." + c.name + ")");
    return "pg_catalog.jsonb_build_array(" + join(parts) + ")::pg_catalog.text";
}

// tomb: versioned deletes (applied, or for keys the target lacks) leave a
// tombstone so that an older row cannot bring the key back.
std::string tomb_cte(const MergeSpec& s)
{
    if (!s.tombstones)
        return "tomb AS (SELECT 0 AS n)";
    return "tomb AS MATERIALIZED (SELECT idem._tombstones_put($1::pg_catalog.regclass,"
           " pg_catalog.array_agg(" +
           row_digest(s.keys, "p", false) +
           "),"
           " pg_catalog.array_agg(pg_catalog.jsonb_build_array(" +
           key_list(s, "p") +
           ")),"
           " pg_catalog.array_agg(" +
           tombstone_text(s) +
           ")) AS n"
           " FROM plan p WHERE p." +
           std::string(kAction) +
           " OPERATOR(pg_catalog.=) ANY ('{3,7}'::pg_catalog.int4[]) AND (SELECT ok FROM checks2))";
}

// The result row: (inserted, updated, deleted, unchanged, stale). A planned
// write that did not happen (a newer version committed meanwhile) is stale.
std::string counts(const MergeSpec& s)
{
    const std::string stale_meanwhile = !s.version.empty() ? " " + std::string(kPlus) + " ta.to_update " + kMinus +
                                                                 " " + count_where("upd") + " " + kPlus +
                                                                 " ta.to_delete " + kMinus + " " + count_where("del")
                                                           : std::string();
    return "SELECT " + count_where("ins", "fresh") + "::pg_catalog.int8 AS inserted,\n (" + count_where("upd") + " " +
           kPlus + " " + count_where("ins", "NOT fresh") + ")::pg_catalog.int8 AS updated,\n (" + count_where("del") +
           " " + kPlus + " " + count_where("miss") + ")::pg_catalog.int8 AS deleted,\n (" + unchanged_in_plan(s) + " " +
           kPlus + " ta.to_insert " + kMinus + " " + count_where("ins") +
           ")::pg_catalog.int8 AS unchanged,\n (ta.stale" + stale_meanwhile +
           ")::pg_catalog.int8 AS stale\n FROM checks, checks2, tomb, tally ta";
}

std::string with(const std::vector<std::string>& ctes, const std::string& select)
{
    return "WITH\n" + join(ctes, ",\n") + "\n" + select;
}

}  // namespace

std::string build_merge_sql(const MergeSpec& s)
{
    // Read the source, check it, plan each key.
    std::vector<std::string> ctes = {src_cte(s), stats_cte(s)};
    if (s.check_duplicates) {
        ctes.push_back(tops_cte(s));
        ctes.push_back(dups_cte(s));
    }
    for (auto& cte : {checks_cte(s), dedup_cte(s), plan_cte(s), checks2_cte(s), tally_cte(s)})
        ctes.push_back(cte);
    if (s.dry_run)
        return with(ctes, dry_run_counts(s));
    // Write, then count.
    for (auto& cte : {todo_cte(), ins_cte(s), upd_cte(s), del_cte(s), miss_cte(s), tomb_cte(s)})
        ctes.push_back(cte);
    return with(ctes, counts(s));
}

bool first_load_applies(const MergeSpec& s)
{
    return !s.dry_run && s.version.empty() && !s.delete_column && !s.delete_missing && !s.citus;
}

// What the first load does with a key the target has: a row a concurrent
// writer inserted meanwhile. idem._count_conflict counts it as updated or
// unchanged (common/conflict_tally.hpp) and says whether to update it.
std::string first_load_conflict(const MergeSpec& s)
{
    const std::string head = "\n ON CONFLICT (" + key_list(s, "") + ") DO UPDATE SET ";
    const std::string tally = "idem._count_conflict($1::pg_catalog.regclass, ";
    if (s.update_columns.empty())  // nothing to write: every conflict is unchanged
        return head + s.keys[0].name + " = t." + s.keys[0].name + " WHERE " + tally + "true, true)";
    std::vector<std::string> upd;
    std::vector<std::string> exc;
    for (const auto& c : s.update_columns) {
        upd.push_back(c.name);
        exc.push_back("EXCLUDED." + c.name);
    }
    return head + "(" + join(upd) + ") = ROW(" + join(exc) + ") WHERE " + tally +
           images_equal(s.update_columns, "EXCLUDED", "t", s.pairwise_images, false) + ", true)";
}

std::string build_first_load_sql(const MergeSpec& s)
{
    std::vector<std::string> names;
    std::vector<std::string> not_null;
    for (const auto& c : s.insert_columns)
        names.push_back(c.name);
    for (const auto& k : s.keys)
        not_null.push_back("s." + k.name + " IS NOT NULL");
    // A NULL key raises at once; merge's own statement then counts them.
    const std::string nulls = s.check_nulls ? std::string("\n WHERE (") + join(not_null, " AND ") +
                                                  ") OR idem._raise('23502', 'null key in a first load', NULL, NULL)"
                                            : std::string();
    return "INSERT INTO " + s.target + " AS t (" + join(names) + ")" +
           (s.override_identity ? " OVERRIDING SYSTEM VALUE" : "") + "\n SELECT " + join(source_columns(s)) +
           " FROM (" + s.source_sql + "\n) AS s" + nulls + first_load_conflict(s);
}

}  // namespace pg_idempotent::core
