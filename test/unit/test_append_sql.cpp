// build_append_sql: the steps of idem.append's statement and what each
// option adds. The server-side behaviour is in sql/append.sql and
// test/specs/append_concurrent.spec.
#include <gtest/gtest.h>

#include <string>

#include "append/append_sql.hpp"

namespace {

using pg_idempotent::core::AppendSpec;
using pg_idempotent::core::AssignmentTarget;
using pg_idempotent::core::build_append_sql;

AssignmentTarget col(const std::string& name, const std::string& type = "bigint")
{
    return AssignmentTarget{name, type, "'" + name + "'"};
}

// Events keyed by id; kind compared, received_at excluded.
AppendSpec events()
{
    AppendSpec s;
    s.target = "public.ev";
    s.source_sql = "SELECT id, kind, received_at FROM public.batch";
    s.keys = {col("id")};
    s.key_eq = {"OPERATOR(pg_catalog.=)"};
    s.insert_columns = {col("id"), col("kind", "pg_catalog.text"), col("received_at", "pg_catalog.timestamptz")};
    s.compare_columns = {col("kind", "pg_catalog.text")};
    s.target_literal = "'public.ev'";
    return s;
}

bool has(const std::string& sql, const std::string& part)
{
    return sql.find(part) != std::string::npos;
}

TEST(AppendSql, EveryStepInOrder)
{
    const std::string sql = build_append_sql(events());
    std::size_t at = 0;
    for (const char* cte : {"src", "stats", "tops", "dups", "checks", "dedup", "plan", "checks2", "tally", "ins"}) {
        const std::size_t next = sql.find(std::string("\n") + cte + " AS ", at);
        ASSERT_NE(next, std::string::npos) << cte;
        at = next;
    }
    EXPECT_FALSE(has(sql, "\nwin AS"));
}

// "The same event": the compared columns' images, the key never, the
// excluded columns never.
TEST(AppendSql, SameEventComparesOnlyTheComparedColumns)
{
    const std::string sql = build_append_sql(events());
    EXPECT_TRUE(has(sql, "WHEN pg_catalog.record_image_eq(ROW(CAST(d.kind AS pg_catalog.text)), ROW(t.kind)) THEN 2"));
    EXPECT_TRUE(has(sql, "pg_catalog.count(DISTINCT idem._row_digest(ROW(CAST(src.kind AS pg_catalog.text))))"));
    EXPECT_FALSE(has(sql, "received_at AS pg_catalog.timestamptz"));
}

// A replay copies nothing: the events already there are left out of plan.
TEST(AppendSql, DuplicatesAreCountedNotKept)
{
    const std::string sql = build_append_sql(events());
    EXPECT_TRUE(has(sql, "OFFSET 0) AS x WHERE x.\"idem$action\" OPERATOR(pg_catalog.<>) 2)"));
    EXPECT_TRUE(has(sql,
                    "((SELECT st.n FROM stats st) OPERATOR(pg_catalog.-) ta.to_insert OPERATOR(pg_catalog.-) "
                    "ta.conflicting)::pg_catalog.int8"));
}

TEST(AppendSql, OtherContentRaisesUnlessKeepFirst)
{
    AppendSpec s = events();
    EXPECT_TRUE(has(build_append_sql(s), "idem._raise('ID005', 'an event came back with different content'"));
    s.keep_first = true;
    EXPECT_TRUE(has(build_append_sql(s), "checks2 AS MATERIALIZED (SELECT true AS ok)"));
    // Within the batch, differing events under one key are an error either way.
    EXPECT_TRUE(has(build_append_sql(s), "'events with the same key differ within the batch'"));
}

// With a unique index on the key, a key a concurrent writer inserted
// meanwhile is counted, never updated; without one, a plain INSERT.
TEST(AppendSql, OnConflictOnlyWithAnArbiterAndNeverUpdates)
{
    AppendSpec s = events();
    EXPECT_FALSE(has(build_append_sql(s), "ON CONFLICT"));
    s.arbiter = true;
    EXPECT_TRUE(has(build_append_sql(s),
                    "ON CONFLICT (id) DO UPDATE SET id = t.id WHERE idem._count_conflict($1::pg_catalog.regclass, "
                    "pg_catalog.record_image_eq(ROW(EXCLUDED.kind), ROW(t.kind)), false)"));
}

// within: the target is read between the batch's own partition key values
// less and plus the interval ($2), so the executor skips other partitions.
TEST(AppendSql, WithinReadsTheWindowOnly)
{
    AppendSpec s = events();
    s.window_column = col("day", "pg_catalog.date");
    const std::string sql = build_append_sql(s);
    // The batch's own range comes from stats, in its one pass over the batch.
    EXPECT_TRUE(has(sql, "pg_catalog.min(src.day) AS lo, pg_catalog.max(src.day) AS hi FROM src)"));
    EXPECT_TRUE(has(sql,
                    "win AS MATERIALIZED (SELECT CAST(st.lo OPERATOR(pg_catalog.-) $2::pg_catalog.interval AS "
                    "pg_catalog.date) AS lo, CAST(st.hi OPERATOR(pg_catalog.+) $2::pg_catalog.interval AS "
                    "pg_catalog.date) AS hi FROM stats st)"));
    EXPECT_TRUE(has(sql,
                    "AND t.day OPERATOR(pg_catalog.>=) (SELECT lo FROM win) AND t.day OPERATOR(pg_catalog.<=) "
                    "(SELECT hi FROM win)"));
}

TEST(AppendSql, ATableSourceIsReadNotCopied)
{
    AppendSpec s = events();
    EXPECT_TRUE(has(build_append_sql(s), "WITH\nsrc AS MATERIALIZED (SELECT CAST(s.id AS bigint) AS id, s.kind"));
    s.stable_source = true;
    EXPECT_TRUE(has(build_append_sql(s), "WITH\nsrc AS NOT MATERIALIZED ("));
    s.check_nulls = false;
    EXPECT_FALSE(has(build_append_sql(s), "null_0"));
}

// Every operator is schema-qualified: a planted operator on the caller's
// search_path is never picked.
TEST(AppendSql, EveryOperatorIsSchemaQualified)
{
    AppendSpec s = events();
    s.window_column = col("day", "pg_catalog.date");
    s.arbiter = true;
    std::string sql = build_append_sql(s);
    // (the one " = " that is no operator: the assignment ON CONFLICT never runs)
    const std::string set = "SET id = t.id";
    ASSERT_TRUE(has(sql, set));
    sql.erase(sql.find(set), set.size());
    for (const char* bare : {" = ", " > ", " < ", " >= ", " <= ", " <> ", " + ", " - "})
        EXPECT_FALSE(has(sql, bare)) << bare;
}

}  // namespace

