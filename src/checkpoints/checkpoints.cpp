#include "checkpoints/checkpoints.hpp"

#include <algorithm>
#include <vector>

#include "common/run_history.hpp"
#include "common/scope_grants.hpp"
#include "pg/errors.hpp"
#include "pg/roles.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;
using pg::TypedValue;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

struct JobRow {
    std::optional<std::uint32_t> type;  // fixed at the first value
    std::optional<std::string> watermark;
};

void require_job(const std::string& job)
{
    if (job.empty())
        throw UserError(sqlstate::kInvalidParameterValue, "job must not be empty", {},
                        "Name the job, for example 'nightly_orders'.");
}

// The value as the job keeps it (pg::trusted_state_type: a domain as its
// base type, only types a superuser owns), checked for NULL and an ordering.
TypedValue require_value(TypedValue v, const char* what)
{
    if (v.is_null)
        throw UserError(sqlstate::kNullValueNotAllowed, std::string(what) + " must not be NULL", {},
                        "Pass a value of the job's watermark type, for example '2024-07-07'::date.");
    v.type = pg::trusted_state_type(v.type);
    if (!pg::type_is_ordered(v.type))
        throw UserError(
            sqlstate::kUndefinedFunction,
            std::string(what) + " has type " + pg::type_display(v.type) + ", which has no ordering", {},
            "Watermarks need a type with a default btree ordering (bigint, numeric, date, timestamptz, text, pg_lsn...).");
    return v;
}

JobRow parse_row(const pg::QueryResult& r)
{
    JobRow row;
    if (r.rows.empty())
        return row;
    // A stored value_type may still name a domain (values are kept as their
    // base type now, older rows may not be): compared as its base type.
    if (r.rows[0][0])
        row.type = pg::base_type(static_cast<std::uint32_t>(std::stoul(*r.rows[0][0])));
    row.watermark = r.rows[0][1];
    return row;
}

// Reads the job's row; with lock, creates it if missing and holds it FOR
// UPDATE for the rest of the transaction (runners of one job queue here).
JobRow load_job(pg::SpiSession& spi, const std::string& job, bool lock, bool nowait = false)
{
    JobRow row;
    pg::as_extension_owner([&] {
        if (!lock) {
            row = parse_row(spi.query_saved(
                "SELECT c.value_type::pg_catalog.oid::pg_catalog.text, c.watermark FROM idem.checkpoints c"
                " WHERE c.job OPERATOR(pg_catalog.=) $1",
                {Param::of_text(job)}));
            return;
        }
        auto body = [&] {
            spi.query_saved("INSERT INTO idem.checkpoints (job) VALUES ($1) ON CONFLICT (job) DO NOTHING",
                            {Param::of_text(job)});
            row = parse_row(spi.query_saved(
                std::string("SELECT c.value_type::pg_catalog.oid::pg_catalog.text, c.watermark FROM idem.checkpoints c"
                            " WHERE c.job OPERATOR(pg_catalog.=) $1 FOR UPDATE") +
                    (nowait ? " NOWAIT" : ""),
                {Param::of_text(job)}));
        };
        if (!nowait) {
            body();
            return;
        }
        try {
            pg::with_lock_timeout("1ms", body);
        } catch (pg::PgError& e) {
            if (pg::error_sqlstate(e) != sqlstate::kLockNotAvailable)
                throw;
            throw UserError(sqlstate::kLockNotAvailable, "job \"" + job + "\" is locked by another runner",
                            "Another transaction holds the job (lock_job, advance or run_once).",
                            "Retry later, or call idem.lock_job with wait => true to wait.");
        }
    });
    return row;
}

void check_type(const std::string& job, const JobRow& row, std::uint32_t type)
{
    if (row.type && *row.type != type) {
        throw UserError(sqlstate::kDatatypeMismatch,
                        "job \"" + job + "\" keeps watermarks of type " + pg::type_display(*row.type) + ", not " +
                            pg::type_display(type),
                        "A job's type is fixed by its first value.",
                        "Cast the value to " + pg::type_display(*row.type) + ".");
    }
}

