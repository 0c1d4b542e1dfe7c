// SQL text helpers: callers pass already-quoted identifiers; these only glue.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/sql_text.hpp"

namespace {

using pg_idempotent::core::as_subquery;
using pg_idempotent::core::columns_beside_sql;
using pg_idempotent::core::digest_aggregate_sql;
using pg_idempotent::core::identifier_with_suffix;
using pg_idempotent::core::index_definition_on;
using pg_idempotent::core::join;
using pg_idempotent::core::positional_columns;
using pg_idempotent::core::retarget_definition;
using pg_idempotent::core::sampled_digest_and_digest_sql;
using pg_idempotent::core::select_columns;

TEST(Join, Empty)
{
    EXPECT_EQ(join({}), "");
}

TEST(Join, One)
{
    EXPECT_EQ(join({"a"}), "a");
}

TEST(Join, ManyWithDefaultSeparator)
{
    EXPECT_EQ(join({"a", "b", "c"}), "a, b, c");
}

TEST(Join, CustomSeparator)
{
    EXPECT_EQ(join({"a", "b", "c"}, " AND "), "a AND b AND c");
    EXPECT_EQ(join({"x", "y"}, ""), "xy");
}

TEST(Join, EmptyPartsKeepTheirSeparators)
{
    EXPECT_EQ(join({"", ""}), ", ");
    EXPECT_EQ(join({"a", "", "c"}), "a, , c");
}

TEST(Join, PartsArePassedThroughUnchanged)
{
    EXPECT_EQ(join({"\"Mixed Case\"", "\"a,b\""}), "\"Mixed Case\", \"a,b\"");
}

TEST(SelectColumns, Several)
{
    EXPECT_EQ(select_columns({"id", "\"Name\""}, "public.t"), "SELECT id, \"Name\" FROM public.t");
}

TEST(SelectColumns, One)
{
    EXPECT_EQ(select_columns({"a"}, "s.x"), "SELECT a FROM s.x");
}

TEST(SelectColumns, ZeroColumns)
{
    // A zero-column table still has rows: PostgreSQL accepts "SELECT FROM x",
    // and the double space is what the code writes.
    EXPECT_EQ(select_columns({}, "x"), "SELECT  FROM x");
}

TEST(DigestAggregateSql, OneArgumentPerColumnRenamedByPosition)
{
    EXPECT_EQ(
        digest_aggregate_sql("SELECT a, a FROM s.t", 2),
        "SELECT idem._digest_agg(idem_rows.c1, idem_rows.c2) FROM (\nSELECT a, a FROM s.t\n) AS idem_rows (c1, c2)");
    EXPECT_EQ(digest_aggregate_sql("VALUES (1)", 1),
              "SELECT idem._digest_agg(idem_rows.c1) FROM (\nVALUES (1)\n) AS idem_rows (c1)");
}

TEST(PositionalColumns, NamesAndQualifier)
{
    EXPECT_EQ(positional_columns(0), std::vector<std::string>{});
    EXPECT_EQ(positional_columns(2), (std::vector<std::string>{"c1", "c2"}));
    EXPECT_EQ(positional_columns(3, "q."), (std::vector<std::string>{"q.c1", "q.c2", "q.c3"}));
}

TEST(SampledDigestAndDigestSql, TheRowsAsReturnedAndTheExpressionsInOnePass)
{
    EXPECT_EQ(
        sampled_digest_and_digest_sql("SELECT a, b FROM t -- c", 2, {"CAST(q.c1 AS int)", "CAST(q.c2 AS text)"}),
        "SELECT idem._digest_sample_agg(q.c1, q.c2), idem._digest_agg(CAST(q.c1 AS int), CAST(q.c2 AS text)) FROM (\n"
        "SELECT a, b FROM t -- c\n) AS q (c1, c2)");
}

TEST(ColumnsBesideSql, TheRowsAsReturnedAndTheExpressionsInOnePass)
{
    EXPECT_EQ(columns_beside_sql("SELECT a, b FROM t -- c", 2, {"CAST(q.c1 AS int)", "CAST(q.c2 AS text)"}),
              "SELECT q.c1, q.c2, CAST(q.c1 AS int), CAST(q.c2 AS text) FROM (\n"
              "SELECT a, b FROM t -- c\n) AS q (c1, c2)");
    EXPECT_EQ(columns_beside_sql("SELECT 1, 1", 2), "SELECT q.c1, q.c2 FROM (\nSELECT 1, 1\n) AS q (c1, c2)");
}

TEST(DigestAggregateSql, ATrailingCommentCannotSwallowTheParenthesis)
{
    const std::string sql = digest_aggregate_sql("SELECT 1 -- one", 1);
    EXPECT_NE(sql.find("-- one\n) AS idem_rows"), std::string::npos);
}

TEST(IdentifierWithSuffix, ShortNamesAreKept)
{
    EXPECT_EQ(identifier_with_suffix("sales_2024_07_07", "__replaced_1"), "sales_2024_07_07__replaced_1");
}

TEST(IdentifierWithSuffix, LongNamesAreCutSoTheSuffixSurvives)
{
    const std::string name(70, 'x');
    const std::string out = identifier_with_suffix(name, "__v12");
    EXPECT_EQ(out.size(), 63u);
    EXPECT_EQ(out.substr(58), "__v12");
}

TEST(IdentifierWithSuffix, NeverSplitsAUtf8Character)
{
    // 31 two-byte characters (62 bytes) + "__v1": cutting at byte 59 would
    // land inside a character, so the cut goes back to byte 58.
    std::string name;
    for (int i = 0; i < 31; ++i)
        name += "\xc3\xa9";  // é
    const std::string out = identifier_with_suffix(name, "__v1");
    EXPECT_EQ(out.size(), 62u);
    EXPECT_EQ(out.substr(0, 58).size() % 2, 0u);
    EXPECT_EQ(out.substr(58), "__v1");
}

TEST(IndexDefinitionOn, ParentIndexBecomesAnUnnamedIndexOnStaging)
{
    EXPECT_EQ(index_definition_on("CREATE UNIQUE INDEX sales_pkey ON ONLY public.sales USING btree (day, id)",
                                  "sales_pkey", "ONLY public.sales", "public.staging"),
              "CREATE UNIQUE INDEX ON public.staging USING btree (day, id)");
    EXPECT_EQ(index_definition_on(
                  "CREATE INDEX \"By Store\" ON ONLY s.\"Sales\" USING btree (lower(store)) WHERE (amount > 0)",
                  "\"By Store\"", "ONLY s.\"Sales\"", "s.stage"),
              "CREATE INDEX ON s.stage USING btree (lower(store)) WHERE (amount > 0)");
}

TEST(IndexDefinitionOn, AnotherShapeIsRefused)
{
    EXPECT_EQ(index_definition_on("CREATE INDEX i ON ONLY public.other USING btree (a)", "i", "ONLY public.sales", "x"),
              "");
    EXPECT_EQ(index_definition_on("CREATE INDEX j ON ONLY public.sales USING btree (a)", "i", "ONLY public.sales", "x"),
              "");
}

TEST(RetargetDefinition, TriggerKeepsEverythingAfterTheRelation)
{
    EXPECT_EQ(retarget_definition("CREATE TRIGGER t BEFORE INSERT ON s.\"P 1\" FOR EACH ROW EXECUTE FUNCTION f()",
                                  "s.\"P 1\"", "s.stage"),
              "CREATE TRIGGER t BEFORE INSERT ON s.stage FOR EACH ROW EXECUTE FUNCTION f()");
}

TEST(RetargetDefinition, AmbiguousOrMissingMarkerIsRefused)
{
    // A trigger named like the marker: two occurrences, so nothing is guessed.
    EXPECT_EQ(retarget_definition("CREATE TRIGGER \"x ON s.t y\" AFTER UPDATE ON s.t FOR EACH ROW EXECUTE FUNCTION f()",
                                  "s.t", "s.u"),
              "");
    EXPECT_EQ(retarget_definition("CREATE INDEX i ON s.other USING btree (a)", "s.t", "s.u"), "");
}

}  // namespace