namespace {

// With a unique index on the key: one INSERT ... SELECT, no CTE, no ON
// CONFLICT; keys already there are counted in the WHERE and left out.
TEST(AppendSql, OneInsertWithAUniqueIndex)
{
    AppendSpec s = events();
    EXPECT_FALSE(pg_idempotent::core::fast_append_applies(s));
    s.arbiter = true;
    EXPECT_TRUE(pg_idempotent::core::fast_append_applies(s));
    EXPECT_EQ(pg_idempotent::core::build_fast_append_sql(s),
              "INSERT INTO public.ev AS t (id, kind, received_at)\n SELECT s.id, s.kind, s.received_at FROM (SELECT "
              "CAST(s.id AS bigint) AS id, s.kind, s.received_at FROM (SELECT id, kind, received_at FROM "
              "public.batch\n) AS s) AS s LEFT JOIN public.ev AS e ON e.id OPERATOR(pg_catalog.=) s.id\n WHERE "
              "((s.id IS NOT NULL) OR idem._raise('23502', 'null key in an append', NULL, NULL)) AND (e.id IS NULL "
              "OR idem._count_conflict($1::pg_catalog.regclass, pg_catalog.record_image_eq(ROW(CAST(s.kind AS "
              "pg_catalog.text)), ROW(e.kind)), false))");
    // A window reads the source twice: a table source only.
    s.window_column = col("day", "pg_catalog.date");
    EXPECT_FALSE(pg_idempotent::core::fast_append_applies(s));
    s.stable_source = true;
    EXPECT_TRUE(pg_idempotent::core::fast_append_applies(s));
    EXPECT_EQ(pg_idempotent::core::build_fast_append_sql(s).rfind("WITH src AS NOT MATERIALIZED (SELECT ", 0), 0u);
}

}  // namespace

namespace {

// A source unique on the key: no tops, dups or DISTINCT ON, and the one
// INSERT applies without a unique index on the target.
TEST(AppendSql, ASourceUniqueOnTheKeyIsNotCheckedForRepeats)
{
    AppendSpec s = events();
    s.check_nulls = false;
    s.check_duplicates = false;
    const std::string sql = build_append_sql(s);
    EXPECT_FALSE(has(sql, "\ntops AS"));
    EXPECT_FALSE(has(sql, "DISTINCT ON"));
    EXPECT_TRUE(has(sql, "checks AS MATERIALIZED (SELECT true AS ok)"));
    EXPECT_TRUE(has(sql, "dedup AS NOT MATERIALIZED (SELECT * FROM src WHERE (SELECT ok FROM checks))"));
    EXPECT_TRUE(pg_idempotent::core::fast_append_applies(s));
}

}  // namespace