void store(pg::SpiSession& spi, const std::string& job, const TypedValue& value)
{
    const std::string text = pg::canonical_text(value);
    pg::as_extension_owner([&] {
        spi.query_saved(
            "UPDATE idem.checkpoints c SET value_type = $2::pg_catalog.oid::pg_catalog.regtype,"
            " watermark = $3, updated_at = pg_catalog.now() WHERE c.job OPERATOR(pg_catalog.=) $1",
            {Param::of_text(job), Param::of_oid(value.type), Param::of_text(text)});
    });
}

// Opens a job for a write of value: the arguments, the caller's grant, the
// job's row locked for the rest of the transaction, the value's type.
JobRow open_for_write(pg::SpiSession& spi, const std::string& job, const TypedValue& value)
{
    require_job(job);
    check_scope_usage(spi, ScopeKind::kCheckpoints, job);
    const JobRow row = load_job(spi, job, true);
    check_type(job, row, value.type);
    return row;
}

}  // namespace

std::optional<std::string> watermark_text(const std::string& job)
{
    require_job(job);
    pg::SpiSession spi;
    check_scope_usage(spi, ScopeKind::kCheckpoints, job);
    const JobRow row = load_job(spi, job, false);
    spi.finish();
    return row.watermark;
}

std::optional<TypedValue> watermark_typed(const std::string& job, std::uint32_t as_type)
{
    require_job(job);
    pg::SpiSession spi;
    check_scope_usage(spi, ScopeKind::kCheckpoints, job);
    const JobRow row = load_job(spi, job, false);
    spi.finish();
    const std::uint32_t type = pg::trusted_state_type(as_type);
    check_type(job, row, type);
    if (!row.watermark)
        return std::nullopt;
    return pg::parse_canonical(*row.watermark, type);  // in the caller's memory context
}

std::optional<std::string> lock_job(const std::string& job, bool nowait)
{
    require_job(job);
    pg::SpiSession spi;
    check_scope_usage(spi, ScopeKind::kCheckpoints, job);
    const JobRow row = load_job(spi, job, true, nowait);
    spi.finish();
    return row.watermark;
}

void advance(const std::string& job, const TypedValue& given, const std::optional<std::string>& expected)
{
    const TypedValue value = require_value(given, "watermark");
    pg::SpiSession spi;
    const JobRow row = open_for_write(spi, job, value);
    if (expected) {
        // Compare-and-set: the runner read `expected` (in the canonical text
        // that watermark() and lock_job() return); anything else now stored
        // means another runner moved the job meanwhile.
        const bool same = row.watermark && pg::compare_values(pg::parse_canonical(*expected, value.type),
                                                              pg::parse_canonical(*row.watermark, value.type)) == 0;
        if (!same)
            throw UserError(
                sqlstate::kSerializationFailure, "watermark of job \"" + job + "\" is no longer " + *expected,
                "It is now " + row.watermark.value_or("unset") + ": another runner advanced it.",
                "This run is stale; its writes roll back with this error. Start over from the new watermark.");
    }
    if (row.watermark) {
        const int c = pg::compare_values(value, pg::parse_canonical(*row.watermark, value.type));
        if (c == 0) {
            spi.finish();
            return;  // a rerun: advancing to the value it holds is a no-op
        }
        if (c < 0)
            throw UserError(sqlstate::kInvalidParameterValue,
                            "watermark of job \"" + job + "\" would move backwards from " + *row.watermark + " to " +
                                pg::canonical_text(value),
                            "A watermark never moves back by advance; this transaction's writes roll back with it.",
                            "Use idem.rewind to move it back on purpose (it is recorded).");
    }
    store(spi, job, value);
    spi.finish();
}

void rewind(const std::string& job, const TypedValue& given)
{
    const TypedValue value = require_value(given, "watermark");
    pg::SpiSession spi;
    const JobRow row = open_for_write(spi, job, value);
    const std::string text = pg::canonical_text(value);
    const std::string who = pg::current_user_name();
    pg::as_extension_owner([&] {
        spi.query_saved(
            "INSERT INTO idem.checkpoint_log (job, action, old_value, new_value, by_role)"
            " VALUES ($1, 'rewind', $2, $3, $4)",
            {Param::of_text(job), Param::of_text(row.watermark), Param::of_text(text), Param::of_text(who)});
    });
    store(spi, job, value);
    spi.finish();
}

