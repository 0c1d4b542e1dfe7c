#include "pg/guard_probe.hpp"

#include <cstring>
#include <new>
#include <stdexcept>
#include <vector>

#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/roles.hpp"
#include "pg/settings.hpp"
#include "pg/spi.hpp"
#include "pg/transactions.hpp"
#include "pg/values.hpp"

extern "C" {
#include "utils/guc.h"
}

namespace pg_idempotent {

namespace {

// Destructor runs since the backend started: a PostgreSQL ERROR that skipped
// a destructor would leave this short of the number of objects created.
std::int64_t g_destructed = 0;

struct Witness {
    std::string payload = std::string(256, 'x');  // owns heap memory
    ~Witness() { ++g_destructed; }
};

// What the scoped switches change and must give back.
struct Observed {
    std::uint32_t user = 0;
    bool local_user_change = false;
    std::string search_path, lock_timeout, date_style, time_zone;

    std::string text() const
    {
        return "user " + std::to_string(user) + (local_user_change ? " (switched)" : "") + ", search_path " +
               search_path + ", lock_timeout " + lock_timeout + ", DateStyle " + date_style + ", TimeZone " + time_zone;
    }
    bool operator==(const Observed& o) const
    {
        return user == o.user && local_user_change == o.local_user_change && search_path == o.search_path &&
               lock_timeout == o.lock_timeout && date_style == o.date_style && time_zone == o.time_zone;
    }
};

std::string setting(const char* name)
{
    return std::string(pg::pg_call([&]() noexcept { return GetConfigOption(name, false, false); }));
}

Observed observe()
{
    Observed o;
    o.user = GetUserId();
    o.local_user_change = InLocalUserIdChange();
    o.search_path = setting("search_path");
    o.lock_timeout = setting("lock_timeout");
    o.date_style = setting("DateStyle");
    o.time_zone = setting("TimeZone");
    return o;
}

// The scoped switches (as_extension_owner, with_lock_timeout,
// with_canonical_settings, with_settings) give everything back on every
// path, in the same transaction: after a C++ error caught in C++, after a
// PostgreSQL error caught inside a subtransaction (observed before its
// rollback, which would restore it anyway), and after a setting that
// fails to apply. Returns the number of cases that left something changed,
// each reported as a WARNING.
std::int64_t probe_restore()
{
    const Observed before = observe();
    std::int64_t broken = 0;
    auto check = [&](const char* what) {
        const Observed now = observe();
        if (now == before)
            return;
        ++broken;
        pg::warning(std::string("not restored after ") + what, "before: " + before.text() + "; after: " + now.text());
    };
    auto fail = [] {
        throw pg::UserError(pg::sqlstate::kInvalidParameterValue, "probe failure", {},
                            "The probe raises it on purpose.");
    };
    try {
        pg::as_extension_owner(fail);
    } catch (const pg::UserError&) {
        check("a C++ error as the extension owner");
    }
    try {
        pg::with_lock_timeout("1ms", fail);
    } catch (const pg::UserError&) {
        check("a C++ error under with_lock_timeout");
    }
    try {
        pg::with_canonical_settings(fail);
    } catch (const pg::UserError&) {
        check("a C++ error under the canonical settings");
    }
    pg::SpiSession spi;
    // A PostgreSQL error is caught only inside a subtransaction that is
    // rolled back (house rule 4); what is checked is the state before that
    // rollback.
    pg::in_rolled_back_subtransaction([&] {
        try {
            pg::as_extension_owner([&] {
                pg::with_canonical_settings(
                    [&] { pg::with_lock_timeout("1ms", [&] { spi.execute("SELECT 1 OPERATOR(pg_catalog./) 0"); }); });
            });
        } catch (const pg::PgError&) {
            check("a PostgreSQL error as the extension owner, under lock_timeout and the canonical settings");
        }
    });
    pg::in_rolled_back_subtransaction([&] {
        try {
            pg::with_settings({{"DateStyle", "German"}, {"lock_timeout", "-1"}}, [] {});
        } catch (const pg::PgError&) {
            check("a setting that failed to apply after another one");
        }
    });
    spi.finish();
    return broken;
}

}  // namespace

void boundary_probe_longjmp(FunctionCallInfoBaseData* fcinfo)
{
    if (PG_ARGISNULL(0))
        return;
    text* action = PG_GETARG_TEXT_PP(0);
    if (VARSIZE_ANY_EXHDR(action) == 7 && memcmp(VARDATA_ANY(action), "longjmp", 7) == 0)
        ereport(ERROR, (errcode(ERRCODE_INVALID_PARAMETER_VALUE), errmsg("boundary probe longjmp past cpp_entry"),
                        errhint("The probe raises it on purpose.")));
}

std::int64_t boundary_probe(const std::string& action, const std::optional<std::string>& sql)
{
    if (action == "destructed")
        return g_destructed;
    // 1 when this call is the outermost entry (its context is where errors
    // are copied), 0 when an earlier entry's context is still recorded.
    if (action == "entry")
        return pg::is_outermost_entry() ? 1 : 0;
    if (action == "restore")
        return probe_restore();
    if (action == "throw") {
        Witness w;
        throw std::runtime_error("boundary probe threw a C++ exception");
    }
    if (action == "bad_alloc") {
        Witness w;
        throw std::bad_alloc();
    }
    if (action == "user_error") {
        Witness w;
        throw pg::UserError(pg::sqlstate::kInvalidParameterValue, "boundary probe user error",
                            "The probe raised this on purpose.", "Nothing to fix.");
    }
    if (action == "run" || action == "loop") {
        if (!sql)
            throw pg::UserError(pg::sqlstate::kNullValueNotAllowed, "sql must not be NULL", {},
                                "Pass the statement to run.");
        // Three witnesses alive across the SPI calls.
        Witness a;
        std::vector<Witness> more(2);
        pg::SpiSession spi;
        std::uint64_t total = 0;
        // "loop" repeats the statement until it fails or is cancelled.
        do {
            total += spi.execute(*sql);
        } while (action == "loop");
        spi.finish();
        return static_cast<std::int64_t>(total);
    }
    throw pg::UserError(pg::sqlstate::kInvalidParameterValue, "unknown boundary probe action \"" + action + "\"", {},
                        "Use destructed, entry, longjmp, restore, throw, bad_alloc, user_error, run or loop.");
}

}  // namespace pg_idempotent
