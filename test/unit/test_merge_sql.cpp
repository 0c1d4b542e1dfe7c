// build_merge_sql: what each option adds or removes, that every operator the
// statement writes is schema-qualified, and that identifiers stay as quoted.
// test_merge_sql_golden.cpp holds whole statements the server ran.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "common/conflict_tally.hpp"
#include "merge/merge_sql.hpp"

namespace {

using pg_idempotent::core::build_first_load_sql;
using pg_idempotent::core::build_merge_sql;
using pg_idempotent::core::cast_to_target;
using pg_idempotent::core::first_load_applies;
using pg_idempotent::core::MergeColumn;
using pg_idempotent::core::MergeSpec;

const char* const kEq = "OPERATOR(pg_catalog.=)";
const char* const kLt = "OPERATOR(pg_catalog.<)";

bool has(const std::string& sql, const std::string& part)
{
    return sql.find(part) != std::string::npos;
}

std::size_t count_of(const std::string& sql, const std::string& part)
{
    std::size_t n = 0;
    for (std::size_t at = sql.find(part); at != std::string::npos; at = sql.find(part, at + part.size()))
        ++n;
    return n;
}

// The CTE named name, from "name AS" to the next CTE (or the final SELECT).
std::string cte(const std::string& sql, const std::string& name)
{
    const std::size_t at = sql.find("\n" + name + " AS ");
    if (at == std::string::npos)
        return {};
    const std::size_t end = sql.find("),\n", at);
    return sql.substr(at + 1, end == std::string::npos ? std::string::npos : end - at);
}

MergeColumn col(const std::string& name, const std::string& type = "integer")
{
    return MergeColumn{name, type, "'" + name + "'"};
}

// Target t, key id, columns a and b updated.
MergeSpec plain()
{
    MergeSpec s;
    s.target = "public.t";
    s.source_sql = "SELECT id, a, b FROM public.src";
    s.keys = {col("id")};
    s.key_eq = {kEq};
    s.insert_columns = {col("id"), col("a", "pg_catalog.text"), col("b")};
    s.update_columns = {col("a", "pg_catalog.text"), col("b")};
    return s;
}

MergeSpec versioned(MergeSpec s = plain())
{
    s.insert_columns.push_back(col("ver", "bigint"));
    s.update_columns.push_back(col("ver", "bigint"));
    s.version.columns = {col("ver", "bigint")};
    s.version.lt = kLt;
    s.version.eq = kEq;
    s.version_types = {"bigint"};
    return s;
}

MergeSpec everything()
{
    MergeSpec s = versioned();
    s.delete_column = "gone";
    s.tombstones = true;
    s.delete_missing = true;
    return s;
}

const std::vector<std::string> kCtes = {"src",   "stats", "dups", "checks", "dedup", "plan", "checks2",
                                        "tally", "todo",  "ins",  "upd",    "del",   "miss", "tomb"};

TEST(MergeSql, PlainMergeHasEveryStepInOrder)
{
    const std::string sql = build_merge_sql(plain());
    EXPECT_EQ(sql.rfind("WITH\nsrc AS MATERIALIZED (SELECT ", 0), 0u);
    std::size_t last = 0;
    for (const auto& name : kCtes) {
        const std::size_t at = sql.find("\n" + name + " AS ");
        ASSERT_NE(at, std::string::npos) << name;
        EXPECT_GT(at, last) << name;
        last = at;
    }
    EXPECT_TRUE(has(sql, "\ndel AS (SELECT 1 WHERE false),\n"));
    EXPECT_TRUE(has(sql, "\nmiss AS (SELECT 1 WHERE false),\n"));
    EXPECT_TRUE(has(sql, "\ntomb AS (SELECT 0 AS n)\nSELECT "));
    EXPECT_TRUE(has(sql, "\nchecks2 AS MATERIALIZED (SELECT true AS ok),\n"));
    const std::string tail = " FROM checks, checks2, tomb, tally ta";
    EXPECT_EQ(sql.substr(sql.size() - tail.size()), tail);
    for (const auto& out : {"inserted", "updated", "deleted", "unchanged", "stale"})
        EXPECT_TRUE(has(sql, std::string("::pg_catalog.int8 AS ") + out)) << out;
}

TEST(MergeSql, KeysAndVersionsAreCastToTheTargetOthersAreNot)
{
    const std::string src = cte(build_merge_sql(versioned()), "src");
    EXPECT_TRUE(has(src, "CAST(s.id AS integer) AS id"));
    EXPECT_TRUE(has(src, "CAST(s.ver AS bigint) AS ver"));
    EXPECT_TRUE(has(src, ", s.a, s.b,"));
    EXPECT_FALSE(has(src, "CAST(s.a "));
}

TEST(MergeSql, SourceTextIsPlacedVerbatimBeforeANewLine)
{
    MergeSpec s = plain();
    s.source_sql = "SELECT 1 AS id, 'x' AS a, 2 AS b -- a trailing comment";
    EXPECT_TRUE(has(build_merge_sql(s), " FROM (" + s.source_sql + "\n) AS s),\n"));
}

// Removes every OPERATOR(schema.op), then looks for a bare operator.
std::string without_qualified_operators(std::string sql)
{
    for (std::size_t at = sql.find("OPERATOR("); at != std::string::npos; at = sql.find("OPERATOR(", at)) {
        const std::size_t end = sql.find(')', at);
        EXPECT_EQ(sql.compare(at + 9, 11, "pg_catalog."), 0) << sql.substr(at, end - at + 1);
        sql.erase(at, end - at + 1);
    }
    return sql;
}

TEST(MergeSql, EveryOperatorIsSchemaQualified)
{
    MergeSpec dry = everything();
    dry.dry_run = true;
    for (const MergeSpec& s : {plain(), versioned(), everything(), dry}) {
        const std::string rest = without_qualified_operators(build_merge_sql(s));
        for (const auto& op : {" < ", " > ", " <= ", " >= ", " <> ", " != ", " + ", " - ", " / "})
            EXPECT_FALSE(has(rest, op)) << "bare" << op;
        // The only bare = is a multi-column SET (...) = ROW(...).
        EXPECT_EQ(count_of(rest, " = "), count_of(rest, ") = ROW("));
        EXPECT_FALSE(has(rest, "IN ("));
    }
}

TEST(MergeSql, EachKeyUsesItsOwnEqualityOperator)
{
    MergeSpec s = plain();
    s.keys = {col("id"), col("email", "public.citext")};
    s.key_eq = {kEq, "OPERATOR(public.=)"};
    s.insert_columns.push_back(col("email", "public.citext"));
    const std::string sql = build_merge_sql(s);
    EXPECT_TRUE(has(sql, "AS t ON t.id OPERATOR(pg_catalog.=) d.id AND t.email OPERATOR(public.=) d.email\n"));
    EXPECT_TRUE(has(sql, "ON CONFLICT (id, email) "));
    EXPECT_TRUE(has(sql, "GROUP BY src.id, src.email HAVING"));
    EXPECT_TRUE(has(sql, "DISTINCT ON (id, email) * FROM src"));
    EXPECT_TRUE(has(sql, "AS null_0, pg_catalog.count(*) FILTER (WHERE email IS NULL) AS null_1 FROM src"));
    EXPECT_TRUE(has(sql, "WHEN st.null_1 OPERATOR(pg_catalog.>) 0 THEN idem._raise('23502'"));
    EXPECT_TRUE(has(sql, "ORDER BY p.id, p.email\n"));
    // Merges of one target take turns (merge.cpp's lock): no row is
    // locked ahead of its UPDATE.
    EXPECT_FALSE(has(sql, "FOR UPDATE"));
}

TEST(MergeSql, HostileIdentifiersStayQuoted)
{
    const std::string key = "\"K\"\"); DROP TABLE x; --\"";
    const std::string val = "\"Value \"\"Col\"\"\"";
    MergeSpec s;
    s.target = "\"My Schema\".\"T; --\"";
    s.source_sql = "SELECT 1";
    s.keys = {MergeColumn{key, "integer", "'K\"); DROP TABLE x; --'"}};
    s.key_eq = {kEq};
    s.insert_columns = {s.keys[0], MergeColumn{val, "pg_catalog.text", "'Value \"Col\"'"}};
    s.update_columns = {s.insert_columns[1]};
    s.delete_column = "\"Del?\"\"\"";
    const std::string sql = build_merge_sql(s);
    // Every occurrence of the raw text is inside the quoted name.
    EXPECT_EQ(count_of(sql, "DROP TABLE x"), count_of(sql, key) + count_of(sql, "'K\"); DROP TABLE x; --'"));
    EXPECT_GT(count_of(sql, key), 10u);
    EXPECT_EQ(count_of(sql, "Value "), count_of(sql, val) + count_of(sql, "'Value \"Col\"'"));
    EXPECT_TRUE(has(sql, "CAST(s.\"Del?\"\"\" AS pg_catalog.bool) AS \"idem$delete\""));
    EXPECT_EQ(count_of(sql, "\"T; --\""), count_of(sql, "\"My Schema\".\"T; --\""));
    // Names in messages are literals, quoted by the server at run time.
    EXPECT_TRUE(has(sql, "pg_catalog.quote_ident('K\"); DROP TABLE x; --')"));
}

TEST(MergeSql, DryRunWritesNothing)
{
    for (MergeSpec s : {plain(), everything()}) {
        s.dry_run = true;
        const std::string sql = build_merge_sql(s);
        for (const auto& w : {"INSERT", "UPDATE", "DELETE", "_tombstones_put", "\ntodo AS", "\nins AS", "\nlck AS"})
            EXPECT_FALSE(has(sql, w)) << w;
        const std::string tail = "\n FROM checks, checks2, tally ta";
        EXPECT_EQ(sql.substr(sql.size() - tail.size()), tail);
        EXPECT_TRUE(has(sql, "\ntally AS MATERIALIZED (SELECT "));
        EXPECT_TRUE(has(sql, "),\ntally AS"));
        EXPECT_TRUE(has(sql, " FROM plan p)\nSELECT ta.to_insert::pg_catalog.int8 AS inserted,\n"));
    }
}

TEST(MergeSql, DryRunCountsMissingRowsOnlyWithDeleteMissing)
{
    MergeSpec s = plain();
    s.dry_run = true;
    EXPECT_TRUE(has(build_merge_sql(s), "(ta.to_delete OPERATOR(pg_catalog.+) 0)::pg_catalog.int8 AS deleted"));
    s.delete_missing = true;
    s.delete_scope = "a = 'x'";
    EXPECT_TRUE(
        has(build_merge_sql(s),
            "(ta.to_delete OPERATOR(pg_catalog.+) (SELECT pg_catalog.count(*) FROM public.t AS t WHERE (a = 'x'\n) "
            "AND NOT EXISTS (SELECT FROM dedup d WHERE t.id OPERATOR(pg_catalog.=) d.id)))::pg_catalog.int8 AS "
            "deleted"));
}

TEST(MergeSql, DeleteMissingDeletesWhatTheSourceLacksAndRefusesAnEmptySource)
{
    MergeSpec s = plain();
    EXPECT_FALSE(has(build_merge_sql(s), "22023"));
    s.delete_missing = true;
    std::string sql = build_merge_sql(s);
    EXPECT_EQ(cte(sql, "miss"),
              "miss AS (DELETE FROM public.t AS t WHERE NOT EXISTS (SELECT FROM dedup d WHERE t.id "
              "OPERATOR(pg_catalog.=) d.id) AND (SELECT ok FROM checks2) RETURNING 1)");
    EXPECT_TRUE(has(sql, " WHEN st.n OPERATOR(pg_catalog.=) 0 THEN idem._raise('22023', "));
    s.delete_scope = "a = 'x'";
    sql = build_merge_sql(s);
    EXPECT_TRUE(has(cte(sql, "miss"), "WHERE (a = 'x'\n) AND NOT EXISTS ("));
    s.allow_empty = true;
    EXPECT_FALSE(has(build_merge_sql(s), "22023"));
}

TEST(MergeSql, DeleteColumnPlansDeletesAndAbsentDeletes)
{
    MergeSpec s = plain();
    s.delete_column = "gone";
    const std::string sql = build_merge_sql(s);
    EXPECT_TRUE(has(cte(sql, "src"), ", CAST(s.gone AS pg_catalog.bool) AS \"idem$delete\" FROM ("));
    EXPECT_TRUE(has(cte(sql, "dups"), "src.b, src.\"idem$delete\")"));
    EXPECT_TRUE(has(sql,
                    "\n WHEN d.\"idem$delete\" IS TRUE AND NOT (t.id IS NOT NULL) THEN 7\n"
                    " WHEN NOT (t.id IS NOT NULL) THEN 1\n WHEN d.\"idem$delete\" IS TRUE THEN 3\n"));
    EXPECT_EQ(cte(sql, "del"),
              "del AS (DELETE FROM public.t AS t USING todo AS p WHERE p.\"idem$action\" "
              "OPERATOR(pg_catalog.=) 3 AND t.id OPERATOR(pg_catalog.=) p.id RETURNING 1)");
    EXPECT_FALSE(has(sql, "_tombstones"));
}

TEST(MergeSql, VersionsPickTheNewestRowAndNeverOverwriteANewerOne)
{
    const std::string sql = build_merge_sql(versioned());
    EXPECT_TRUE(has(
        sql,
        "\ntops AS MATERIALIZED (SELECT src.id, pg_catalog.max(src.ver) AS top, pg_catalog.count(*) AS \"idem$n\" FROM src"));
    EXPECT_TRUE(has(cte(sql, "dups"),
                    " JOIN tops ON src.id OPERATOR(pg_catalog.=) tops.id AND src.ver "
                    "OPERATOR(pg_catalog.=) tops.top "));
    EXPECT_TRUE(has(cte(sql, "stats"), "FILTER (WHERE ver IS NULL) AS null_version FROM src"));
    EXPECT_TRUE(has(cte(sql, "dedup"), "ORDER BY id, ver DESC)"));
    EXPECT_TRUE(has(cte(sql, "plan"), " WHEN d.ver OPERATOR(pg_catalog.<) t.ver THEN 5\n"));
    EXPECT_TRUE(has(cte(sql, "plan"), " WHEN d.ver OPERATOR(pg_catalog.=) t.ver THEN 6\n"));
    EXPECT_TRUE(has(cte(sql, "checks2"), "idem._raise('ID006', 'a source row has the same version"));
    EXPECT_TRUE(has(cte(sql, "ins"), " AND NOT (EXCLUDED.ver OPERATOR(pg_catalog.<) t.ver)\n"));
    EXPECT_TRUE(has(cte(sql, "upd"), " AND NOT (p.ver OPERATOR(pg_catalog.<) t.ver) RETURNING 1"));
    EXPECT_TRUE(has(sql, "(ta.stale OPERATOR(pg_catalog.+) ta.to_update OPERATOR(pg_catalog.-) "));
    EXPECT_FALSE(has(sql, "_tombstones"));
    const std::string unversioned = build_merge_sql(plain());
    EXPECT_TRUE(has(
        unversioned,
        "\ntops AS MATERIALIZED (SELECT src.id, pg_catalog.count(*) AS \"idem$n\" FROM src GROUP BY src.id HAVING "));
    EXPECT_TRUE(has(unversioned, "\n (ta.stale)::pg_catalog.int8 AS stale\n"));
}

// Repeated keys are found by the key alone (tops, a hash aggregate); only
// their rows are digested (dups) and sorted (dedup). Every other row passes
// to dedup through an anti-join with tops, unsorted: a source without an
// index is no longer sorted twice (issue 24). When tops is empty, dedup is
// the source itself, behind one-time filters (no join at all).
TEST(MergeSql, OnlyRepeatedKeysAreDigestedAndSorted)
{
    const std::string sql = build_merge_sql(plain());
    EXPECT_TRUE(has(cte(sql, "tops"), "GROUP BY src.id HAVING pg_catalog.count(*) OPERATOR(pg_catalog.>) 1)"));
    // dedup is not copied again; tally counts its rows from stats and tops.
    EXPECT_TRUE(has(sql, "\ndedup AS NOT MATERIALIZED ("));
    EXPECT_TRUE(has(cte(sql, "tally"),
                    "((SELECT st.n FROM stats st) OPERATOR(pg_catalog.-) (SELECT COALESCE(pg_catalog.sum(tp.\"idem$n\" "
                    "OPERATOR(pg_catalog.-) 1), 0)::pg_catalog.int8 FROM tops tp)) AS n"));
    EXPECT_TRUE(has(cte(sql, "dups"), "FROM src JOIN tops ON src.id OPERATOR(pg_catalog.=) tops.id GROUP BY"));
    EXPECT_TRUE(has(cte(sql, "dedup"),
                    "SELECT * FROM src WHERE (SELECT ok FROM checks) AND NOT EXISTS (SELECT FROM tops)\n"
                    " UNION ALL SELECT * FROM src WHERE (SELECT ok FROM checks) AND EXISTS (SELECT FROM tops) AND "
                    "NOT EXISTS (SELECT FROM tops r WHERE r.id OPERATOR(pg_catalog.=) src.id)\n UNION ALL (SELECT "
                    "DISTINCT ON (id) * FROM src WHERE (SELECT ok FROM checks) AND EXISTS (SELECT FROM tops) AND "
                    "EXISTS (SELECT FROM tops r WHERE r.id OPERATOR(pg_catalog.=) src.id) ORDER BY id))"));
    // A source unique on the key has none of this.
    MergeSpec unique = plain();
    unique.check_duplicates = false;
    const std::string u = build_merge_sql(unique);
    EXPECT_FALSE(has(u, "\ntops AS"));
    EXPECT_FALSE(has(u, "DISTINCT ON"));
}

TEST(MergeSql, TombstonesAreReadAndWrittenWithVersionedDeletes)
{
    const std::string sql = build_merge_sql(everything());
    EXPECT_TRUE(has(cte(sql, "plan"),
                    "\n LEFT JOIN idem._tombstones_of($1::pg_catalog.regclass) AS tb ON tb.key_digest "
                    "OPERATOR(pg_catalog.=) idem._row_digest(ROW(d.id))\n"));
    EXPECT_EQ(count_of(cte(sql, "plan"), "idem._from_canonical(tb.version, NULL::bigint)"), 2u);
    EXPECT_TRUE(has(cte(sql, "tomb"), "tomb AS MATERIALIZED (SELECT idem._tombstones_put($1::pg_catalog.regclass,"));
    EXPECT_TRUE(has(cte(sql, "tomb"), "ANY ('{3,7}'::pg_catalog.int4[]) AND (SELECT ok FROM checks2))"));
    EXPECT_TRUE(has(cte(sql, "del"), " AND NOT (p.ver OPERATOR(pg_catalog.<) t.ver) RETURNING 1"));
}

TEST(MergeSql, NothingToUpdateInsertsOrLeavesAlone)
{
    MergeSpec s = plain();
    s.insert_columns = {col("id")};
    s.update_columns.clear();
    const std::string sql = build_merge_sql(s);
    EXPECT_TRUE(has(cte(sql, "ins"), "\n ON CONFLICT (id) DO NOTHING\n"));
    EXPECT_EQ(cte(sql, "upd"), "upd AS (SELECT 1 WHERE false)");
    EXPECT_TRUE(has(cte(sql, "plan"), " WHEN pg_catalog.record_image_eq(ROW(), ROW()) THEN 4\n"));
}

TEST(MergeSql, ASourceUniqueOnTheKeyIsNotCheckedNorCopied)
{
    MergeSpec s = plain();
    s.check_nulls = false;
    s.check_duplicates = false;
    const std::string sql = build_merge_sql(s);
    EXPECT_EQ(sql.rfind("WITH\nsrc AS NOT MATERIALIZED (", 0), 0u);
    EXPECT_FALSE(has(sql, "\ndups AS"));
    EXPECT_FALSE(has(sql, "null_0"));
    EXPECT_TRUE(has(sql, "\nchecks AS MATERIALIZED (SELECT true AS ok),\n"));
    EXPECT_TRUE(has(sql, "\ndedup AS NOT MATERIALIZED (SELECT * FROM src WHERE (SELECT ok FROM checks)),\n"));
    // The empty-source check still needs stats.
    s.delete_missing = true;
    EXPECT_TRUE(has(build_merge_sql(s), " ELSE true END AS ok FROM stats st),\n"));
}

TEST(MergeSql, NullChecksAndDuplicateChecksAreSeparate)
{
    MergeSpec s = plain();
    s.check_nulls = false;
    std::string sql = build_merge_sql(s);
    EXPECT_FALSE(has(sql, "23502"));
    EXPECT_TRUE(has(sql, "\ndups AS"));
    s.check_nulls = true;
    s.check_duplicates = false;
    sql = build_merge_sql(s);
    EXPECT_TRUE(has(sql, "23502"));
    EXPECT_FALSE(has(sql, "\ndups AS"));
}

TEST(MergeSql, OverrideIdentityOnlyOnTheInsert)
{
    MergeSpec s = plain();
    EXPECT_FALSE(has(build_merge_sql(s), "OVERRIDING"));
    s.override_identity = true;
    const std::string sql = build_merge_sql(s);
    EXPECT_EQ(count_of(sql, "OVERRIDING SYSTEM VALUE"), 1u);
    EXPECT_TRUE(has(sql, "ins AS (INSERT INTO public.t AS t (id, a, b) OVERRIDING SYSTEM VALUE\n SELECT "));
}

TEST(MergeSql, PartitionedTargetsCountEveryInsertAsFresh)
{
    MergeSpec s = plain();
    EXPECT_TRUE(
        has(build_merge_sql(s), "\n RETURNING (t.xmax OPERATOR(pg_catalog.=) '0'::pg_catalog.xid) AS fresh),\n"));
    s.partitioned = true;
    const std::string sql = build_merge_sql(s);
    EXPECT_TRUE(has(sql, "\n RETURNING true AS fresh),\n"));
    EXPECT_FALSE(has(sql, "xmax"));
}

TEST(MergeSql, ColumnsSubsetUpdatesOnlyThoseColumns)
{
    MergeSpec s = plain();
    s.update_columns = {col("a", "pg_catalog.text")};
    const std::string sql = build_merge_sql(s);
    EXPECT_TRUE(has(cte(sql, "ins"), "INSERT INTO public.t AS t (id, a, b)\n SELECT p.id, p.a, p.b FROM todo p"));
    EXPECT_TRUE(has(cte(sql, "ins"), "DO UPDATE SET (a) = ROW(EXCLUDED.a) WHERE NOT"));
    EXPECT_TRUE(has(cte(sql, "upd"), "SET (a) = ROW(p.a) FROM todo AS p"));
    EXPECT_TRUE(has(cte(sql, "plan"), "record_image_eq(ROW(CAST(d.a AS pg_catalog.text)), ROW(t.a))"));
    // Duplicates compare every source column, updated or not.
    EXPECT_TRUE(has(cte(sql, "dups"), "idem._row_digest(ROW(src.id, src.a, src.b))"));
}

// With 0.9.0's SQL objects, every comparison of a source row with its
// target row is idem._images_equal's, pairwise: no record is formed.
TEST(MergeSql, PairwiseImagesReplaceEveryRecordComparison)
{
    MergeSpec s = plain();
    s.update_columns = {col("a", "pg_catalog.text"), col("b")};
    s.pairwise_images = true;
    const std::string sql = build_merge_sql(s);
    EXPECT_TRUE(has(cte(sql, "plan"),
                    " WHEN idem._images_equal(CAST(d.a AS pg_catalog.text), t.a, CAST(d.b AS integer), t.b) THEN 4\n"));
    EXPECT_TRUE(has(cte(sql, "ins"), "WHERE NOT (idem._images_equal(EXCLUDED.a, t.a, EXCLUDED.b, t.b))"));
    EXPECT_FALSE(has(sql, "record_image_eq"));
    EXPECT_TRUE(has(build_first_load_sql(s),
                    "idem._count_conflict($1::pg_catalog.regclass, idem._images_equal(EXCLUDED.a, t.a, EXCLUDED.b, "
                    "t.b), true)"));
    s.pairwise_images = false;
    EXPECT_FALSE(has(build_merge_sql(s), "idem._images_equal"));
}

TEST(CastToTarget, PlainLengthCoercedAndDomain)
{
    MergeColumn c = col("v", "pg_catalog.text");
    EXPECT_EQ(cast_to_target("d.v", c), "CAST(d.v AS pg_catalog.text)");
    c.type = "pg_catalog.\"varchar\"";
    c.length_coercion = "pg_catalog.\"varchar\"";
    c.base_type = "pg_catalog.\"varchar\"";
    c.typmod = 14;
    EXPECT_EQ(cast_to_target("d.v", c), "pg_catalog.\"varchar\"(CAST(d.v AS pg_catalog.\"varchar\"), 14, false)");
    c.type = "public.short";
    c.domain = true;
    EXPECT_EQ(cast_to_target("d.v", c),
              "CAST(pg_catalog.\"varchar\"(CAST(d.v AS pg_catalog.\"varchar\"), 14, false) AS public.short)");
}

}  // namespace