bool run_once(const std::string& job, const TypedValue& given, const std::string& query)
{
    const TypedValue value = require_value(given, "watermark");
    const RunClock clock;
    pg::SpiSession spi;
    const JobRow row = open_for_write(spi, job, value);
    RunRecord run;
    run.function = "run_once";
    run.target = job;
    run.unit = pg::canonical_text(value);
    if (row.watermark && pg::compare_values(value, pg::parse_canonical(*row.watermark, value.type)) <= 0) {
        // Already done up to here.
        run.action = "skipped";
        run.rows_written = 0;
        record_run(spi, clock, run);
        spi.finish();
        return false;
    }
    // The caller's SQL, as the caller, in the caller's transaction; then the
    // watermark. Both commit together or neither does.
    const auto processed = static_cast<std::int64_t>(spi.execute(query));
    store(spi, job, value);
    // The rows the caller's statement processed (SPI's count, as psql's
    // command tag shows it).
    run.action = "ran";
    run.counts = {{"rows", processed}};
    run.rows_written = processed;
    run.changed = true;
    record_run(spi, clock, run);
    spi.finish();
    return true;
}

void mark_window(const std::string& job, const TypedValue& lo_given, const TypedValue& hi_given)
{
    require_job(job);
    const TypedValue lo = require_value(lo_given, "lo");
    const TypedValue hi = require_value(hi_given, "hi");
    if (pg::compare_values(lo, hi) >= 0)
        throw UserError(sqlstate::kInvalidParameterValue, "a window needs lo < hi", "Windows are half-open: [lo, hi).",
                        "Pass lo before hi, for example '2024-07-07'::date and '2024-07-08'::date.");
    pg::SpiSession spi;
    check_scope_usage(spi, ScopeKind::kCheckpoints, job);
    const JobRow row = load_job(spi, job, true);
    check_type(job, row, lo.type);
    const std::string lo_text = pg::canonical_text(lo);
    const std::string hi_text = pg::canonical_text(hi);
    pg::as_extension_owner([&] {
        if (!row.type)
            spi.query_saved(
                "UPDATE idem.checkpoints c SET value_type = $2::pg_catalog.oid::pg_catalog.regtype"
                " WHERE c.job OPERATOR(pg_catalog.=) $1",
                {Param::of_text(job), Param::of_oid(lo.type)});
        spi.query_saved(
            "INSERT INTO idem.windows AS w (job, lo, hi) VALUES ($1, $2, $3)"
            " ON CONFLICT (job, lo, hi) DO UPDATE SET done_at = pg_catalog.now()",
            {Param::of_text(job), Param::of_text(lo_text), Param::of_text(hi_text)});
    });
    spi.finish();
}

namespace {

// A window [lo, hi) as typed values.
using Window = std::pair<TypedValue, TypedValue>;

// The job's windows as typed values, sorted by lo.
std::vector<Window> load_windows(pg::SpiSession& spi, const std::string& job, std::uint32_t type)
{
    pg::QueryResult r;
    pg::as_extension_owner([&] {
        r = spi.query_saved("SELECT w.lo, w.hi FROM idem.windows w WHERE w.job OPERATOR(pg_catalog.=) $1",
                            {Param::of_text(job)});
    });
    std::vector<Window> out;
    for (const auto& row : r.rows)
        out.emplace_back(pg::parse_canonical(row[0].value_or(""), type),
                         pg::parse_canonical(row[1].value_or(""), type));
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return pg::compare_values(a.first, b.first) < 0; });
    return out;
}

// The candidate windows [g, g + step) for g from $1 (from_value) while g < $2
// (to_value), $3 the step, as SQL run under the canonical settings (UTC
// days). generate_series sits in a target list, where it yields one row at a
// time and the LIMIT stops it; in FROM it would first build the whole series
// (across the bigint range, or years in microseconds). The three functions
// below write it for an interval step and for a numeric one.

// The type an interval step counts in: timestamps for dates too.
std::string interval_series_base(std::uint32_t type, const std::string& type_name)
{
    switch (pg::type_kind(type)) {
    case pg::TypeKind::kDate:
    case pg::TypeKind::kTimestamp:
        return "pg_catalog.timestamp";
    case pg::TypeKind::kTimestamptz:
        return "pg_catalog.timestamptz";
    default:
        throw UserError(sqlstate::kUndefinedFunction, "an interval step needs dates or timestamps, not " + type_name,
                        {}, "For numbers, pass a step of the same type as the values.");
    }
}

