// idem's own settings (GUCs) and the transaction facts that decide whether
// idem may write its bookkeeping.
//
// The settings are defined when the module is loaded (_PG_init), so a typo in
// `SET idem.histroy = off` is an error instead of a silent placeholder, and
// `SET idem.history = 'sometimes'` names the values it accepts.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <utility>
#include <vector>

namespace pg_idempotent::pg {

using Settings = std::vector<std::pair<const char*, const char*>>;

// These settings changed at a GUC nest level of their own, as a function's
// SET clauses do, for the life of the scope (RAII). The destructor restores
// them on every path: a return, a UserError, a PgError (a caller may catch
// it and go on in the same transaction). A setting that fails to apply (a
// PgError from the constructor) undoes the ones before it first.
// The destructor calls AtEOXact_GUC, which PostgreSQL's own abort path runs
// and which does not raise (docs/boundary.md).
class SettingsScope {
public:
    explicit SettingsScope(const Settings& settings);
    ~SettingsScope();
    SettingsScope(const SettingsScope&) = delete;
    SettingsScope& operator=(const SettingsScope&) = delete;

private:
    int nest_level_ = 0;
};

// Runs fn inside a SettingsScope.
void with_settings(const Settings& settings, const std::function<void()>& fn);

// Runs fn with lock_timeout set to the given value (a SettingsScope: undone
// afterwards on every path, like a function's SET clause).
void with_lock_timeout(const std::string& value, const std::function<void()>& fn);

// idem.history: which runs of the bulk writing functions leave a row in
// idem.run_history.
enum class HistoryMode {
    kAll,      // every run, the ones that found nothing to do included (default)
    kChanges,  // only runs that wrote rows: a no-op rerun stays write-free
    kOff,
};

// Defines idem.history, idem.override_identity and idem.max_result_size and
// reserves the prefix
// "idem." (called once, from _PG_init; reports problems as PostgreSQL does).
void define_settings();

HistoryMode history_mode();

// idem.override_identity: whether merge may write GENERATED ALWAYS identity
// columns (OVERRIDING SYSTEM VALUE).
bool override_identity();

// idem.max_result_size (superusers only): the largest result or recovery
// point a key may store, in bytes.
std::size_t max_result_bytes();

// work_mem, in kB.
int work_mem_kb();

// A read-only transaction (SET TRANSACTION READ ONLY, default_transaction_
// read_only, every transaction on a hot standby): idem writes no bookkeeping
// there, so what may run there still runs.
bool transaction_is_read_only();

}  // namespace pg_idempotent::pg
