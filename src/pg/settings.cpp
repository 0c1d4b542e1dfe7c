#include "pg/settings.hpp"

#include "pg/guard.hpp"
#include "pg/postgres.hpp"

extern "C" {
#include "access/xact.h"
#include "access/xlog.h"
#include "utils/guc.h"
}

namespace pg_idempotent::pg {

namespace {

int history_setting = static_cast<int>(HistoryMode::kAll);
bool override_identity_setting = false;
int max_result_size_kb = 1024;

// The hidden spellings keep boolean habits working (SET idem.history = on).
const struct config_enum_entry history_options[] = {
    {"all", static_cast<int>(HistoryMode::kAll), false},
    {"changes", static_cast<int>(HistoryMode::kChanges), false},
    {"off", static_cast<int>(HistoryMode::kOff), false},
    {"on", static_cast<int>(HistoryMode::kAll), true},
    {"true", static_cast<int>(HistoryMode::kAll), true},
    {"false", static_cast<int>(HistoryMode::kOff), true},
    {nullptr, 0, false},
};

}  // namespace

void define_settings()
{
    // Runs from _PG_init, outside any C++ frame that owns an object: a
    // PostgreSQL error here is reported like any error at load time.
    DefineCustomEnumVariable("idem.history",
                             "Which runs of idem's bulk writing functions are recorded in idem.run_history.",
                             "all: every run, the ones that changed nothing included; changes: only runs that "
                             "wrote rows, so a no-op rerun writes nothing at all; off: none.",
                             &history_setting, static_cast<int>(HistoryMode::kAll), history_options, PGC_USERSET, 0,
                             nullptr, nullptr, nullptr);
    DefineCustomBoolVariable("idem.override_identity",
                             "Lets idem.merge write GENERATED ALWAYS identity columns (OVERRIDING SYSTEM VALUE).",
                             nullptr, &override_identity_setting, false, PGC_USERSET, 0, nullptr, nullptr, nullptr);
    // Keys' results and recovery points live in a table every granted role
    // shares: a role must not be able to raise its own limit.
    DefineCustomIntVariable("idem.max_result_size",
                            "The largest result (idem.complete, idem.once) or recovery point (idem.save_point) "
                            "an idempotency key may store.",
                            "Larger ones are refused with 54000; a payment's or a webhook's answer is a few kB.",
                            &max_result_size_kb, 1024, 1, 1024 * 1024, PGC_SUSET, GUC_UNIT_KB, nullptr, nullptr,
                            nullptr);
    MarkGUCPrefixReserved("idem");
}

namespace {
void leave_nest_level(int nest_level) noexcept
{
    // What AbortTransaction and fmgr_security_definer run: restores the
    // values saved at this level, allocates nothing that can fail and
    // raises nothing, so it may run in a destructor during unwinding.
    AtEOXact_GUC(true, nest_level);
}
}  // namespace

SettingsScope::SettingsScope(const Settings& settings)
{
    nest_level_ = pg_call([]() noexcept { return NewGUCNestLevel(); });
    try {
        pg_call([&]() noexcept {
            for (const auto& [name, value] : settings)
                (void)set_config_option(name, value, PGC_USERSET, PGC_S_SESSION, GUC_ACTION_SAVE, true, 0, false);
        });
    } catch (...) {
        // No destructor runs for a constructor that throws: undo the
        // settings applied before the one that failed, and the level.
        leave_nest_level(nest_level_);
        throw;
    }
}

SettingsScope::~SettingsScope()
{
    leave_nest_level(nest_level_);
}

void with_settings(const Settings& settings, const std::function<void()>& fn)
{
    const SettingsScope scope(settings);
    fn();
}

bool override_identity()
{
    return override_identity_setting;
}

std::size_t max_result_bytes()
{
    return static_cast<std::size_t>(max_result_size_kb) * 1024;
}

HistoryMode history_mode()
{
    return static_cast<HistoryMode>(history_setting);
}

int work_mem_kb()
{
    return work_mem;
}

bool transaction_is_read_only()
{
    return XactReadOnly || RecoveryInProgress();
}

void with_lock_timeout(const std::string& value, const std::function<void()>& fn)
{
    with_settings({{"lock_timeout", value.c_str()}}, fn);
}

}  // namespace pg_idempotent::pg
