// build_snapshot_sql: the steps of idem.snapshot's statement and what each
// option adds. The server-side behaviour is in sql/snapshot.sql,
// test/specs/snapshot_concurrent.spec and test/t/035_crash_every_family.pl.
#include <gtest/gtest.h>

#include <regex>
#include <string>

#include "snapshot/snapshot_sql.hpp"

namespace {

using pg_idempotent::core::AssignmentTarget;
using pg_idempotent::core::build_snapshot_sql;
using pg_idempotent::core::SnapshotSpec;

AssignmentTarget col(const std::string& name, const std::string& type = "pg_catalog.int8")
{
    return AssignmentTarget{name, type, "'" + name + "'"};
}

// Customers keyed by id, tier compared.
SnapshotSpec customers()
{
    SnapshotSpec s;
    s.target = "public.hist";
    s.source_sql = "SELECT id, tier FROM public.customers";
    s.keys = {col("id")};
    s.key_eq = {"OPERATOR(pg_catalog.=)"};
    s.insert_columns = {col("id"), col("tier", "pg_catalog.text")};
    s.compare_columns = {col("tier", "pg_catalog.text")};
    s.valid_from = "valid_from";
    s.valid_to = "valid_to";
    s.validity_type = "pg_catalog.timestamptz";
    return s;
}

bool has(const std::string& sql, const std::string& part)
{
    return sql.find(part) != std::string::npos;
}

TEST(SnapshotSql, EveryStepInOrder)
{
    const std::string sql = build_snapshot_sql(customers());
    std::size_t at = 0;
    for (const char* cte :
         {"run", "src", "stats", "tops", "dups", "checks", "dedup", "plan", "gone", "checks2", "tally", "cls", "ins"}) {
        const std::size_t next = sql.find(std::string(cte) + " AS ", at);
        ASSERT_NE(next, std::string::npos) << cte;
        at = next;
    }
}

// The new current versions are inserted only after the old ones are
// closed: the INSERT's rows wait for the UPDATE's count.
TEST(SnapshotSql, NewVersionsOpenAfterTheOldOnesClose)
{
    const std::string sql = build_snapshot_sql(customers());
    const std::size_t ins = sql.find("ins AS (INSERT");
    ASSERT_NE(ins, std::string::npos);
    EXPECT_NE(sql.find("(SELECT pg_catalog.count(*) FROM cls) OPERATOR(pg_catalog.>=) 0", ins), std::string::npos);
}

// Every comparison the statement writes names its operator's schema: no
// bare "=", "<" or ">" between two operands (caller SQL excepted).
TEST(SnapshotSql, EveryOperatorQualified)
{
    SnapshotSpec s = customers();
    s.invalidate = true;
    s.deleted_column = "is_deleted";
    s.current_value = true;
    s.updated_at.columns = {col("updated", "pg_catalog.timestamptz")};
    s.updated_at.lt = "OPERATOR(pg_catalog.<)";
    s.updated_at.eq = "OPERATOR(pg_catalog.=)";
    s.source_sql = "SELECT 1";
    // UPDATE ... SET col = value is an assignment, not an operator.
    const std::string sql = std::regex_replace(build_snapshot_sql(s), std::regex(R"(SET \S+ = )"), "SET ");
    EXPECT_FALSE(std::regex_search(sql, std::regex(R"([^(<>!=]\s(=|<|>|<=|>=|<>)\s)"))) << sql;
}

TEST(SnapshotSql, UnchangedKeysNeverReachTheWrites)
{
    const std::string sql = build_snapshot_sql(customers());
    EXPECT_TRUE(has(sql, "\"idem$action\" OPERATOR(pg_catalog.<>) 4)"));
    EXPECT_TRUE(has(sql, "WHEN pg_catalog.record_image_eq(ROW(CAST(d.tier AS pg_catalog.text)), ROW(c.tier)) THEN 4"));
}

TEST(SnapshotSql, CurrentVersionsEndAtNullOrAtTheGivenValue)
{
    SnapshotSpec s = customers();
    EXPECT_TRUE(has(build_snapshot_sql(s), "t.valid_to IS NULL"));
    EXPECT_FALSE(has(build_snapshot_sql(s), "$3"));
    s.current_value = true;
    const std::string sql = build_snapshot_sql(s);
    EXPECT_TRUE(has(sql, "t.valid_to OPERATOR(pg_catalog.=) CAST($3::pg_catalog.text AS pg_catalog.timestamptz)"));
    EXPECT_FALSE(has(sql, "valid_to IS NULL"));
}

// Versions written by hand under the other convention are looked for
// among the history's rows only when the run opens a version for a new key:
// no index holds them, so that look is a scan of the whole history, which a
// replay (no new key) must not pay.
TEST(SnapshotSql, OtherConventionLookedForOnlyForNewKeys)
{
    SnapshotSpec s = customers();
    EXPECT_FALSE(has(build_snapshot_sql(s), "h.valid_to"));
    s.other_mark = SnapshotSpec::OtherMark::kFarFuture;
    const std::string sql = build_snapshot_sql(s);
    const std::string gate =
        "WHEN EXISTS (SELECT FROM plan p WHERE p.\"idem$action\" OPERATOR(pg_catalog.=) 1) AND "
        "EXISTS (SELECT FROM plan p JOIN public.hist h ON ";
    ASSERT_TRUE(has(sql, gate)) << sql;
    EXPECT_TRUE(has(sql.substr(sql.find(gate)), "h.valid_to OPERATOR(pg_catalog.>=) CAST('9999-01-01' AS "));
    s.other_mark = SnapshotSpec::OtherMark::kNull;
    EXPECT_TRUE(has(build_snapshot_sql(s), gate + "h.id OPERATOR(pg_catalog.=) p.id WHERE p.\"idem$action\" "
                                                  "OPERATOR(pg_catalog.=) 1 AND h.valid_to IS NULL"));
}

TEST(SnapshotSql, HardDeletes)
{
    SnapshotSpec s = customers();
    EXPECT_TRUE(has(build_snapshot_sql(s), "WHERE false)"));  // ignore: gone is empty
    s.invalidate = true;
    EXPECT_TRUE(has(build_snapshot_sql(s), "NOT EXISTS (SELECT FROM dedup d WHERE c.id OPERATOR(pg_catalog.=) d.id)"));
    EXPECT_FALSE(has(build_snapshot_sql(s), ", true FROM gone g"));  // no marker without new_record
    s.deleted_column = "is_deleted";
    const std::string sql = build_snapshot_sql(s);
    EXPECT_TRUE(has(sql, "c.is_deleted IS NOT TRUE"));          // a marker is not gone again
    EXPECT_TRUE(has(sql, "WHEN c.is_deleted IS TRUE THEN 2"));  // a key back after its marker
    EXPECT_TRUE(has(sql, "UNION ALL SELECT g.id, g.tier"));
}

TEST(SnapshotSql, TimestampStrategy)
{
    SnapshotSpec s = customers();
    s.updated_at.columns = {col("updated", "pg_catalog.timestamptz")};
    s.updated_at.lt = "OPERATOR(pg_catalog.<)";
    s.updated_at.eq = "OPERATOR(pg_catalog.=)";
    s.insert_columns.push_back(s.updated_at.columns[0]);
    const std::string sql = build_snapshot_sql(s);
    EXPECT_TRUE(has(sql, "WHEN d.updated OPERATOR(pg_catalog.<) c.updated THEN 5"));
    EXPECT_TRUE(has(sql, "ORDER BY id, updated DESC"));  // the newest duplicate wins
    EXPECT_TRUE(has(sql, "null_updated_at"));
}

}  // namespace

