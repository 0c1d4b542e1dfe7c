// An SPI session for C++ code, without PostgreSQL types in its interface.
//
// SpiSession connects in its constructor and must be finish()ed on the normal
// path. Its destructor makes no PostgreSQL call (the house rule): when a C++
// exception unwinds past an open session, the ERROR that cpp_entry raises next
// aborts the (sub)transaction, and PostgreSQL's own end-of-transaction cleanup
// closes the SPI connection.
//
// Values always travel as $n parameters. Statements run with read_only = false
// so each sees the effects of the ones before it, as in the caller's own SQL.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "pg/values.hpp"

struct FunctionCallInfoBaseData;  // PostgreSQL's, opaque here
struct _DestReceiver;             // PostgreSQL's DestReceiver, opaque here
struct _SPI_plan;                 // PostgreSQL's SPIPlanPtr points to one, opaque here

namespace pg_idempotent::pg {

struct Column;  // catalog.hpp

// A row-returning statement SpiSession::prepare_rows planned (opaque outside
// the boundary).
using PlannedRows = _SPI_plan*;

// The result set of the set-returning SQL function being called. The entry
// shim makes one of its call and hands it to the family, which fills it
// (SpiSession::return_rows, return_text_rows) without meeting PostgreSQL's
// call data.
class ResultSet {
public:
    explicit ResultSet(FunctionCallInfoBaseData* call) : call_(call) {}
    FunctionCallInfoBaseData* call() const { return call_; }

private:
    FunctionCallInfoBaseData* call_;
};

// A $n parameter: its SQL type and value (nullopt = NULL).
struct Param {
    enum class Type { kText, kInt8, kInt4, kBool, kOid, kTextArray, kValue };
    Type type;
    std::optional<std::string> text;
    std::int64_t integer = 0;
    std::vector<std::string> array;
    TypedValue value{};  // kValue: a Datum of any type (NULL when value.is_null)

    static Param of_text(std::optional<std::string> v) { return Param{Type::kText, std::move(v), 0, {}, {}}; }
    static Param of_int8(std::int64_t v) { return Param{Type::kInt8, std::string(), v, {}, {}}; }
    static Param of_int4(std::int32_t v) { return Param{Type::kInt4, std::string(), v, {}, {}}; }
    static Param of_bool(bool v) { return Param{Type::kBool, std::string(), v ? 1 : 0, {}, {}}; }
    static Param of_oid(std::uint32_t v) { return Param{Type::kOid, std::string(), v, {}, {}}; }
    static Param of_text_array(std::vector<std::string> v)
    {
        return Param{Type::kTextArray, std::string(), 0, std::move(v), {}};
    }
    static Param of_value(const TypedValue& v) { return Param{Type::kValue, std::string(), 0, {}, v}; }
};
using Params = std::vector<Param>;

// A result copied out of SPI as text (each column's output function).
using Row = std::vector<std::optional<std::string>>;
struct QueryResult {
    std::vector<Row> rows;
    std::uint64_t processed = 0;
};

// How a saved statement runs (SpiSession::query_saved and its kin).
enum class SavedRun { kCustomPlans, kLatestSnapshot, kGenericPlan };

class SpiSession {
public:
    SpiSession();
    // A session that connects only when it first runs a statement (or on
    // connect()): for hot paths that often need no SQL at all. finish() is
    // then a no-op if it never connected.
    struct Deferred {};
    explicit SpiSession(Deferred) {}
    ~SpiSession();
    SpiSession(const SpiSession&) = delete;
    SpiSession& operator=(const SpiSession&) = delete;

    void finish();
    // Connects now if not connected yet (a Deferred session); every method
    // below does it first.
    void connect();

    // Runs SQL the extension wrote itself (or any statement list) and returns
    // rows as text. For small results: catalog look-ups, counts.
    // hide_statement: as for return_rows.
    QueryResult query(const std::string& sql, const Params& params = {}, bool hide_statement = false);
    // The same, with the plan kept for the life of the backend (hot paths:
    // the SQL text and the parameter types are the cache key, so the text
    // must be one of the extension's own fixed statements, never text built
    // from caller input).
    QueryResult query_saved(const std::string& sql, const Params& params = {});
    // query_saved read under the latest committed state (a fresh snapshot,
    // as foreign-key checks read), not the caller's transaction snapshot:
    // for decisions that must not depend on when the caller's REPEATABLE
    // READ or SERIALIZABLE transaction began, or on a snapshot it imported
    // (grants). Read-only statements only.
    QueryResult query_saved_latest(const std::string& sql, const Params& params = {});
    // query_saved with a generic plan from the first call (PostgreSQL
    // plans the first five calls for their values, and goes on doing so
    // when that looks cheaper): for statements called often whose best plan
    // does not depend on the values (a dispatcher's report).
    QueryResult query_generic(const std::string& sql, const Params& params = {});