TEST(AsSubquery, WrapsOnItsOwnLines)
{
    EXPECT_EQ(as_subquery("SELECT true"), "(\nSELECT true\n)");
}

TEST(AsSubquery, DropsTrailingSemicolonsAndSpace)
{
    EXPECT_EQ(as_subquery("SELECT true ;\n ;; \t"), "(\nSELECT true\n)");
}

TEST(AsSubquery, KeepsATrailingCommentOffTheParenthesis)
{
    EXPECT_EQ(as_subquery("SELECT true -- the check"), "(\nSELECT true -- the check\n)");
}

TEST(AsSubquery, LeavesInnerSemicolonsAndLeadingWithAlone)
{
    EXPECT_EQ(as_subquery("WITH c AS (SELECT ';' AS s) SELECT s = ';' FROM c"),
              "(\nWITH c AS (SELECT ';' AS s) SELECT s = ';' FROM c\n)");
    EXPECT_EQ(as_subquery(""), "(\n\n)");
}

TEST(TextArrayLiteral, PlainNamesAsTheyAre)
{
    EXPECT_EQ(pg_idempotent::core::text_array_literal({"_loaded_at", "_file"}), "{_loaded_at,_file}");
    EXPECT_EQ(pg_idempotent::core::text_array_literal({}), "{}");
}

TEST(TextArrayLiteral, QuotesWhatArrayInputWouldReadOtherwise)
{
    EXPECT_EQ(pg_idempotent::core::text_array_literal({"Loaded At", "a,b", "{x}", ""}),
              "{\"Loaded At\",\"a,b\",\"{x}\",\"\"}");
    EXPECT_EQ(pg_idempotent::core::text_array_literal({"NULL", "null", "nullx"}), "{\"NULL\",\"null\",nullx}");
    EXPECT_EQ(pg_idempotent::core::text_array_literal({"say \"hi\"", "back\\slash"}),
              "{\"say \\\"hi\\\"\",\"back\\\\slash\"}");
}