// A table source is read by each step that needs it, in the statement's one
// snapshot, instead of copied into a tuplestore first; a query or view
// source, which may read differently twice, is copied.
TEST(MergeSql, OnlyASourceThatMayReadDifferentlyIsCopied)
{
    MergeSpec table = plain();
    table.stable_source = true;
    EXPECT_TRUE(has(build_merge_sql(table), "WITH\nsrc AS NOT MATERIALIZED (SELECT "));
    EXPECT_TRUE(has(build_merge_sql(plain()), "WITH\nsrc AS MATERIALIZED (SELECT "));
}

// The first load is the INSERT ... ON CONFLICT a user writes: no CTE, no
// RETURNING, no sort; NULL keys raise (merge then explains them); each
// conflict is counted by idem._count_conflict, which decides the
// update.
TEST(MergeSql, FirstLoadIsOneInsertOnConflict)
{
    const std::string sql = build_first_load_sql(plain());
    EXPECT_EQ(sql,
              "INSERT INTO public.t AS t (id, a, b)\n SELECT CAST(s.id AS integer) AS id, s.a, s.b FROM (SELECT id, a, "
              "b FROM public.src\n) AS s\n WHERE (s.id IS NOT NULL) OR idem._raise('23502', 'null key in a first "
              "load', NULL, NULL)\n ON CONFLICT (id) DO UPDATE SET (a, b) = ROW(EXCLUDED.a, EXCLUDED.b) WHERE "
              "idem._count_conflict($1::pg_catalog.regclass, pg_catalog.record_image_eq(ROW(EXCLUDED.a, "
              "EXCLUDED.b), ROW(t.a, t.b)), true)");
    // Nothing to update: a conflict is always unchanged, never written.
    MergeSpec keys_only = plain();
    keys_only.update_columns.clear();
    EXPECT_TRUE(has(build_first_load_sql(keys_only),
                    "DO UPDATE SET id = t.id WHERE idem._count_conflict($1::pg_catalog.regclass, true, true)"));
    // A source without NULL keys (NOT NULL, unique) is not filtered.
    MergeSpec unique = plain();
    unique.check_nulls = false;
    EXPECT_FALSE(has(build_first_load_sql(unique), "_raise"));
}

