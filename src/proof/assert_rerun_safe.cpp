#include "proof/assert_rerun_safe.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <set>

#include "common/effect_log.hpp"
#include "core/row_text.hpp"
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

// A table the job writes: named by OID (tables) or by name (created_tables:
// it may not exist before run 1). rel and select once it exists.
struct Watched {
    std::string name;
    bool by_name = false;
    std::optional<pg::Relation> rel;
    std::string select;  // SELECT <kept columns> FROM <table>
};

struct Checksum {
    int run;
    std::size_t table;
    std::string text;  // v1:<count>:<digest>, or "absent"
    std::uint64_t count;
    std::uint32_t oid;  // 0 when absent
};

constexpr const char* kAbsent = "absent";

// rel and select for the relation oid, without the excluded columns.
void resolve(Watched& w, std::uint32_t oid, const std::vector<std::string>& exclude)
{
    w.rel = pg::describe_relation(oid);
    if (std::string("rpvmf").find(w.rel->kind) == std::string::npos)
        throw UserError(sqlstate::kWrongObjectType, "\"" + w.rel->display + "\" is not a table or view", {},
                        "Watch tables, views or materialized views: what the job writes.");
    std::vector<std::string> cols;
    for (const auto& c : w.rel->columns)
        if (std::find(exclude.begin(), exclude.end(), c.name) == exclude.end())
            cols.push_back(pg::quote_ident(c.name));
    w.select = core::select_columns(cols, w.rel->qualified);
}

std::vector<Watched> watch(const std::vector<std::uint32_t>& tables, const std::vector<std::string>& created,
                           const std::vector<std::string>& exclude)
{
    std::vector<Watched> out;
    std::set<std::uint32_t> named;
    for (const auto oid : tables) {
        // A table named twice is one table: checksummed once per run.
        if (!named.insert(oid).second)
            continue;
        Watched w;
        resolve(w, oid, exclude);
        w.name = w.rel->display;
        out.push_back(std::move(w));
    }
    for (const auto& name : created) {
        Watched w;
        w.name = name;
        w.by_name = true;
        out.push_back(std::move(w));
    }
    return out;
}

// The relation a name means now (as the caller's search_path resolves it).
std::uint32_t relation_named(pg::SpiSession& spi, const std::string& name)
{
    auto r = spi.query("SELECT pg_catalog.to_regclass($1)::pg_catalog.oid::pg_catalog.text", {Param::of_text(name)});
    return r.rows.at(0).at(0) ? static_cast<std::uint32_t>(std::stoul(*r.rows[0][0])) : 0;
}

// The table's state now: its checksum, or "absent" (a created_tables name
// that does not exist).
Checksum state_of(pg::SpiSession& spi, int run, std::size_t t, Watched& w, const std::vector<std::string>& exclude)
{
    if (w.by_name) {
        const std::uint32_t oid = relation_named(spi, w.name);
        if (oid == 0)
            return Checksum{run, t, kAbsent, 0, 0};
        if (!w.rel || w.rel->oid != oid)
            resolve(w, oid, exclude);
    }
    const core::MultisetDigest d = pg::digest_statement_rows(spi, w.select);
    return Checksum{run, t, d.text(), d.count(), w.rel->oid};
}

// An excluded column applies to the tables that have it; one that no table
// has is a typo, and a typo must not silently pass.
void check_excluded(const std::vector<Watched>& watched, const std::vector<std::string>& exclude)
{
    for (const auto& e : exclude) {
        bool used = false;
        for (const auto& w : watched)
            if (w.rel)
                for (const auto& c : w.rel->columns)
                    used = used || c.name == e;
        if (!used)
            throw UserError(sqlstate::kUndefinedColumn,
                            "exclude_columns names \"" + e + "\", which none of the tables has", {},
                            "Name only columns of the watched tables in exclude_columns.");
    }
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
        auto r = spi.query("SELECT " + core::row_text_in_column_order("s") + " FROM (" + w.select +
                               ") s WHERE idem._row_digest(s) OPERATOR(pg_catalog.=) $1::pg_catalog.uuid LIMIT 1",
                           {Param::of_text(digest)});
        if (!r.rows.empty())
            detail += "\n+ " + r.rows[0][0].value_or("");
    }
    return detail;
}

}  // namespace

