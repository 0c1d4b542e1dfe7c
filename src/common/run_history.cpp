#include "common/run_history.hpp"

#include "common/installed_sql.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"
#include "pg/roles.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "pg/step.hpp"

namespace pg_idempotent {

std::int64_t RunClock::elapsed_microseconds() const
{
    return std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - started_).count();
}

std::string counts_json(const std::vector<std::pair<std::string, std::int64_t>>& counts)
{
    // The names are the extension's own identifiers: nothing to escape.
    std::string out = "{";
    for (std::size_t i = 0; i < counts.size(); ++i) {
        if (i > 0)
            out += ", ";
        out += "\"" + counts[i].first + "\": " + std::to_string(counts[i].second);
    }
    return out + "}";
}

namespace {
// Any role may write a run (a replace_where predicate is its unit), and the
// log is kept and dumped: a text is stored up to this many bytes, cut at a
// character boundary and marked (docs/history.md).
constexpr std::size_t kMaxStoredText = 1000;

std::optional<std::string> capped(const std::optional<std::string>& text)
{
    if (!text || text->size() <= kMaxStoredText)
        return text;
    std::size_t cut = kMaxStoredText;
    while (cut > 0 && (static_cast<unsigned char>((*text)[cut]) & 0xC0) == 0x80)
        --cut;  // not inside a UTF-8 sequence
    return text->substr(0, cut) + "... (" + std::to_string(text->size()) + " bytes)";
}
}  // namespace

void record_run(pg::SpiSession& spi, const RunClock& clock, const RunRecord& run)
{
    const pg::HistoryMode mode = pg::history_mode();
    const pg::Step step("recording the run in idem.run_log");
    if (mode == pg::HistoryMode::kOff)
        return;
    if (mode == pg::HistoryMode::kChanges && !run.changed)
        return;
    if (pg::transaction_is_read_only())
        return;
    // A module newer than the installed SQL (the package is upgraded, ALTER
    // EXTENSION pg_idempotent UPDATE has not run yet) keeps working as the
    // old version did, without a history.
    if (!sql_has(SqlFeature::kRunLog))
        return;
    // Who ran it: the caller's current role (after SET ROLE), before the switch.
    const std::string role = pg::current_user_name();
    const std::uint32_t role_oid = pg::current_user_id();
    const bool has_role_oid = sql_has(SqlFeature::kRunLogRoleOid);
    const bool has_params = sql_has(SqlFeature::kRunLogParams);
    const std::int64_t micros = clock.elapsed_microseconds();
    const pg::Params params = {
        pg::Param::of_text(run.function),
        pg::Param::of_text(capped(run.target)),
        pg::Param::of_text(capped(run.unit)),
        pg::Param::of_text(run.action),
        pg::Param::of_text(counts_json(run.counts)),
        pg::Param::of_text(run.rows_written ? std::optional<std::string>(std::to_string(*run.rows_written))
                                            : std::nullopt),
        pg::Param::of_text(role),
        pg::Param::of_int8(micros),
        pg::Param::of_oid(role_oid),
        pg::Param::of_text(run.params.empty() ? std::nullopt : std::optional<std::string>(run.params))};
    pg::as_extension_owner([&] {
        if (has_params)
            spi.query_saved(
                "INSERT INTO idem.run_log (started_at, duration, function_name, target, unit, action, counts,"
                " rows_written, transaction_id, role_name, session_role, application_name, backend_pid, role, params)"
                " SELECT pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) d, d, $1, $2, $3, $4, $5::pg_catalog.jsonb,"
                " $6::pg_catalog.int8, pg_catalog.pg_current_xact_id(), $7, session_user,"
                " pg_catalog.current_setting('application_name'), pg_catalog.pg_backend_pid(),"
                " $9::pg_catalog.oid::pg_catalog.regrole, $10::pg_catalog.jsonb"
                " FROM (SELECT '1 microsecond'::pg_catalog.interval OPERATOR(pg_catalog.*) $8::pg_catalog.float8) AS m(d)",
                params);
        else if (has_role_oid)
            spi.query_saved(
                "INSERT INTO idem.run_log (started_at, duration, function_name, target, unit, action, counts,"
                " rows_written, transaction_id, role_name, session_role, application_name, backend_pid, role)"
                " SELECT pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) d, d, $1, $2, $3, $4, $5::pg_catalog.jsonb,"
                " $6::pg_catalog.int8, pg_catalog.pg_current_xact_id(), $7, session_user,"
                " pg_catalog.current_setting('application_name'), pg_catalog.pg_backend_pid(),"
                " $9::pg_catalog.oid::pg_catalog.regrole"
                " FROM (SELECT '1 microsecond'::pg_catalog.interval OPERATOR(pg_catalog.*) $8::pg_catalog.float8) AS m(d)",
                params);
        else
            spi.query_saved(
                "INSERT INTO idem.run_log (started_at, duration, function_name, target, unit, action, counts,"
                " rows_written, transaction_id, role_name, session_role, application_name, backend_pid)"
                " SELECT pg_catalog.clock_timestamp() OPERATOR(pg_catalog.-) d, d, $1, $2, $3, $4, $5::pg_catalog.jsonb,"
                " $6::pg_catalog.int8, pg_catalog.pg_current_xact_id(), $7, session_user,"
                " pg_catalog.current_setting('application_name'), pg_catalog.pg_backend_pid()"
                " FROM (SELECT '1 microsecond'::pg_catalog.interval OPERATOR(pg_catalog.*) $8::pg_catalog.float8"
                "       WHERE $9::pg_catalog.oid IS NOT NULL) AS m(d)",
                params);
    });
}

std::int64_t purge_history(const std::string& older_than)
{
    pg::SpiSession spi;
    auto negative =
        spi.query("SELECT ($1::pg_catalog.interval OPERATOR(pg_catalog.<) '0'::pg_catalog.interval)::pg_catalog.text",
                  {pg::Param::of_text(older_than)});
    if (negative.rows.at(0).at(0) == std::optional<std::string>("true"))
        throw pg::UserError(pg::sqlstate::kInvalidParameterValue, "older_than must not be negative", {},
                            "Pass an age, such as '90 days'.");
    const bool superuser = pg::current_user_is_superuser();
    const std::uint32_t caller = pg::current_user_id();
    std::uint64_t deleted = 0;
    // Before 0.7.0 (a newer module before ALTER EXTENSION ... UPDATE) the log
    // knows roles by name only.
    const std::string whose = pg::column_exists("idem", "run_log", "role")
                                  ? "pg_catalog.pg_has_role($3, l.role::pg_catalog.oid, 'MEMBER')"
                                  : "EXISTS (SELECT FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=)"
                                    " l.role_name AND pg_catalog.pg_has_role($3, r.oid, 'MEMBER'))";
    pg::as_extension_owner([&] {
        deleted = spi.execute(
            "DELETE FROM idem.run_log l"
            " WHERE l.started_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) $1::pg_catalog.interval)"
            "   AND ($2 OR " +
                whose + ")",
            {pg::Param::of_text(older_than), pg::Param::of_bool(superuser), pg::Param::of_oid(caller)});
    });
    spi.finish();
    return static_cast<std::int64_t>(deleted);
}

}  // namespace pg_idempotent
