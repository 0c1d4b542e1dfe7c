#include "pg/guard_probe.hpp"

#include <new>
#include <stdexcept>
#include <vector>

#include "pg/errors.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

namespace {

// Destructor runs since the backend started: a PostgreSQL ERROR that skipped
// a destructor would leave this short of the number of objects created.
std::int64_t g_destructed = 0;

struct Witness {
    std::string payload = std::string(256, 'x');  // owns heap memory
    ~Witness() { ++g_destructed; }
};

}  // namespace

std::int64_t boundary_probe(const std::string& action, const std::optional<std::string>& sql)
{
    if (action == "destructed")
        return g_destructed;
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
            throw pg::UserError(pg::sqlstate::kNullValueNotAllowed, "sql must not be NULL");
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
    throw pg::UserError(pg::sqlstate::kInvalidParameterValue, "unknown boundary probe action \"" + action + "\"",
                        {}, "Use destructed, throw, bad_alloc, user_error, run or loop.");
}

}  // namespace pg_idempotent
