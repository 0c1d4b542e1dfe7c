#include "pg/spi.hpp"

#include <cstring>
#include <memory>
#include <string_view>
#include <unordered_map>

#include "pg/guard.hpp"
#include "pg/spi_args.hpp"
#include "pg/tuple_columns.hpp"

extern "C" {
#include "access/htup_details.h"
#include "catalog/pg_type_d.h"
#include "funcapi.h"
#include "nodes/makefuncs.h"
#include "utils/fmgroids.h"
#include "utils/jsonb.h"
#include "utils/snapmgr.h"
}

namespace pg_idempotent::pg {

namespace {

Oid type_oid(Param::Type t)
{
    switch (t) {
    case Param::Type::kText:
        return TEXTOID;
    case Param::Type::kInt8:
        return INT8OID;
    case Param::Type::kInt4:
        return INT4OID;
    case Param::Type::kBool:
        return BOOLOID;
    case Param::Type::kOid:
        return OIDOID;
    case Param::Type::kTextArray:
        return TEXTARRAYOID;
    case Param::Type::kValue:
        return InvalidOid;  // taken from the value itself
    }
    return InvalidOid;
}

}  // namespace

SpiArgs convert_params(const Params& params)
{
    SpiArgs args;
    args.count = static_cast<int>(params.size());
    if (args.count == 0)
        return args;
    const int n = args.count;
    pg_call([&]() noexcept {
        args.types = static_cast<Oid*>(palloc(sizeof(Oid) * n));
        args.values = static_cast<Datum*>(palloc(sizeof(Datum) * n));
        args.nulls = static_cast<char*>(palloc(n));
    });
    for (int i = 0; i < n; ++i) {
        const Param& p = params[static_cast<std::size_t>(i)];
        args.types[i] = p.type == Param::Type::kValue ? p.value.type : type_oid(p.type);
        args.nulls[i] = ' ';
        args.values[i] = 0;
        switch (p.type) {
        case Param::Type::kText:
            if (!p.text) {
                args.nulls[i] = 'n';
            } else {
                const std::string& s = *p.text;
                args.values[i] = pg_call([&]() noexcept {
                    return PointerGetDatum(cstring_to_text_with_len(s.data(), static_cast<int>(s.size())));
                });
            }
            break;
        case Param::Type::kInt8:
            args.values[i] = Int64GetDatum(p.integer);
            break;
        case Param::Type::kInt4:
            args.values[i] = Int32GetDatum(static_cast<int32>(p.integer));
            break;
        case Param::Type::kBool:
            args.values[i] = BoolGetDatum(p.integer != 0);
            break;
        case Param::Type::kOid:
            args.values[i] = ObjectIdGetDatum(static_cast<Oid>(p.integer));
            break;
        case Param::Type::kValue:
            if (p.value.is_null)
                args.nulls[i] = 'n';
            else
                args.values[i] = static_cast<Datum>(p.value.datum);
            break;
        case Param::Type::kTextArray: {
            const int m = static_cast<int>(p.array.size());
            Datum* elems =
                pg_call([&]() noexcept { return static_cast<Datum*>(palloc(sizeof(Datum) * (m > 0 ? m : 1))); });
            for (int j = 0; j < m; ++j) {
                const std::string& s = p.array[static_cast<std::size_t>(j)];
                elems[j] = pg_call([&]() noexcept {
                    return PointerGetDatum(cstring_to_text_with_len(s.data(), static_cast<int>(s.size())));
                });
            }
            args.values[i] = pg_call([&]() noexcept {
                return PointerGetDatum(construct_array(elems, m, TEXTOID, -1, false, TYPALIGN_INT));
            });
            break;
        }
        }
    }
    return args;
}

namespace {

ParamListInfo to_param_list(const SpiArgs& args)
{
    if (args.count == 0)
        return nullptr;
    return pg_call([&]() noexcept {
        ParamListInfo list = makeParamList(args.count);
        for (int i = 0; i < args.count; ++i) {
            list->params[i].value = args.values[i];
            list->params[i].isnull = args.nulls[i] == 'n';
            list->params[i].pflags = PARAM_FLAG_CONST;
            list->params[i].ptype = args.types[i];
        }
        return list;
    });
}

QueryResult copy_result()
{
    QueryResult result;
    result.processed = SPI_processed;
    SPITupleTable* table = SPI_tuptable;
    if (table == nullptr)
        return result;
    const int natts = table->tupdesc->natts;
    for (uint64 r = 0; r < SPI_processed; ++r) {
        Row row;
        for (int c = 1; c <= natts; ++c) {
            char* value = pg_call([&]() noexcept { return SPI_getvalue(table->vals[r], table->tupdesc, c); });
            if (value == nullptr)
                row.emplace_back(std::nullopt);
            else
                row.emplace_back(std::string(value));
        }
        result.rows.push_back(std::move(row));
    }
    pg_call([&]() noexcept { SPI_freetuptable(table); });
    return result;
}

void check_spi(int rc, const char* what)
{
    // Caller SQL (once, run_once, assert_rerun_safe) can be a transaction
    // command or a COPY to or from the client, which SPI refuses with a code,
    // not an error: they are the caller's mistakes, reported as PL/pgSQL
    // reports them (0A000), not as internal errors.
    if (rc == SPI_ERROR_TRANSACTION) {
        throw UserError(sqlstate::kFeatureNotSupported,
                        "transaction control statements cannot run inside a pg_idempotent function",
                        "The statement would run inside the caller's transaction, which it cannot end.",
                        "Commit or roll back in the caller, after the function returns.");
    }
    if (rc == SPI_ERROR_COPY) {
        throw UserError(sqlstate::kFeatureNotSupported,
                        "COPY to or from the client cannot run inside a pg_idempotent function", {},
                        "Use COPY to or from a file, or INSERT ... SELECT.");
    }
    if (rc < 0) {
        // A negative code is a misuse of SPI, not a user error: report it as
        // an internal error naming the call.
        throw UserError(sqlstate::kInternalError,
                        std::string("SPI call failed in pg_idempotent: ") + what + ": " + SPI_result_code_string(rc),
                        {}, "A bug in pg_idempotent: report it with the statement that raised it.");
    }
}

}  // namespace

SpiSession::SpiSession()
{
    connect();
}

void SpiSession::connect()
{
    if (connected_)
        return;
    const int rc = pg_call([]() noexcept { return SPI_connect(); });
    check_spi(rc, "SPI_connect");
    connected_ = true;
}

SpiSession::~SpiSession()
{
    // Deliberately no PostgreSQL call here (see the header): an unfinished
    // session is closed by the abort that the pending ERROR causes.
}

void SpiSession::finish()
{
    if (!connected_)
        return;
    const int rc = pg_call([]() noexcept { return SPI_finish(); });
    connected_ = false;
    check_spi(rc, "SPI_finish");
}

namespace {
// The message, SQLSTATE, DETAIL and HINT name the problem; a generated
// statement (the extension's own, possibly long) would only bury them. Only
// the statement's own line goes: SPI's `SQL statement "<sql>"` (its prefix
// translated, the statement quoted whole, newlines and all) and the cursor
// position into it. Every other line stays: a user trigger's or function's
// PL/pgSQL lines raised inside the statement, the call's own line (the
// function and its step, guard.hpp) and the caller's.
void forget_statement(ErrorData* data, const std::string& sql)
{
    data->internalquery = nullptr;
    data->internalpos = 0;
    if (data->context == nullptr)
        return;
    char* const context = data->context;
    const std::size_t length = strlen(context);
    const std::string_view all(context, length);
    const std::string quoted = "\"" + sql + "\"";
    const std::size_t at = all.find(quoted);
    if (at == std::string_view::npos)
        return;
    // The line: from after the newline before the statement to the newline
    // after it (both dropped, one of them when the line is first or last).
    const std::size_t newline_before = all.rfind('\n', at);
    std::size_t begin = newline_before == std::string_view::npos ? 0 : newline_before + 1;
    std::size_t end = at + quoted.size();
    if (end < length && context[end] == '\n')
        ++end;
    else if (begin > 0)
        --begin;
    memmove(context + begin, context + end, length - end + 1);
    if (context[0] == '\0')
        data->context = nullptr;
}

// The extension's own statement running now, if its text is to be hidden.
// A FATAL (pg_terminate_backend, a postmaster shutdown) is reported where it
// is raised and never reaches a catch, so emit_log_hook drops the line
// there; an ERROR is caught (execute_checked) and dropped then.
const std::string* g_hidden_statement = nullptr;
emit_log_hook_type g_previous_emit_log_hook = nullptr;

void hide_statement_of_report(ErrorData* data)
{
    if (g_hidden_statement != nullptr) {
        try {
            forget_statement(data, *g_hidden_statement);
        } catch (...) {  // out of memory: report the statement as it is
        }
    }
    if (g_previous_emit_log_hook != nullptr)
        g_previous_emit_log_hook(data);
}

// Runs an SPI call on sql (preparing or executing it) with sql marked as
// running; with hide, the statement's CONTEXT line goes from an error it
// raises (a lock wait in parse analysis is cancelled inside SPI_prepare).
template <typename F>
auto execute_checked(const std::string& sql, bool hide, F&& call) -> decltype(call())
{
    const std::string* const outer = g_hidden_statement;
    g_hidden_statement = hide ? &sql : nullptr;
    try {
        const auto rc = pg_call(std::forward<F>(call));
        g_hidden_statement = outer;
        return rc;
    } catch (PgError& e) {
        g_hidden_statement = outer;
        if (hide)
            forget_statement(e.data(), sql);
        throw;
    }
}

// SPI_execute_with_args of one statement (list); its return code checked.
void execute_with_args(const std::string& sql, const SpiArgs& args, bool hide_statement)
{
    const int rc = execute_checked(sql, hide_statement, [&]() noexcept {
        return SPI_execute_with_args(sql.c_str(), args.count, args.types, args.values, args.nulls, false, 0);
    });
    check_spi(rc, "SPI_execute_with_args");
}
}  // namespace

void install_statement_hiding()
{
    g_previous_emit_log_hook = emit_log_hook;
    emit_log_hook = hide_statement_of_report;
}

QueryResult SpiSession::query(const std::string& sql, const Params& params, bool hide_statement)
{
    connect();
    const SpiArgs args = convert_params(params);
    execute_with_args(sql, args, hide_statement);
    return copy_result();
}

std::vector<TypedValue> SpiSession::query_values(const std::string& sql, const Params& params)
{
    connect();
    const SpiArgs args = convert_params(params);
    execute_with_args(sql, args, false);
    SPITupleTable* table = SPI_tuptable;
    if (table == nullptr)
        return {};
    // Sized here: nothing in the guarded lambda allocates C++ memory.
    std::vector<TypedValue> out(static_cast<std::size_t>(table->tupdesc->natts));
    pg_call([&]() noexcept {
        const TupleDesc desc = table->tupdesc;
        for (int c = 1; c <= desc->natts; ++c) {
            TypedValue& v = out[static_cast<std::size_t>(c - 1)];
            v.type = SPI_gettypeid(desc, c);
            if (SPI_processed > 0) {
                bool isnull = true;
                const Datum d = SPI_getbinval(table->vals[0], desc, c, &isnull);
                const Form_pg_attribute att = TupleDescAttr(desc, c - 1);
                v.is_null = isnull;
                if (!isnull)
                    v.datum = static_cast<std::uintptr_t>(SPI_datumTransfer(d, att->attbyval, att->attlen));
            }
        }
        SPI_freetuptable(table);
    });
    return out;
}

namespace {
// Kept plans, by SQL text, for the life of the backend (SPI_keepplan moves
// them under CacheMemoryContext; the plan cache replans after DDL).
std::unordered_map<std::string, SPIPlanPtr>& saved_plans()
{
    static std::unordered_map<std::string, SPIPlanPtr> plans;
    return plans;
}
}  // namespace

QueryResult SpiSession::query_saved(const std::string& sql, const Params& params)
{
    return run_saved(sql, params, SavedRun::kCustomPlans);
}

QueryResult SpiSession::query_generic(const std::string& sql, const Params& params)
{
    return run_saved(sql, params, SavedRun::kGenericPlan);
}

QueryResult SpiSession::query_saved_latest(const std::string& sql, const Params& params)
{
    return run_saved(sql, params, SavedRun::kLatestSnapshot);
}

namespace {

// One plan per statement and parameter types: a statement called with a
// NULL passed as text in one place and an int4 in another must not run the
// int4 through the other call's plan, which would read it as a pointer to
// text.
SPIPlanPtr saved_plan(const std::string& sql, const SpiArgs& args, bool generic)
{
    std::string key = sql;
    key.push_back(generic ? '\1' : '\0');
    for (int i = 0; i < args.count; ++i)
        key += std::to_string(args.types[i]) + ",";
    auto& plans = saved_plans();
    auto it = plans.find(key);
    if (it != plans.end())
        return it->second;
    SPIPlanPtr plan = execute_checked(sql, true, [&]() noexcept {
        SPIPlanPtr p = SPI_prepare_cursor(sql.c_str(), args.count, args.types, generic ? CURSOR_OPT_GENERIC_PLAN : 0);
        if (p == nullptr)
            elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
        if (SPI_keepplan(p) != 0)
            elog(ERROR, "SPI_keepplan failed");
        return p;
    });
    plans.emplace(key, plan);
    return plan;
}

// Saved statements are the extension's own fixed texts: always hidden.
void execute_saved(const std::string& sql, const SpiArgs& args, SavedRun run)
{
    const bool latest = run == SavedRun::kLatestSnapshot;
    SPIPlanPtr plan = saved_plan(sql, args, run == SavedRun::kGenericPlan);
    const int rc = execute_checked(sql, true, [&]() noexcept {
        if (latest)
            return SPI_execute_snapshot(plan, args.values, args.nulls, GetLatestSnapshot(), InvalidSnapshot, true,
                                        false, 0);
        return SPI_execute_plan(plan, args.values, args.nulls, false, 0);
    });
    check_spi(rc, latest ? "SPI_execute_snapshot" : "SPI_execute_plan");
}

}  // namespace

QueryResult SpiSession::run_saved(const std::string& sql, const Params& params, SavedRun run)
{
    connect();
    SpiArgs args = convert_params(params);
    execute_saved(sql, args, run);
    return copy_result();
}

std::uint64_t SpiSession::execute(const std::string& sql, const Params& params)
{
    connect();
    const SpiArgs args = convert_params(params);
    execute_with_args(sql, args, false);
    const std::uint64_t processed = SPI_processed;
    if (SPI_tuptable != nullptr) {
        SPITupleTable* table = SPI_tuptable;
        pg_call([&]() noexcept { SPI_freetuptable(table); });
    }
    return processed;
}

void SpiSession::send_rows(const std::string& sql, _DestReceiver* dest, const Params& params,
                           std::vector<Column>* columns)
{
    send_rows(prepare_rows(sql, params), dest, params, columns);
}

PlannedRows SpiSession::prepare_rows(const std::string& sql, const Params& params)
{
    connect();
    SpiArgs args = convert_params(params);
    SPIPlanPtr plan = pg_call([&]() noexcept { return SPI_prepare(sql.c_str(), args.count, args.types); });
    if (plan == nullptr)
        check_spi(SPI_result, "SPI_prepare");
    if (!pg_call([&]() noexcept { return SPI_is_cursor_plan(plan); })) {
        throw UserError(sqlstate::kInvalidParameterValue, "query must be a single statement that returns rows",
                        "The query was: " + sql,
                        "Pass a SELECT, VALUES, TABLE or a data-modifying statement with RETURNING.");
    }
    return plan;
}

void SpiSession::send_rows(PlannedRows plan, _DestReceiver* dest, const Params& params, std::vector<Column>* columns)
{
    connect();
    SpiArgs args = convert_params(params);
    if (columns) {
        // A cursor plan is one statement that returns rows: its one plan
        // source has their row type.
        TupleDesc desc = pg_call([&]() noexcept {
            return static_cast<CachedPlanSource*>(linitial(SPI_plan_get_plan_sources(plan)))->resultDesc;
        });
        *columns = columns_of(desc);
    }
    ParamListInfo list = to_param_list(args);
    const int rc = pg_call([&]() noexcept {
        SPIExecuteOptions options;
        memset(&options, 0, sizeof options);
        options.params = list;
        options.read_only = false;
        options.dest = dest;
        return SPI_execute_plan_extended(plan, &options);
    });
    check_spi(rc, "SPI_execute_plan_extended");
}

void SpiSession::return_rows(const ResultSet& out_set, const std::string& sql, const Params& params,
                             bool hide_statement)
{
    return_rows_planned(out_set, sql, params, hide_statement, Plan::kOnce);
}

void SpiSession::return_rows_saved(const ResultSet& out_set, const std::string& sql, const Params& params)
{
    return_rows_planned(out_set, sql, params, true, Plan::kSaved);
}

void SpiSession::return_rows_planned(const ResultSet& out_set, const std::string& sql, const Params& params,
                                     bool hide_statement, Plan saved)
{
    FunctionCallInfoBaseData* fcinfo = out_set.call();
    connect();
    SpiArgs args = convert_params(params);
    pg_call([&]() noexcept { InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    if (saved == Plan::kSaved)
        execute_saved(sql, args, SavedRun::kGenericPlan);
    else
        execute_with_args(sql, args, hide_statement);
    SPITupleTable* table = SPI_tuptable;
    if (table == nullptr)
        return;
    TupleDesc out = rsinfo->setDesc;
    if (table->tupdesc->natts != out->natts)
        throw UserError(sqlstate::kInternalError, "result shape mismatch in pg_idempotent", {},
                        "A bug in pg_idempotent: report it with the statement that raised it.");
    for (int c = 0; c < out->natts; ++c) {
        if (TupleDescAttr(table->tupdesc, c)->atttypid != TupleDescAttr(out, c)->atttypid)
            throw UserError(sqlstate::kInternalError, "result type mismatch in pg_idempotent", {},
                            "A bug in pg_idempotent: report it with the statement that raised it.");
    }
    const uint64 n = SPI_processed;
    pg_call([&]() noexcept {
        Datum* values = static_cast<Datum*>(palloc(sizeof(Datum) * static_cast<std::size_t>(out->natts)));
        bool* nulls = static_cast<bool*>(palloc(sizeof(bool) * static_cast<std::size_t>(out->natts)));
        for (uint64 r = 0; r < n; ++r) {
            heap_deform_tuple(table->vals[r], table->tupdesc, values, nulls);
            tuplestore_putvalues(rsinfo->setResult, out, values, nulls);
        }
    });
}

void return_text_rows(const ResultSet& out, const std::vector<Row>& rows)
{
    FunctionCallInfoBaseData* fcinfo = out.call();
    pg_call([&]() noexcept { InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC); });
    auto* rsinfo = reinterpret_cast<ReturnSetInfo*>(fcinfo->resultinfo);
    const int natts = rsinfo->setDesc->natts;
    for (const auto& row : rows) {
        // Wider is fine: a function declared by an older version of the
        // SQL objects (before ALTER EXTENSION ... UPDATE) returns fewer
        // columns, the leading ones (new columns are added at the end).
        if (static_cast<int>(row.size()) < natts)
            throw UserError(sqlstate::kInternalError, "result shape mismatch in pg_idempotent", {},
                            "A bug in pg_idempotent: report it with the statement that raised it.");
        pg_call([&]() noexcept {
            Datum* values = static_cast<Datum*>(palloc(sizeof(Datum) * static_cast<std::size_t>(natts)));
            bool* nulls = static_cast<bool*>(palloc(sizeof(bool) * static_cast<std::size_t>(natts)));
            for (int c = 0; c < natts; ++c) {
                const auto& cell = row[static_cast<std::size_t>(c)];
                nulls[c] = !cell.has_value();
                values[c] = Datum(0);
                if (!cell)
                    continue;
                // Each column's own input function reads the text.
                Form_pg_attribute att = TupleDescAttr(rsinfo->setDesc, c);
                Oid input = InvalidOid;
                Oid ioparam = InvalidOid;
                getTypeInputInfo(att->atttypid, &input, &ioparam);
                values[c] = OidInputFunctionCall(input, const_cast<char*>(cell->c_str()), ioparam, att->atttypmod);
            }
            tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
        });
    }
}

std::string lock_timeout_setting(SpiSession& spi, const std::string& interval)
{
    auto r = spi.query(
        "SELECT CASE WHEN $1::pg_catalog.interval OPERATOR(pg_catalog.>) '0'::pg_catalog.interval"
        " THEN pg_catalog.ceil(pg_catalog.date_part('epoch', $1::pg_catalog.interval)"
        " OPERATOR(pg_catalog.*) 1000)::pg_catalog.int8::pg_catalog.text END",
        {Param::of_text(interval)});
    if (!r.rows.at(0)[0])
        throw UserError(sqlstate::kInvalidParameterValue, "lock_timeout must be a positive interval", {},
                        "Pass NULL to keep the session's own lock_timeout.");
    return *r.rows[0][0] + "ms";
}

int interval_sign(SpiSession& spi, const std::string& interval)
{
    auto r = spi.query_saved(
        "SELECT CASE WHEN $1::pg_catalog.interval OPERATOR(pg_catalog.>) '0'::pg_catalog.interval THEN '1'"
        " WHEN $1::pg_catalog.interval OPERATOR(pg_catalog.<) '0'::pg_catalog.interval THEN '-1' ELSE '0' END",
        {Param::of_text(interval)});
    return std::stoi(r.rows.at(0).at(0).value_or("0"));
}

std::string rows_as_json_array(SpiSession& spi, const std::string& query)
{
    spi.connect();
    SPIPlanPtr plan = pg_call([&]() noexcept { return SPI_prepare(query.c_str(), 0, nullptr); });
    if (plan == nullptr)
        check_spi(SPI_result, "SPI_prepare");
    if (!pg_call([&]() noexcept { return SPI_is_cursor_plan(plan); })) {
        // No rows to return (a plain INSERT, a DO block...): run it.
        const int rc = pg_call([&]() noexcept { return SPI_execute_plan(plan, nullptr, nullptr, false, 0); });
        check_spi(rc, "SPI_execute_plan");
        return "[]";
    }
    // The rows of the statement itself, each made jsonb by to_jsonb(record)
    // here: wrapping it as WITH q AS (query) SELECT jsonb_agg(...) failed
    // for a query whose own WITH holds an INSERT, UPDATE or DELETE ("must
    // be at the top level"). The text is jsonb_agg's: [row, row].
    const int rc = pg_call([&]() noexcept { return SPI_execute_plan(plan, nullptr, nullptr, false, 0); });
    check_spi(rc, "SPI_execute_plan");
    StringInfoData text;
    pg_call([&]() noexcept {
        SPITupleTable* table = SPI_tuptable;
        TupleDesc desc = BlessTupleDesc(table->tupdesc);
        FmgrInfo to_jsonb;
        fmgr_info(F_TO_JSONB, &to_jsonb);
        // to_jsonb(anyelement) reads its argument's type from the call.
        fmgr_info_set_expr(reinterpret_cast<Node*>(makeFuncExpr(F_TO_JSONB, JSONBOID,
                                                                list_make1(makeNullConst(RECORDOID, -1, InvalidOid)),
                                                                InvalidOid, InvalidOid, COERCE_EXPLICIT_CALL)),
                           &to_jsonb);
        initStringInfo(&text);
        for (uint64 i = 0; i < SPI_processed; ++i) {
            const Datum row = heap_copy_tuple_as_datum(table->vals[i], desc);
            Jsonb* json = DatumGetJsonbP(FunctionCall1(&to_jsonb, row));
            if (i > 0)
                appendStringInfoString(&text, ", ");
            JsonbToCString(&text, &json->root, VARSIZE(json));
        }
        SPI_freetuptable(table);
    });
    // Copied out of PostgreSQL's memory outside pg_call (a C++ allocation
    // may throw); the buffer goes with the SPI connection.
    return "[" + std::string(text.data, static_cast<std::size_t>(text.len)) + "]";
}

}  // namespace pg_idempotent::pg
