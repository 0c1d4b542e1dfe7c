// The two guards of the C++/PostgreSQL boundary (docs/boundary.md).
//
//   cpp_entry(fcinfo, body)  PostgreSQL -> C++. Every SQL-callable shim runs its
//                            body through it. No C++ exception leaves it; a
//                            captured PostgreSQL error is re-raised unchanged,
//                            a C++ one reported with ereport, both only after
//                            the catch block has ended and every destructor ran.
//   pg_call(fn)              C++ -> PostgreSQL. Any frame that owns an object
//                            with a destructor calls PostgreSQL only through it:
//                            a longjmp from an ERROR stops inside, becomes a
//                            PgError holding the ErrorData, and unwinds as C++.
//
// fn passed to pg_call must be declared noexcept (`[&]() noexcept { ... }`):
// a C++ exception thrown inside PG_TRY would skip PG_END_TRY and leave
// PostgreSQL's exception stack pointing into a dead frame. A static_assert
// enforces it: `pg_call([] { throw 1; })` does not compile ("the function
// given to pg_call must be noexcept"), and a noexcept lambda that throws all
// the same ends in std::terminate, never in a corrupted backend.
#pragma once

#include <type_traits>
#include <utility>

#include "pg/errors.hpp"
#include "pg/postgres.hpp"
#include "pg/step.hpp"

namespace pg_idempotent::pg {

// Where pg_call copies a caught ErrorData: the memory context that was current
// when the outermost SQL-callable entry began, which outlives every SPI
// connection the call makes and so is still there when cpp_entry re-raises.
MemoryContext error_copy_context() noexcept;

// Registers the transaction callbacks that forget the outermost entry's
// context when its (sub)transaction ends (called once, from _PG_init).
void register_transaction_callbacks();

// Whether the current memory context is the one error_copy_context() names,
// i.e. the caller is the outermost active entry (for the boundary probe).
bool is_outermost_entry() noexcept;

// Captures the current PostgreSQL error (inside PG_CATCH): copies it, flushes
// the error state and restores the caller's memory context.
ErrorData* capture_error(MemoryContext restore_to) noexcept;

template <typename F>
auto pg_call(F&& fn) -> decltype(fn())
{
    using R = decltype(fn());
    static_assert(noexcept(fn()), "the function given to pg_call must be noexcept: it runs inside PG_TRY");
    MemoryContext const caller_cxt = CurrentMemoryContext;
    ErrorData* volatile caught = nullptr;
    if constexpr (std::is_void_v<R>) {
        PG_TRY();
        {
            fn();
        }
        PG_CATCH();
        {
            caught = capture_error(caller_cxt);
        }
        PG_END_TRY();
        if (caught != nullptr)
            throw PgError(caught);
    } else {
        // R is a plain value (Datum, pointer, integer): no destructor to skip.
        static_assert(std::is_trivially_copyable_v<R>, "pg_call returns plain values only");
        R result{};
        R* volatile out = &result;
        PG_TRY();
        {
            *out = fn();
        }
        PG_CATCH();
        {
            caught = capture_error(caller_cxt);
        }
        PG_END_TRY();
        if (caught != nullptr)
            throw PgError(caught);
        return result;
    }
}

// Runs body() -> Datum for a SQL-callable function. Defined out of line so the
// try/catch frame holds nothing with a destructor.
Datum run_entry(FunctionCallInfo fcinfo, Datum (*thunk)(void*, FunctionCallInfo), void* ctx);

template <typename F>
Datum cpp_entry(FunctionCallInfo fcinfo, F&& body)
{
    auto thunk = [](void* ctx, FunctionCallInfo fc) -> Datum {
        (void)fc;
        return (*static_cast<std::remove_reference_t<F>*>(ctx))();
    };
    return run_entry(fcinfo, thunk, static_cast<void*>(&body));
}

// CHECK_FOR_INTERRUPTS for C++ loops: a cancel or statement_timeout becomes a
// PgError and unwinds the loop's objects before the ERROR reaches the client.
inline void check_for_interrupts()
{
    pg_call([]() noexcept { CHECK_FOR_INTERRUPTS(); });
}

}  // namespace pg_idempotent::pg