std::string interval_series_sql(std::uint32_t type, const std::string& base)
{
    const std::string t = pg::type_qualified(type);
    return "SELECT g::" + t + "::pg_catalog.text, LEAST((g OPERATOR(pg_catalog.+) $3)::" + t +
           ", $2)::pg_catalog.text FROM (SELECT pg_catalog.generate_series($1::" + base + ", $2::" + base +
           ", $3) AS g) AS s WHERE g::" + t + " OPERATOR(pg_catalog.<) $2 LIMIT 100001";
}

std::string numeric_series_sql(const TypedValue& from, const TypedValue& step, const std::string& type_name)
{
    if (step.type != from.type)
        throw UserError(sqlstate::kDatatypeMismatch, "step must have the type of the values", {},
                        "Cast the step to the type of from_value and to_value; dates and timestamps take an interval.");
    const pg::TypeKind kind = pg::type_kind(from.type);
    if (kind != pg::TypeKind::kInteger && kind != pg::TypeKind::kBigint && kind != pg::TypeKind::kNumeric)
        throw UserError(sqlstate::kUndefinedFunction,
                        "a numeric step needs integer, bigint or numeric values, not " + type_name, {},
                        "Give dates and timestamps an interval step, other values integer, bigint or numeric bounds.");
    return "SELECT g::pg_catalog.text, LEAST(g OPERATOR(pg_catalog.+) $3, $2)::pg_catalog.text"
           " FROM (SELECT pg_catalog.generate_series($1, $2, $3) AS g) AS s"
           " WHERE g OPERATOR(pg_catalog.<) $2 LIMIT 100001";
}

void require_positive_step(pg::SpiSession& spi, const TypedValue& step)
{
    auto positive = spi.query("SELECT ($1 OPERATOR(pg_catalog.>) ($1 OPERATOR(pg_catalog.-) $1))::pg_catalog.text",
                              {Param::of_value(step)});
    if (positive.rows.at(0).at(0) != std::optional<std::string>("true"))
        throw UserError(sqlstate::kInvalidParameterValue, "step must be positive", {},
                        "Pass a step greater than zero: the width of one window.");
}

// 'infinity' plus a step is 'infinity' again: the series from or to an
// infinite value never ends, and between two equal infinities the WHERE
// drops every row, so not even the LIMIT stops it.
void require_finite_range(pg::SpiSession& spi, const std::string& base, const TypedValue& from, const TypedValue& to,
                          const std::string& type_name)
{
    auto finite = spi.query(
        "SELECT (pg_catalog.isfinite($1::" + base + ") AND pg_catalog.isfinite($2::" + base + "))::pg_catalog.text",
        {Param::of_value(from), Param::of_value(to)});
    if (finite.rows.at(0).at(0) != std::optional<std::string>("true"))
        throw UserError(sqlstate::kInvalidParameterValue, "from_value and to_value must be finite",
                        "Windows are listed between two finite " + type_name + " values.",
                        "Pass finite bounds instead of 'infinity'.");
}

pg::QueryResult candidate_windows(pg::SpiSession& spi, const std::string& series, const TypedValue& from,
                                  const TypedValue& to, const TypedValue& step)
{
    pg::QueryResult candidates;
    pg::with_canonical_settings([&] {
        candidates = spi.query(series, {Param::of_value(from), Param::of_value(to), Param::of_value(step)});
    });
    if (candidates.rows.size() > 100000)
        throw UserError(sqlstate::kProgramLimitExceeded, "more than 100000 windows between from_value and to_value", {},
                        "Use a larger step or a shorter range.");
    return candidates;
}

// The done windows (sorted by lo) merged where they touch or overlap.
std::vector<Window> covered_stretches(const std::vector<Window>& done)
{
    std::vector<Window> covered;
    for (const auto& w : done) {
        if (!covered.empty() && pg::compare_values(w.first, covered.back().second) <= 0) {
            if (pg::compare_values(w.second, covered.back().second) > 0)
                covered.back().second = w.second;
        } else {
            covered.push_back(w);
        }
    }
    return covered;
}