namespace {

// Pruned to the batch's partitions: each row planned is checked in plan,
// not in src, which then holds nothing volatile and is read again by each
// step as its marking says (PostgreSQL copies a volatile CTE).
TEST(SnapshotSql, APrunedSourceIsCheckedWhereItIsPlanned)
{
    SnapshotSpec s = customers();
    s.stable_source = true;
    s.insert_columns.push_back(col("day", "pg_catalog.date"));
    s.prune =
        pg_idempotent::core::PartitionPrune{col("day", "pg_catalog.date"), "OPERATOR(pg_catalog.=)", false, 3, "ID901"};
    const std::string sql = build_snapshot_sql(s);
    const std::size_t src = sql.find("src AS NOT MATERIALIZED (");
    const std::size_t plan = sql.find("plan AS MATERIALIZED (");
    const std::size_t check = sql.find("idem._raise('ID901'");
    ASSERT_NE(src, std::string::npos) << sql;
    ASSERT_NE(plan, std::string::npos) << sql;
    EXPECT_GT(check, plan) << sql;
    EXPECT_EQ(sql.find("idem._raise('ID901'", check + 1), std::string::npos) << sql;
    EXPECT_TRUE(has(sql, "\n WHERE (CAST(d.day AS pg_catalog.date) IS NULL OR ")) << sql;
}

}  // namespace
