// build_merge_sql's whole output for the main option combinations, byte for
// byte. Each golden file in test/unit/merge_sql_golden/ is a statement the
// server ran in the regress suite (sql/merge_*.sql, captured from the log of
// `SUITES=regress bash test/run_all.sh` with auto_explain's nested statements
// on), and each spec here is the one idem.merge built for that call: the
// refactoring of merge_sql.cpp must leave every one of them unchanged.
// A golden file ends with one new line the statement does not have.
// MERGE_SQL_GOLDEN_UPDATE=1 rewrites them from the current builder, for a
// change that means to change the statement: read `git diff` before
// committing them.
#include <gtest/gtest.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "merge/merge_sql.hpp"

namespace {

using pg_idempotent::core::build_merge_sql;
using pg_idempotent::core::MergeColumn;
using pg_idempotent::core::MergeSpec;

const char* const kEq = "OPERATOR(pg_catalog.=)";
const char* const kLt = "OPERATOR(pg_catalog.<)";

// The test binary runs from the repository root (test/unit/run.sh).
std::string golden(const std::string& name)
{
    const std::string path = "test/unit/merge_sql_golden/" + name + ".sql";
    std::ifstream in(path, std::ios::binary);
    EXPECT_TRUE(in.good()) << "cannot read " << path;
    std::stringstream text;
    text << in.rdbuf();
    std::string s = text.str();
    if (!s.empty() && s.back() == '\n')
        s.pop_back();
    return s;
}

// A column as pg::assignment_target describes it: quoted name, qualified
// type, the name as a literal.
MergeColumn col(const std::string& name, const std::string& type, const std::string& literal = {})
{
    return MergeColumn{name, type, literal.empty() ? "'" + name + "'" : literal};
}

// Target, source, one key (the first column); every other column updated.
MergeSpec spec_of(const std::string& target, const std::string& source_sql, const std::vector<MergeColumn>& cols,
                  std::size_t key_count = 1)
{
    MergeSpec s;
    s.target = target;
    s.source_sql = source_sql;
    s.insert_columns = cols;
    s.hash_keys = true;  // as merge.cpp sets it for keys of hashable types
    for (std::size_t i = 0; i < cols.size(); ++i) {
        if (i < key_count) {
            s.keys.push_back(cols[i]);
            s.key_eq.push_back(kEq);
        } else {
            s.update_columns.push_back(cols[i]);
        }
    }
    return s;
}

// sql/merge_basic.sql: m_target, m_source.
MergeSpec m_target()
{
    return spec_of("public.m_target", "SELECT id, name, amount, score, doc FROM public.m_source",
                   {col("id", "integer"), col("name", "pg_catalog.text"), col("amount", "numeric"),
                    col("score", "double precision"), col("doc", "pg_catalog.json")});
}

// sql/merge_basic.sql: a source with a unique NOT NULL key (no checks).
MergeSpec m_pk_target()
{
    MergeSpec s = spec_of("public.m_pk_target", "SELECT id, name FROM public.m_pk_source",
                          {col("id", "integer"), col("name", "pg_catalog.text")});
    s.check_nulls = false;
    s.check_duplicates = false;
    s.hash_keys = false;
    return s;
}

void expect_golden(const std::string& name, const MergeSpec& s)
{
    const std::string got = build_merge_sql(s);
    if (std::getenv("MERGE_SQL_GOLDEN_UPDATE") != nullptr) {
        std::ofstream("test/unit/merge_sql_golden/" + name + ".sql", std::ios::binary) << got << '\n';
        return;
    }
    const std::string want = golden(name);
    EXPECT_EQ(got, want) << "golden " << name;
}

TEST(MergeSqlGolden, PlainMergeIntoAHostileTargetName)
{
    expect_golden("plain_hostile_target", spec_of("public.\"H Odd \"\"name\"\"; x\"", "SELECT 1 AS id, 'a' AS v",
                                                  {col("id", "integer"), col("v", "pg_catalog.text")}));
}

TEST(MergeSqlGolden, CompositeKey)
{
    expect_golden("composite_key", spec_of("public.m_composite",
                                           "SELECT '2024-07-07'::date AS day, 'A' AS store,\n"
                                           "  '00000000-0000-0000-0000-000000000001'::uuid AS sku, 1 AS qty UNION ALL\n"
                                           "  SELECT '2024-07-07', 'B', '00000000-0000-0000-0000-000000000001', 2",
                                           {col("day", "pg_catalog.date"), col("store", "pg_catalog.text"),
                                            col("sku", "pg_catalog.uuid"), col("qty", "integer")},
                                           3));
}

TEST(MergeSqlGolden, KeyOfAnExtensionTypeUsesItsOwnOperator)
{
    MergeSpec s = spec_of("public.m_ci", "SELECT 'ann@example.COM'::citext AS email, 'Ann B' AS name",
                          {col("email", "public.citext"), col("name", "pg_catalog.text")});
    s.key_eq = {"OPERATOR(public.=)"};
    expect_golden("citext_key", s);
}

TEST(MergeSqlGolden, PartitionedTarget)
{
    MergeSpec s = spec_of("public.m_sales",
                          "SELECT * FROM (VALUES ('2024-07-07'::date, 1, 10.0), ('2024-07-08'::date, 1, 20.0)) v(day, "
                          "store, revenue)",
                          {col("day", "pg_catalog.date"), col("store", "integer"), col("revenue", "numeric")}, 2);
    s.partitioned = true;
    expect_golden("partitioned", s);
}

TEST(MergeSqlGolden, DeleteMissingWithScope)
{
    MergeSpec s = spec_of("public.m_snap", "SELECT 1 AS id, 'eu' AS region, 1 AS v",
                          {col("id", "integer"), col("region", "pg_catalog.text"), col("v", "integer")});
    s.delete_missing = true;
    s.delete_scope = "region = 'eu'";
    expect_golden("delete_missing_scope", s);
}

TEST(MergeSqlGolden, DeleteMissing)
{
    MergeSpec s = spec_of("public.m_snap", "SELECT 3 AS id, 'us' AS region, 30 AS v",
                          {col("id", "integer"), col("region", "pg_catalog.text"), col("v", "integer")});
    s.delete_missing = true;
    expect_golden("delete_missing", s);
}

TEST(MergeSqlGolden, DeleteMissingAllowEmpty)
{
    MergeSpec s = spec_of("public.m_snap", "SELECT 1 AS id, 'x' AS region, 1 AS v WHERE false",
                          {col("id", "integer"), col("region", "pg_catalog.text"), col("v", "integer")});
    s.delete_missing = true;
    s.allow_empty = true;
    expect_golden("delete_missing_allow_empty", s);
}

TEST(MergeSqlGolden, DeleteColumnWithoutVersion)
{
    MergeSpec s = spec_of("public.v_target", "SELECT 4 AS id, 0 AS v, '' AS payload, true AS gone",
                          {col("id", "integer"), col("v", "bigint"), col("payload", "pg_catalog.text")});
    s.delete_column = "gone";
    expect_golden("delete_column", s);
}

TEST(MergeSqlGolden, SourceUniqueOnTheKey)
{
    expect_golden("unique_source", m_pk_target());
}

TEST(MergeSqlGolden, SourceUniqueOnTheKeyDryRun)
{
    MergeSpec s = m_pk_target();
    s.dry_run = true;
    expect_golden("unique_source_dry_run", s);
}

// A key type without a hash operator family (money), or an extension still
// at 0.7.0 (no idem._repeat_hashes): tops groups every row.
TEST(MergeSqlGolden, KeyWithoutAHashFunction)
{
    MergeSpec s = spec_of("public.e_money", "SELECT 1.5::money AS m, 'x' AS v",
                          {col("m", "integer"), col("v", "pg_catalog.text")});
    s.keys[0].type = "money";
    s.insert_columns[0].type = "money";
    s.hash_keys = false;
    expect_golden("key_without_hash", s);
}

TEST(MergeSqlGolden, DryRun)
{
    MergeSpec s = m_target();
    s.dry_run = true;
    expect_golden("dry_run", s);
}

TEST(MergeSqlGolden, ColumnsSubset)
{
    // columns => '{a}': b is inserted, never updated.
    MergeSpec s = spec_of("public.e_target", "SELECT 1 AS id, 'changed' AS a, 100 AS b",
                          {col("id", "integer"), col("a", "pg_catalog.text"), col("b", "integer")});
    s.update_columns.pop_back();
    expect_golden("columns_subset", s);
}

TEST(MergeSqlGolden, OverrideIdentity)
{
    // A GENERATED ALWAYS identity column is inserted, never updated.
    MergeSpec s = spec_of("public.e_target", "SELECT 4 AS id, 'four' AS a, 99 AS ident",
                          {col("id", "integer"), col("a", "pg_catalog.text"), col("ident", "integer")});
    s.update_columns.pop_back();
    s.override_identity = true;
    expect_golden("override_identity", s);
}

TEST(MergeSqlGolden, DomainOverVarcharKeyAndColumn)
{
    MergeColumn k = col("k", "public.e_short");
    k.length_coercion = "pg_catalog.\"varchar\"";
    k.base_type = "pg_catalog.\"varchar\"";
    k.typmod = 7;
    k.domain = true;
    MergeColumn v = k;
    v.name = "v";
    v.name_literal = "'v'";
    expect_golden("domain_length_coercion", spec_of("public.e_len_dom", "SELECT 'abc' AS k, 'xy ' AS v", {k, v}));
}

TEST(MergeSqlGolden, Versioned)
{
    MergeSpec s = spec_of("public.v_target",
                          "SELECT * FROM (VALUES (1, 9, 'one@9'), (2, 10, 'two@10'), (3, 11, 'three@11'), (4, 1, "
                          "'four@1')) s(id, v, payload)",
                          {col("id", "integer"), col("v", "bigint"), col("payload", "pg_catalog.text")});
    s.version.columns = {col("v", "bigint")};
    s.version.lt = kLt;
    s.version.eq = kEq;
    s.version_types = {"bigint"};
    expect_golden("versioned", s);
}

TEST(MergeSqlGolden, HostileNamesVersionedWithDeletesAndTombstones)
{
    // sql/merge_security.sql: quotes, spaces, a keyword and a semicolon in
    // every name; version_column and delete_column.
    const MergeColumn key = col("\"Key \"\"K\"\"\"", "integer", "'Key \"K\"'");
    const MergeColumn version = col("\"v;1\"", "timestamp with time zone", "'v;1'");
    MergeSpec s = spec_of("\"My Schema\".\"Target; DROP TABLE s_target; --\"",
                          "SELECT \"Key \"\"K\"\"\", \"Value Col\", \"SELECT\", \"v;1\", \"Del?\" FROM \"My "
                          "Schema\".\"Src \"\"1\"\"\"",
                          {key, col("\"Value Col\"", "pg_catalog.text", "'Value Col'"),
                           col("\"SELECT\"", "integer", "'SELECT'"), version});
    s.version.columns = {version};
    s.version.lt = kLt;
    s.version.eq = kEq;
    s.version_types = {"timestamp with time zone"};
    s.delete_column = "\"Del?\"";
    s.tombstones = true;
    expect_golden("hostile_versioned_tombstones", s);
}

}  // namespace
