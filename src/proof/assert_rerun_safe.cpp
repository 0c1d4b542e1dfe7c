#include "proof/assert_rerun_safe.hpp"

#include <map>
#include <set>

#include "core/sql_text.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/spi.hpp"
#include "pg/transactions.hpp"
#include "pg_native/statement_digest.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

// The extension's own class "ID": the job changed the tables when rerun.
constexpr std::size_t kSampleRows = 5;

struct Watched {
    pg::Relation rel;
    std::string select;  // SELECT <kept columns> FROM <table>
};

struct Checksum {
    int run;
    std::size_t table;
    std::string text;  // v1:<count>:<digest>
    std::uint64_t count;
};

std::vector<Watched> describe_tables(const std::vector<std::uint32_t>& tables, const std::vector<std::string>& exclude)
{
    std::vector<Watched> out;
    std::set<std::string> used;
    std::set<std::uint32_t> named;
    for (const auto oid : tables) {
        // A table named twice is one table: checksummed once per run.
        if (!named.insert(oid).second)
            continue;
        Watched w{pg::describe_relation(oid), {}};
        if (std::string("rpvmf").find(w.rel.kind) == std::string::npos)
            throw UserError(sqlstate::kWrongObjectType, "\"" + w.rel.display + "\" is not a table or view", {},
                            "Watch tables, views or materialized views: what the job writes.");
        std::vector<std::string> cols;
        for (const auto& c : w.rel.columns) {
            bool skip = false;
            for (const auto& e : exclude)
                if (e == c.name) {
                    skip = true;
                    used.insert(e);
                }
            if (!skip)
                cols.push_back(pg::quote_ident(c.name));
        }
        w.select = core::select_columns(cols, w.rel.qualified);
        out.push_back(std::move(w));
    }
    // An excluded column applies to the tables that have it; one that no
    // table has is a typo, and a typo must not silently pass.
    for (const auto& e : exclude)
        if (used.count(e) == 0)
            throw UserError(sqlstate::kUndefinedColumn,
                            "exclude_columns names \"" + e + "\", which none of the tables has", {},
                            "Name only columns of the watched tables in exclude_columns.");
    return out;
}

// Per-row digest counts of a table now (the multiset the checksum sums).
std::map<std::string, std::int64_t> row_counts(pg::SpiSession& spi, const Watched& w)
{
    std::map<std::string, std::int64_t> counts;
    auto r = spi.query("SELECT idem._row_digest(s)::pg_catalog.text, pg_catalog.count(*)::pg_catalog.text FROM (" +
                       w.select + ") s GROUP BY 1");
    for (const auto& row : r.rows)
        counts[row[0].value_or("")] = std::stoll(row[1].value_or("0"));
    return counts;
}

// Up to five rows the run has more copies of than run 1 (their content) and
// how many copies of run 1's rows it lacks (deleted rows cannot be shown:
// only their digests were kept).
std::string describe_difference(pg::SpiSession& spi, const Watched& w, const std::map<std::string, std::int64_t>& first,
                                const std::map<std::string, std::int64_t>& now)
{
    std::vector<std::string> extra;
    std::int64_t extra_copies = 0;
    std::int64_t missing_copies = 0;
    for (const auto& [digest, n] : now) {
        auto it = first.find(digest);
        const std::int64_t before = it == first.end() ? 0 : it->second;
        if (n > before) {
            extra_copies += n - before;
            if (extra.size() < kSampleRows)
                extra.push_back(digest);
        }
    }
    for (const auto& [digest, n] : first) {
        auto it = now.find(digest);
        const std::int64_t after = it == now.end() ? 0 : it->second;
        if (n > after)
            missing_copies += n - after;
    }
    std::string detail = "Rows of this run not in run 1: " + std::to_string(extra_copies) +
                         "; rows of run 1 no longer there: " + std::to_string(missing_copies) + ".";
    for (const auto& digest : extra) {
        auto r = spi.query("SELECT pg_catalog.to_jsonb(s)::pg_catalog.text FROM (" + w.select +
                               ") s WHERE idem._row_digest(s) OPERATOR(pg_catalog.=) $1::pg_catalog.uuid LIMIT 1",
                           {Param::of_text(digest)});
        if (!r.rows.empty())
            detail += "\n+ " + r.rows[0][0].value_or("");
    }
    return detail;
}

}  // namespace

void assert_rerun_safe(const pg::ResultSet& out, const std::string& job, const std::vector<std::uint32_t>& tables,
                       std::int32_t runs, const std::vector<std::string>& exclude_columns, bool rollback)
{
    if (tables.empty())
        throw UserError(sqlstate::kInvalidParameterValue, "tables must name at least one table", {},
                        "Pass the tables the job writes, for example tables => '{daily_sales}'.");
    if (runs < 2)
        throw UserError(sqlstate::kInvalidParameterValue, "runs must be at least 2",
                        "Rerun safety compares every run after the first with the first.",
                        "Pass runs => 2 or more, or leave it out.");
    if (job.find_first_not_of(" \t\r\n;") == std::string::npos)
        throw UserError(sqlstate::kInvalidParameterValue, "job must not be empty", {}, "Pass the job's SQL.");

    pg::SpiSession spi;
    const std::vector<Watched> watched = describe_tables(tables, exclude_columns);
    std::vector<Checksum> results;

    auto body = [&] {
        std::vector<std::map<std::string, std::int64_t>> first_counts;
        for (int run = 1; run <= runs; ++run) {
            // The job: any SQL (CALL, DO, statement lists), as the caller.
            spi.execute(job);
            for (std::size_t t = 0; t < watched.size(); ++t) {
                const core::MultisetDigest d = pg::digest_statement_rows(spi, watched[t].select);
                results.push_back(Checksum{run, t, d.text(), d.count()});
                if (run == 1) {
                    first_counts.push_back(row_counts(spi, watched[t]));
                    continue;
                }
                const std::string& first = results[t].text;  // run 1's, same table
                if (d.text() == first)
                    continue;
                const std::string detail =
                    describe_difference(spi, watched[t], first_counts[t], row_counts(spi, watched[t]));
                throw UserError(
                    sqlstate::kNotRerunSafe,
                    "job is not rerun-safe: run " + std::to_string(run) + " changed \"" + watched[t].rel.display + "\"",
                    "Run 1 left " + first + ", run " + std::to_string(run) + " left " + d.text() + ".\n" + detail,
                    "Make the job overwrite or merge its unit of work instead of appending; exclude "
                    "columns that legitimately change (exclude_columns), such as load timestamps.");
            }
        }
    };
    if (rollback)
        pg::in_rolled_back_subtransaction(body);
    else
        body();

    std::vector<pg::Row> rows;
    for (const auto& c : results)
        rows.push_back(
            {std::to_string(c.run), std::to_string(watched[c.table].rel.oid), std::to_string(c.count), c.text});
    pg::return_text_rows(out, rows);
    spi.finish();
}

}  // namespace pg_idempotent