    // Runs a statement that returns at most one row and keeps its columns
    // as values (Datums copied out of SPI, valid until the calling function
    // returns; NULL values when it returned no row): a batch gathered into
    // arrays by the caller's rights, passed on as parameters to a statement
    // run with the owner's, never through text.
    std::vector<TypedValue> query_values(const std::string& sql, const Params& params = {});

    // Runs a statement; returns the rows it processed.
    std::uint64_t execute(const std::string& sql, const Params& params = {});

    // Runs one row-returning statement and sends its rows to dest, a
    // PostgreSQL DestReceiver made under pg_call, instead of collecting
    // them in SPI's tuple table (streaming, constant memory). Caller SQL is
    // welcome here: UserError 22023 when it is not a single statement that
    // returns rows. (Feature code written against the executor uses it:
    // pg_native/statement_digest.hpp.) columns: when given, set to the
    // statement's result columns (as describe_query gives them) before the
    // first row is sent, from the plan that runs.
    void send_rows(const std::string& sql, _DestReceiver* dest, const Params& params = {},
                   std::vector<Column>* columns = nullptr);
    // The same in two steps, for a statement run more than once in this
    // session (a check that stops at the first row that answers, then the
    // run that keeps every row): parsed and planned once. The plan lives
    // until finish(). It is not saved, so no invalidation reaches it: the
    // caller must not alter what it reads between runs (others cannot: its
    // first run locks its relations to the end of the transaction).
    // params: their types (the values of each run are given to send_rows).
    PlannedRows prepare_rows(const std::string& sql, const Params& params = {});
    void send_rows(PlannedRows plan, _DestReceiver* dest, const Params& params = {},
                   std::vector<Column>* columns = nullptr);

    // Runs a statement and returns its rows as the result set of the calling
    // set-returning function (materialize mode; column types must match).
    // hide_statement: the SQL is the extension's own (possibly long); errors
    // from it reach the client without the statement text as CONTEXT.
    void return_rows(const ResultSet& out, const std::string& sql, const Params& params = {},
                     bool hide_statement = false);
    // The same with a generic plan kept for the session (as query_generic
    // keeps it): the extension's own statements, called often (a
    // dispatcher's take).
    void return_rows_saved(const ResultSet& out, const std::string& sql, const Params& params = {});

private:
    enum class Plan { kOnce, kSaved };
    void return_rows_planned(const ResultSet& out, const std::string& sql, const Params& params, bool hide_statement,
                             Plan plan);
    QueryResult run_saved(const std::string& sql, const Params& params, SavedRun run);
    bool connected_ = false;
};

// Makes reports raised while a hidden statement runs (hide_statement, and
// every saved statement) leave out its `SQL statement "..."` CONTEXT line,
// a FATAL's too (emit_log_hook, chained). Called once, from _PG_init.
void install_statement_hiding();

// Returns rows given as text (NULL = nullopt) as the result set of the
// calling set-returning function; each cell is read by its declared column
// type's input function (so pass settings-independent text: numbers, OIDs).
// A row may be wider than the declared result: its leading columns are
// returned (a declaration older than the module's, before ALTER EXTENSION
// ... UPDATE, has fewer columns; new ones are only ever added at the end).
void return_text_rows(const ResultSet& out, const std::vector<Row>& rows);

// A lock_timeout setting ("1500ms") for a positive interval given as text;
// UserError 22023 otherwise. Functions with a lock_timeout argument apply it
// with with_lock_timeout around the waits they cause.
std::string lock_timeout_setting(SpiSession& spi, const std::string& interval);

// -1, 0 or 1: the sign of an interval given as text (22007 when it is
// none), for the checks of arguments such as older_than and lease.
int interval_sign(SpiSession& spi, const std::string& interval);

// Runs caller SQL (as the caller) and returns its rows as a jsonb array of
// objects in text form ("[]" for none, or for a statement without rows).
std::string rows_as_json_array(SpiSession& spi, const std::string& query);

}  // namespace pg_idempotent::pg