TEST(MergeSql, FirstLoadOnlyWithoutVersionsDeletesDryRunOrCitus)
{
    EXPECT_TRUE(first_load_applies(plain()));
    EXPECT_FALSE(first_load_applies(versioned()));
    EXPECT_FALSE(first_load_applies(everything()));
    MergeSpec dry = plain();
    dry.dry_run = true;
    EXPECT_FALSE(first_load_applies(dry));
    MergeSpec missing = plain();
    missing.delete_missing = true;
    EXPECT_FALSE(first_load_applies(missing));
    MergeSpec flagged = plain();
    flagged.delete_column = "gone";
    EXPECT_FALSE(first_load_applies(flagged));
    // Citus refuses idem._count_conflict in ON CONFLICT ... WHERE.
    MergeSpec citus = plain();
    citus.citus = true;
    EXPECT_FALSE(first_load_applies(citus));
}

TEST(ConflictTally, CountsEachTargetsConflictsUntilReset)
{
    using namespace pg_idempotent;
    reset_conflicts(1);
    reset_conflicts(2);
    EXPECT_TRUE(note_conflict(1, false, true));  // differs, merge: update
    EXPECT_FALSE(note_conflict(1, true, true));  // same: leave
    EXPECT_FALSE(note_conflict(1, true, true));
    EXPECT_FALSE(note_conflict(2, false, false));  // differs, append: never update
    EXPECT_EQ(conflicts(1).differ, 1);
    EXPECT_EQ(conflicts(1).same, 2);
    EXPECT_EQ(conflicts(2).differ, 1);
    EXPECT_EQ(conflicts(2).same, 0);
    reset_conflicts(1);
    EXPECT_EQ(conflicts(1).differ + conflicts(1).same, 0);
    EXPECT_EQ(conflicts(2).differ, 1);
    EXPECT_EQ(conflicts(3).same, 0);  // never seen
}