namespace {

UserError not_rerun_safe(int run, const Watched& w, const std::string& first, const std::string& now,
                         const std::string& detail)
{
    return UserError(sqlstate::kNotRerunSafe,
                     "job is not rerun-safe: run " + std::to_string(run) + " " +
                         (now == kAbsent     ? "dropped"
                          : first == kAbsent ? "created"
                                             : "changed") +
                         " \"" + w.name + "\"",
                     "Run 1 left " + first + ", run " + std::to_string(run) + " left " + now + "." +
                         (detail.empty() ? "" : "\n" + detail),
                     "Make the job overwrite or merge its unit of work instead of appending; exclude "
                     "columns that legitimately change (exclude_columns), such as load timestamps.");
}

// A rerun must record no effect the first run did not (the outbox is state
// too): every effect it records is new, since one recorded again is not.
UserError new_effects(int run, std::uint64_t count)
{
    const RecordedEffects last = recorded_effects();
    return UserError(sqlstate::kNotRerunSafe,
                     "job is not rerun-safe: run " + std::to_string(run) + " recorded " + std::to_string(count) +
                         " new effect" + (count == 1 ? "" : "s"),
                     "The last: key \"" + last.last_key + "\" in scope \"" + last.last_scope +
                         "\". A rerun records the same effects under the same keys, which records nothing new.",
                     "Key each effect by what it is for (an order id, an event id), not by the run or the time.");
}

UserError nothing_proven(const std::vector<Watched>& watched, const std::vector<Checksum>& after)
{
    std::string states;
    for (std::size_t t = 0; t < watched.size(); ++t)
        states += std::string(t ? ", " : "") + watched[t].name + " " + after[t].text;
    return UserError(sqlstate::kNothingProven, "job changed none of the tables in run 1: nothing was proven",
                     "Before and after run 1: " + states + ".",
                     "Check that the job writes the tables you passed (in this database); for a job with no new "
                     "input, pass allow_unchanged => true.");
}

}  // namespace

void assert_rerun_safe(const pg::ResultSet& out, const std::string& job, const std::vector<std::uint32_t>& tables,
                       std::int32_t runs, const std::vector<std::string>& exclude_columns, bool rollback,
                       bool allow_unchanged, const std::vector<std::string>& created_tables)
{
    if (tables.empty() && created_tables.empty())
        throw UserError(sqlstate::kInvalidParameterValue, "tables must name at least one table", {},
                        "Pass the tables the job writes, for example tables => '{daily_sales}' (or, for tables the "
                        "job creates, created_tables => '{daily_sales}').");
    if (runs < 2)
        throw UserError(sqlstate::kInvalidParameterValue, "runs must be at least 2",
                        "Rerun safety compares every run after the first with the first.",
                        "Pass runs => 2 or more, or leave it out.");
    if (job.find_first_not_of(" \t\r\n;") == std::string::npos)
        throw UserError(sqlstate::kInvalidParameterValue, "job must not be empty", {}, "Pass the job's SQL.");

    pg::SpiSession spi;
    std::vector<Watched> watched = watch(tables, created_tables, exclude_columns);
    if (created_tables.empty())
        check_excluded(watched, exclude_columns);
    std::vector<Checksum> results;

    auto body = [&] {
        std::vector<Checksum> before;
        for (std::size_t t = 0; t < watched.size(); ++t)
            before.push_back(state_of(spi, 0, t, watched[t], exclude_columns));
        std::vector<std::map<std::string, std::int64_t>> first_counts;
        for (int run = 1; run <= runs; ++run) {
            // The job: any SQL (CALL, DO, statement lists), as the caller.
            const std::uint64_t effects_before = recorded_effects().count;
            spi.execute(job);
            if (run > 1 && recorded_effects().count > effects_before)
                throw new_effects(run, recorded_effects().count - effects_before);
            for (std::size_t t = 0; t < watched.size(); ++t) {
                const Checksum c = state_of(spi, run, t, watched[t], exclude_columns);
                results.push_back(c);
                if (run == 1) {
                    first_counts.push_back(c.oid != 0 ? row_counts(spi, watched[t])
                                                      : decltype(first_counts)::value_type());
                    continue;
                }
                const std::string& first = results[t].text;  // run 1's, same table
                if (c.text == first)
                    continue;
                const std::string detail =
                    c.oid != 0 && first != kAbsent
                        ? describe_difference(spi, watched[t], first_counts[t], row_counts(spi, watched[t]))
                        : std::string();
                throw not_rerun_safe(run, watched[t], first, c.text, detail);
            }
            if (run != 1)
                continue;
            check_excluded(watched, exclude_columns);
            bool changed = false;
            for (std::size_t t = 0; t < watched.size(); ++t)
                changed = changed || results[t].text != before[t].text;
            if (!changed && !allow_unchanged)
                throw nothing_proven(watched, before);
        }
    };
    if (rollback)
        pg::in_rolled_back_subtransaction(body);
    else
        body();

    std::vector<pg::Row> rows;
    for (const auto& c : results)
        rows.push_back({std::to_string(c.run),
                        c.oid != 0 ? std::optional<std::string>(std::to_string(c.oid)) : std::nullopt,
                        std::to_string(c.count), c.text});
    pg::return_text_rows(out, rows);
    spi.finish();
}

}  // namespace pg_idempotent
