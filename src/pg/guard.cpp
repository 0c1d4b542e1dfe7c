#include "pg/guard.hpp"

#include <cstdio>
#include <cstring>
#include <new>

extern "C" {
#include "access/xact.h"
}

namespace pg_idempotent::pg {

namespace {

// The context of the outermost active entry; nested entries (a function of
// ours called from SQL that another of ours runs) keep the outer one, which
// lives at least as long.
MemoryContext g_entry_context = nullptr;
// The subtransaction that was current when g_entry_context was set.
SubTransactionId g_entry_subxact = InvalidSubTransactionId;

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
    if (event == SUBXACT_EVENT_ABORT_SUB && g_entry_context != nullptr && g_entry_subxact >= my_subid) {
        g_entry_context = nullptr;
        g_entry_subxact = InvalidSubTransactionId;
    }
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

void notice(const std::string& message, const std::string& hint)
{
    pg_call([&]() noexcept {
        ereport(NOTICE, (errmsg_internal("%s", message.c_str()), hint.empty() ? 0 : errhint("%s", hint.c_str())));
    });
}

void warning(const std::string& message, const std::string& detail)
{
    pg_call([&]() noexcept {
        ereport(WARNING, (errmsg_internal("%s", message.c_str()),
                          detail.empty() ? 0 : errdetail_internal("%s", detail.c_str())));
    });
}

}  // namespace pg_idempotent::pg