namespace {

// A source unique on the key: plan counts the unchanged keys it leaves out
// (idem._count_conflict; merge.cpp adds them), instead of the statement
// reading the source once more for its row count.
TEST(MergeSql, AUniqueSourceCountsItsUnchangedKeysInPlan)
{
    MergeSpec s = plain();
    s.check_nulls = false;
    s.check_duplicates = false;
    EXPECT_TRUE(has(build_merge_sql(s), "(SELECT pg_catalog.count(*) FROM dedup) AS n"));
    s.count_unchanged = true;
    const std::string sql = build_merge_sql(s);
    EXPECT_TRUE(has(sql,
                    "WHERE x.\"idem$action\" OPERATOR(pg_catalog.<>) 4 OR "
                    "idem._count_conflict($1::pg_catalog.regclass, true, false))"));
    EXPECT_TRUE(has(sql, "tally AS MATERIALIZED (SELECT 0::pg_catalog.int8 AS n,"));
    EXPECT_FALSE(has(sql, "FROM dedup)"));
    EXPECT_TRUE(has(sql, " (ta.absent OPERATOR(pg_catalog.+) ta.to_insert OPERATOR(pg_catalog.-) "));
    s.dry_run = true;
    EXPECT_TRUE(has(build_merge_sql(s), " (ta.absent)::pg_catalog.int8 AS unchanged"));
}

}  // namespace

