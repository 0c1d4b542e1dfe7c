#include "pg/guard.hpp"

#include <cstdio>
#include <cstring>
#include <new>

extern "C" {
#include "access/xact.h"
#include "utils/lsyscache.h"
}

namespace pg_idempotent::pg {

namespace {

// The context of the outermost active entry; nested entries (a function of
// ours called from SQL that another of ours runs) keep the outer one, which
// lives at least as long.
MemoryContext g_entry_context = nullptr;
// The subtransaction that was current when g_entry_context was set.
SubTransactionId g_entry_subxact = InvalidSubTransactionId;

void forget_frames_at_xact_end();
void forget_frames_at_subxact_abort(SubTransactionId my_subid);

// run_entry resets g_entry_context when its call ends. An ERROR that
// longjmps past run_entry (raised by a shim's own PostgreSQL call, outside
// any pg_call) skips that reset, and the context it names is freed by the
// abort that follows: forget it then, at the end of the transaction or of
// the subtransaction the entry began in, or a later call would copy its
// errors into freed memory.
void forget_entry_at_xact_end(XactEvent event, void*)
{
    switch (event) {
    case XACT_EVENT_COMMIT:
    case XACT_EVENT_PARALLEL_COMMIT:
    case XACT_EVENT_ABORT:
    case XACT_EVENT_PARALLEL_ABORT:
    case XACT_EVENT_PREPARE:
        g_entry_context = nullptr;
        g_entry_subxact = InvalidSubTransactionId;
        forget_frames_at_xact_end();
        break;
    default:
        break;
    }
}

void forget_entry_at_subxact_abort(SubXactEvent event, SubTransactionId my_subid, SubTransactionId, void*)
{
    // Subtransaction ids grow: an entry that began in this subtransaction or
    // in one below it has an id at least as large. An entry that began
    // further out keeps its context, which the abort does not free.
    if (event != SUBXACT_EVENT_ABORT_SUB)
        return;
    forget_frames_at_subxact_abort(my_subid);
    if (g_entry_context != nullptr && g_entry_subxact >= my_subid) {
        g_entry_context = nullptr;
        g_entry_subxact = InvalidSubTransactionId;
    }
}

// The SQL-callable calls running now, innermost last, each with the step
// its errors name (Step). Kept here rather than on the stack: an ERROR that
// longjmps past run_entry leaves its frame behind, and the end of the
// (sub)transaction forgets it, as it does g_entry_context.
struct EntryFrame {
    const char* function;  // "idem.merge_query", from entry_name's cache
    const char* step;
    SubTransactionId subxact;
};
constexpr int kMaxEntryDepth = 64;
EntryFrame g_frames[kMaxEntryDepth];
int g_depth = 0;
// pg::notice and pg::warning, and a UserError's ERROR: the extension's own
// messages need no line of its calls (outer calls included: idem._raise
// inside a merge's statement). An ERROR longjmps with it set: whoever
// catches it resets it (capture_error, the (sub)transaction's abort, the
// next entry), before any other report.
bool g_quiet = false;

void forget_frames_at_xact_end()
{
    g_depth = 0;
    g_quiet = false;
}

void forget_frames_at_subxact_abort(SubTransactionId my_subid)
{
    g_quiet = false;
    while (g_depth > 0 && g_frames[g_depth - 1].subxact >= my_subid)
        --g_depth;
}

// The schema-qualified name of a function of ours, by OID, looked up once
// per backend (catalog access is not allowed in an error callback, which
// may run in an aborted transaction). A renamed function keeps its old
// name here until the backend ends: these names only label errors.
const char* entry_name(Oid function)
{
    struct Name {
        Oid oid;
        char text[2 * NAMEDATALEN + 2];
    };
    constexpr int kNames = 128;
    static Name names[kNames];
    static int used = 0;
    for (int i = 0; i < used; ++i)
        if (names[i].oid == function)
            return names[i].text;
    const char* const name = OidIsValid(function) ? get_func_name(function) : nullptr;
    if (name == nullptr)
        return "pg_idempotent";
    const char* const schema = get_namespace_name(get_func_namespace(function));
    Name& slot = names[used < kNames ? used++ : kNames - 1];
    slot.oid = function;
    snprintf(slot.text, sizeof slot.text, "%s.%s", schema != nullptr ? schema : "?", name);
    return slot.text;
}

void report_entry(void* arg)
{
    const int index = static_cast<int>(reinterpret_cast<intptr_t>(arg));
    if (g_quiet || index >= g_depth)
        return;
    const EntryFrame& f = g_frames[index];
    if (f.step != nullptr)
        errcontext("%s: %s", f.function, f.step);
    else
        errcontext("%s", f.function);
}

// A C++ error's text is copied here inside the catch block (no allocation, so
// nothing can throw or longjmp there) and reported after it has ended.
struct PendingError {
    char code[6];
    char message[2048];
    char detail[4096];
    char hint[1024];
};
PendingError g_pending;

void copy_text(char* dst, std::size_t size, const char* src) noexcept
{
    snprintf(dst, size, "%s", src == nullptr ? "" : src);
}

// A text cut to its buffer above may end inside a multibyte character; cut
// it back to whole characters of the database encoding, so the client never
// receives an invalid string. Called after the catch block (PostgreSQL code).
void clip_to_characters(char* text)
{
    const int len = static_cast<int>(strlen(text));
    text[pg_mbcliplen(text, len, len)] = '\0';
}

}  // namespace

std::string error_sqlstate(const PgError& error)
{
    return std::string(unpack_sql_state(error.data()->sqlerrcode));
}

std::string error_message(const PgError& error)
{
    return error.data()->message != nullptr ? error.data()->message : "";
}

std::string error_detail(const PgError& error)
{
    return error.data()->detail != nullptr ? error.data()->detail : "";
}

void register_transaction_callbacks()
{
    RegisterXactCallback(forget_entry_at_xact_end, nullptr);
    RegisterSubXactCallback(forget_entry_at_subxact_abort, nullptr);
}

bool is_outermost_entry() noexcept
{
    return g_entry_context == CurrentMemoryContext;
}

MemoryContext error_copy_context() noexcept
{
    return g_entry_context != nullptr ? g_entry_context : CurrentMemoryContext;
}

ErrorData* capture_error(MemoryContext restore_to) noexcept
{
    // CopyErrorData must not run in ErrorContext; copy into the entry's
    // context, then leave the error state clean for the C++ unwinding.
    g_quiet = false;
    MemoryContextSwitchTo(error_copy_context());
    ErrorData* data = CopyErrorData();
    FlushErrorState();
    MemoryContextSwitchTo(restore_to);
    return data;
}

Datum run_entry(FunctionCallInfo fcinfo, Datum (*thunk)(void*, FunctionCallInfo), void* ctx)
{
    MemoryContext const outer_entry = g_entry_context;
    SubTransactionId const outer_subxact = g_entry_subxact;
    MemoryContext const entry_cxt = CurrentMemoryContext;
    if (g_entry_context == nullptr) {
        g_entry_context = entry_cxt;
        g_entry_subxact = GetCurrentSubTransactionId();
    }

    // The call's CONTEXT line (report_entry); past kMaxEntryDepth nested
    // calls, the deeper ones go without.
    g_quiet = false;
    const char* const function = entry_name(fcinfo->flinfo != nullptr ? fcinfo->flinfo->fn_oid : InvalidOid);
    const int depth = g_depth;
    ErrorContextCallback callback;
    const bool framed = depth < kMaxEntryDepth;
    if (framed) {
        g_frames[depth] = EntryFrame{function, nullptr, GetCurrentSubTransactionId()};
        g_depth = depth + 1;
        callback.callback = report_entry;
        callback.arg = reinterpret_cast<void*>(static_cast<intptr_t>(depth));
        callback.previous = error_context_stack;
        error_context_stack = &callback;
    }

    enum class Outcome { kOk, kPgError, kUserError, kOutOfMemory, kCppError } outcome = Outcome::kOk;
    ErrorData* pg_error = nullptr;
    Datum result = 0;

    try {
        result = thunk(ctx, fcinfo);
    } catch (const PgError& e) {
        outcome = Outcome::kPgError;
        pg_error = e.data();
    } catch (const UserError& e) {
        outcome = Outcome::kUserError;
        copy_text(g_pending.code, sizeof g_pending.code, e.code());
        copy_text(g_pending.message, sizeof g_pending.message, e.message().c_str());
        copy_text(g_pending.detail, sizeof g_pending.detail, e.detail().c_str());
        copy_text(g_pending.hint, sizeof g_pending.hint, e.hint().c_str());
    } catch (const std::bad_alloc&) {
        outcome = Outcome::kOutOfMemory;
    } catch (const std::exception& e) {
        outcome = Outcome::kCppError;
        copy_text(g_pending.message, sizeof g_pending.message, e.what());
    } catch (...) {
        outcome = Outcome::kCppError;
        copy_text(g_pending.message, sizeof g_pending.message, "unknown C++ exception");
    }

    // Every C++ object of the call is gone now; PostgreSQL may longjmp.
    // The extension's own errors (UserError) need no CONTEXT line.
    if (framed) {
        error_context_stack = callback.previous;
        g_depth = depth;
    }
    g_entry_context = outer_entry;
    g_entry_subxact = outer_subxact;
    MemoryContextSwitchTo(entry_cxt);

    switch (outcome) {
    case Outcome::kOk:
        break;
    case Outcome::kPgError:
        ReThrowError(pg_error);
        break;
    case Outcome::kUserError: {
        clip_to_characters(g_pending.message);
        clip_to_characters(g_pending.detail);
        clip_to_characters(g_pending.hint);
        const char* c = g_pending.code;
        g_quiet = true;
        ereport(ERROR, (errcode(MAKE_SQLSTATE(c[0], c[1], c[2], c[3], c[4])), errmsg_internal("%s", g_pending.message),
                        g_pending.detail[0] ? errdetail_internal("%s", g_pending.detail) : 0,
                        g_pending.hint[0] ? errhint("%s", g_pending.hint) : 0));
        break;
    }
    case Outcome::kOutOfMemory:
        ereport(ERROR, (errcode(ERRCODE_OUT_OF_MEMORY), errmsg("out of memory in pg_idempotent"),
                        errhint("Run the statement on a smaller batch, or give the server more memory.")));
        break;
    case Outcome::kCppError:
        clip_to_characters(g_pending.message);
        ereport(ERROR,
                (errcode(ERRCODE_INTERNAL_ERROR), errmsg("internal error in pg_idempotent: %s", g_pending.message),
                 errhint("A bug in pg_idempotent: report it with the statement that raised it.")));
        break;
    }
    return result;
}

Step::Step(const char* what) noexcept : previous_(g_depth > 0 ? g_frames[g_depth - 1].step : nullptr)
{
    if (g_depth > 0)
        g_frames[g_depth - 1].step = what;
}

Step::~Step()
{
    if (g_depth > 0)
        g_frames[g_depth - 1].step = previous_;
}

namespace {
// The extension's own NOTICE or WARNING: no CONTEXT line of its call (g_quiet
// is reset even if the report fails: pg_call catches that).
template <typename F>
void report_quietly(F&& report)
{
    const bool outer = g_quiet;
    g_quiet = true;
    try {
        pg_call(std::forward<F>(report));
    } catch (...) {
        g_quiet = outer;
        throw;
    }
    g_quiet = outer;
}
}  // namespace

void notice(const std::string& message, const std::string& hint)
{
    report_quietly([&]() noexcept {
        ereport(NOTICE, (errmsg_internal("%s", message.c_str()), hint.empty() ? 0 : errhint("%s", hint.c_str())));
    });
}

void warning(const std::string& message, const std::string& detail)
{
    report_quietly([&]() noexcept {
        ereport(WARNING, (errmsg_internal("%s", message.c_str()),
                          detail.empty() ? 0 : errdetail_internal("%s", detail.c_str())));
    });
}

}  // namespace pg_idempotent::pg