// The candidates no stretch covers whole, in order.
std::vector<pg::Row> uncovered_windows(const pg::QueryResult& candidates, const std::vector<Window>& covered,
                                       std::uint32_t type, const std::string& type_name)
{
    std::vector<pg::Row> out;
    std::size_t k = 0;
    for (const auto& c : candidates.rows) {
        const TypedValue lo = pg::parse_canonical(c[0].value_or(""), type);
        const TypedValue hi = pg::parse_canonical(c[1].value_or(""), type);
        if (pg::compare_values(lo, hi) >= 0)
            throw UserError(sqlstate::kInvalidParameterValue, "step is too small for " + type_name + " values",
                            "The window starting at " + c[0].value_or("") + " would be empty.",
                            "Dates need a step of at least one day.");
        while (k < covered.size() && pg::compare_values(covered[k].second, lo) <= 0)
            ++k;  // stretches ending before this window starts
        const bool is_covered = k < covered.size() && pg::compare_values(covered[k].first, lo) <= 0 &&
                                pg::compare_values(covered[k].second, hi) >= 0;
        if (!is_covered)
            out.push_back({c[0], c[1]});
    }
    return out;
}

}  // namespace

void windows(const pg::ResultSet& out, const std::string& job)
{
    require_job(job);
    pg::SpiSession spi;
    check_scope_usage(spi, ScopeKind::kCheckpoints, job);
    JobRow row = load_job(spi, job, false);
    // Read as text by the owner; parsed and sorted by the job's type here, as
    // the caller: a type's own code never runs with the owner's rights, and
    // only a type no other role controls (pg::trusted_state_type) runs at all.
    if (row.type)
        row.type = pg::trusted_state_type(*row.type);
    pg::QueryResult r;
    pg::as_extension_owner([&] {
        pg::with_canonical_settings([&] {
            r = spi.query_saved(
                "SELECT w.lo, w.hi, w.done_at::pg_catalog.text FROM idem.windows w"
                " WHERE w.job OPERATOR(pg_catalog.=) $1",
                {Param::of_text(job)});
        });
    });
    struct Item {
        TypedValue lo, hi;
        pg::Row row;
    };
    std::vector<Item> items;
    for (auto& rr : r.rows) {
        Item it{{}, {}, rr};
        if (row.type) {
            it.lo = pg::parse_canonical(rr[0].value_or(""), *row.type);
            it.hi = pg::parse_canonical(rr[1].value_or(""), *row.type);
        }
        items.push_back(std::move(it));
    }
    if (row.type)
        std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
            const int c = pg::compare_values(a.lo, b.lo);
            return c != 0 ? c < 0 : pg::compare_values(a.hi, b.hi) < 0;
        });
    std::vector<pg::Row> rows;
    for (auto& it : items)
        rows.push_back(std::move(it.row));  // done_at: ISO text, read back by timestamptz input
    pg::return_text_rows(out, rows);
    spi.finish();
}

void gaps(const pg::ResultSet& out, const std::string& job, const TypedValue& from_given, const TypedValue& to_given,
          const TypedValue& step_given)
{
    require_job(job);
    TypedValue step = step_given;
    if (!step.is_null)
        step.type = pg::trusted_state_type(step.type);
    const TypedValue from = require_value(from_given, "from_value");
    const TypedValue to = require_value(to_given, "to_value");
    if (step.is_null)
        throw UserError(sqlstate::kNullValueNotAllowed, "step must not be NULL", {},
                        "Pass the width of one window as step, for example interval '1 day'.");
    pg::SpiSession spi;
    check_scope_usage(spi, ScopeKind::kCheckpoints, job);
    const JobRow row = load_job(spi, job, false);
    check_type(job, row, from.type);

    const std::string type_name = pg::type_display(from.type);
    const bool interval_step = pg::type_kind(step.type) == pg::TypeKind::kInterval;
    const std::string base = interval_step ? interval_series_base(from.type, type_name) : std::string();
    const std::string series =
        interval_step ? interval_series_sql(from.type, base) : numeric_series_sql(from, step, type_name);
    require_positive_step(spi, step);
    if (interval_step)
        require_finite_range(spi, base, from, to, type_name);
    const pg::QueryResult candidates = candidate_windows(spi, series, from, to, step);
    const auto covered = covered_stretches(load_windows(spi, job, from.type));
    pg::return_text_rows(out, uncovered_windows(candidates, covered, from.type, type_name));
    spi.finish();
}

}  // namespace pg_idempotent