namespace {

// A key column of a collation other than its type's default compares in
// it: the CAST that brings a source value to the target's type also sets
// the target column's collation.
TEST(MergeSql, AKeyComparesInTheTargetColumnsCollation)
{
    pg_idempotent::core::AssignmentTarget c{"name", "pg_catalog.text", "'name'"};
    EXPECT_EQ(pg_idempotent::core::cast_to_target("s.name", c), "CAST(s.name AS pg_catalog.text)");
    c.collation = "public.nocase";
    EXPECT_EQ(pg_idempotent::core::cast_to_target("s.name", c),
              "CAST(s.name AS pg_catalog.text) COLLATE public.nocase");
}

}  // namespace

// Tie-breakers (issue 44): a version of two columns compares as rows, keeps
// the newest of each repeated key by both, and stores a tombstone's version
// as a jsonb array of canonical texts.
TEST(MergeSql, SeveralVersionColumnsCompareAsRows)
{
    MergeSpec s = versioned();
    s.version.columns.push_back(col("loaded", "timestamptz"));
    s.version_types.push_back("timestamptz");
    s.insert_columns.push_back(col("loaded", "timestamptz"));
    s.update_columns.push_back(col("loaded", "timestamptz"));
    const std::string sql = build_merge_sql(s);
    EXPECT_TRUE(has(cte(sql, "plan"), "pg_catalog.record_lt(ROW(d.ver, d.loaded), ROW(t.ver, t.loaded))"));
    EXPECT_TRUE(has(cte(sql, "plan"), "pg_catalog.record_eq(ROW(d.ver, d.loaded), ROW(t.ver, t.loaded))"));
    EXPECT_TRUE(
        has(cte(sql, "tops"),
            "(pg_catalog.array_agg(ROW(src.ver, src.loaded) ORDER BY src.ver DESC, src.loaded DESC))[1] AS top"));
    EXPECT_TRUE(has(cte(sql, "dups"), "pg_catalog.record_eq(ROW(src.ver, src.loaded), tops.top)"));
    EXPECT_TRUE(has(cte(sql, "dedup"), "ORDER BY id, ver DESC, loaded DESC"));
    EXPECT_TRUE(has(cte(sql, "stats"), "FILTER (WHERE (ver IS NULL OR loaded IS NULL)) AS null_version"));
    EXPECT_FALSE(has(sql, "max(src.ver)"));
}

namespace {

// Pruned to the batch's partitions: each row planned is checked against them
// in plan, not in src, which then holds nothing volatile and is read again
// by each step as its marking says (PostgreSQL copies a volatile CTE).
TEST(MergeSql, APrunedSourceIsCheckedWhereItIsPlanned)
{
    MergeSpec s = plain();
    s.stable_source = true;
    s.insert_columns.push_back(col("day", "pg_catalog.date"));
    s.prune = pg_idempotent::core::PartitionPrune{col("day", "pg_catalog.date"), kEq, false, 3, "ID901"};
    const std::string sql = build_merge_sql(s);
    EXPECT_TRUE(has(cte(sql, "src"), "src AS NOT MATERIALIZED")) << sql;
    EXPECT_FALSE(has(cte(sql, "src"), "idem._raise('ID901'")) << sql;
    EXPECT_EQ(count_of(sql, "idem._raise('ID901'"), 1u) << sql;
    EXPECT_TRUE(has(cte(sql, "plan"), "\n WHERE (CAST(d.day AS pg_catalog.date) IS NULL OR ")) << sql;
}

}  // namespace
