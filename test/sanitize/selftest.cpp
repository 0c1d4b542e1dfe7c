// Two deliberate bugs, built with the same sanitizer flags as the module and
// called in the sanitized server at the end of every `make sanitize`: the run
// fails unless ASan reports the first and UBSan the second. This proves, each
// time, the whole chain the suite relies on (compiler flags, the preloaded
// runtime in a forked backend, ASAN_OPTIONS/UBSAN_OPTIONS, the report files
// the run inspects), so "no report" after the suites means something.
//
// A test fixture, not part of the extension: it is never installed, and it is
// loaded by absolute path from the run's own directory.

#include <cstdlib>

extern "C" {
#include "postgres.h"

#include "fmgr.h"
}

// PGDLLEXPORT is empty on Linux; the library is built without
// -fvisibility=hidden, so these symbols are exported as they are.
extern "C" {

PG_MODULE_MAGIC;

PG_FUNCTION_INFO_V1(sanitize_selftest_heap_overflow);
PG_FUNCTION_INFO_V1(sanitize_selftest_shift);

// Writes buf[index] of an 8-byte malloc'd buffer: index 8 is one past the end,
// a heap-buffer-overflow for ASan. The index comes from SQL, and malloc is
// called through a volatile pointer, so the compiler sees neither the index
// nor the size (UBSan's object-size check would otherwise report the write
// first, and this probe would not test ASan). malloc, not new: nothing here
// may throw into PostgreSQL's frames.
Datum sanitize_selftest_heap_overflow(PG_FUNCTION_ARGS)
{
    const int32 index = PG_GETARG_INT32(0);
    void* (*volatile allocate)(size_t) = std::malloc;
    volatile char* buf = static_cast<volatile char*>(allocate(8));
    if (buf == nullptr)
        PG_RETURN_INT32(-1);
    buf[0] = 0;
    buf[index] = 1;
    const int32 first = buf[0];
    std::free(const_cast<char*>(buf));
    PG_RETURN_INT32(first);
}

// 1 << 40 on a 32-bit int: undefined behaviour that UBSan reports even under
// -fwrapv (which PostgreSQL's flags add, and which makes signed overflow
// defined, so it cannot serve as the probe).
Datum sanitize_selftest_shift(PG_FUNCTION_ARGS)
{
    const int32 shift = PG_GETARG_INT32(0);
    PG_RETURN_INT32(1 << shift);
}

}  // extern "C"