namespace {

// With hash_keys, stats finds the keys that may repeat and tops
// groups only their rows (none when none repeat, all when stats cannot tell).
TEST(AppendSql, RepeatedKeysAreFoundFromTheirHashes)
{
    AppendSpec s = events();
    EXPECT_FALSE(has(build_append_sql(s), "idem._repeat_hashes"));
    s.hash_keys = true;
    const std::string sql = build_append_sql(s);
    EXPECT_TRUE(has(sql, "idem._repeat_hashes(src.id) AS \"idem$repeats\" FROM src)"));
    EXPECT_TRUE(has(sql,
                    "FROM src WHERE (SELECT st.\"idem$repeats\" IS NULL OR pg_catalog.cardinality("
                    "st.\"idem$repeats\") OPERATOR(pg_catalog.>) 0 FROM stats st) AND idem._key_repeats((SELECT "
                    "st.\"idem$repeats\" FROM stats st), src.id) GROUP BY src.id"));
    // No IN (its = would be looked up on the caller's search_path).
    EXPECT_FALSE(has(sql, " IN ("));
}

// Without a unique index, a table batch takes the one INSERT behind a guard
// that finds no repeated key (23505 otherwise: the caller gives way); a
// query (read once) or a key that cannot be hashed never does.
TEST(AppendSql, OneGuardedInsertWithoutAUniqueIndex)
{
    AppendSpec s = events();
    s.stable_source = true;
    EXPECT_FALSE(pg_idempotent::core::fast_append_applies(s));
    s.hash_keys = true;
    EXPECT_TRUE(pg_idempotent::core::fast_append_applies(s));
    const std::string sql = pg_idempotent::core::build_fast_append_sql(s);
    EXPECT_TRUE(has(sql,
                    "guard AS MATERIALIZED (SELECT st.\"idem$repeats\" IS NOT NULL AND "
                    "pg_catalog.cardinality(st.\"idem$repeats\") OPERATOR(pg_catalog.=) 0 OR "
                    "idem._raise('23505', 'keys may repeat in the batch', NULL, NULL) AS ok FROM stats st)"));
    EXPECT_TRUE(has(sql, " AND (SELECT ok FROM guard) AND (e.id IS NULL OR "));
    s.window_column = col("day", "pg_catalog.date");
    EXPECT_TRUE(has(pg_idempotent::core::build_fast_append_sql(s), "AS hi FROM stats st)\nINSERT INTO"));
    s.stable_source = false;
    EXPECT_FALSE(pg_idempotent::core::fast_append_applies(s));
}

// Pruned to the batch's partitions: each inserted row is checked against
// them in the INSERT itself, not in src, which holds nothing volatile and so
// is read again by each step instead of copied (the copy of a 1M-row batch
// spilled to temporary files).
TEST(AppendSql, APrunedTableSourceIsCheckedWhereItIsInserted)
{
    AppendSpec s = events();
    s.stable_source = true;
    s.hash_keys = true;
    s.insert_columns.push_back(col("day", "pg_catalog.date"));
    s.window_column = col("day", "pg_catalog.date");
    s.prune =
        pg_idempotent::core::PartitionPrune{col("day", "pg_catalog.date"), "OPERATOR(pg_catalog.=)", true, 3, "ID901"};
    for (const bool empty : {false, true}) {
        s.target_empty = empty;
        const std::string sql = pg_idempotent::core::build_fast_append_sql(s);
        const std::size_t insert = sql.find("\nINSERT INTO");
        ASSERT_NE(insert, std::string::npos);
        EXPECT_EQ(sql.find("idem._raise('ID901'"), sql.find("idem._raise('ID901'", insert)) << sql;
        EXPECT_TRUE(has(sql.substr(insert), " OR idem._raise('ID901', ")) << sql;
        EXPECT_TRUE(has(sql, "WITH src AS NOT MATERIALIZED (SELECT CAST(s.id AS bigint) AS id")) << sql;
    }
}

}  // namespace

namespace {

// On a Citus table: never the one INSERT (its counts would be made on the
// workers), and the whole statement's INSERT has no ON CONFLICT (Citus
// refuses a volatile function in ON CONFLICT ... WHERE).
TEST(AppendSql, ACitusTargetTakesTheWholeStatementWithoutOnConflict)
{
    AppendSpec s = events();
    s.arbiter = true;
    s.stable_source = true;
    EXPECT_TRUE(pg_idempotent::core::fast_append_applies(s));
    EXPECT_TRUE(has(build_append_sql(s), "ON CONFLICT"));
    s.citus = true;
    EXPECT_FALSE(pg_idempotent::core::fast_append_applies(s));
    EXPECT_FALSE(has(build_append_sql(s), "ON CONFLICT"));
    EXPECT_FALSE(has(build_append_sql(s), "_count_conflict"));
}

}  // namespace
