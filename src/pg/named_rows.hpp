// A query's rows kept for the statements that follow it: a batch gathered
// once by the caller's rights and read by several statements of the
// extension owner's (checked, then inserted), without passing it through
// arrays or text.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "pg/spi.hpp"

struct Tuplestorestate;

namespace pg_idempotent::pg {

enum class NamedRowType { kText, kJsonb, kTimestamptz };

struct NamedRowColumn {
    std::string name;
    NamedRowType type;
};

// Runs `query` (by the current user's rights; it must return exactly
// `columns`, in that order and of those types: cast them) in spi's
// connection, keeps its rows (in memory up to budget_kb, past it in a
// temporary file) and registers them as the relation `name`, which the
// connection's later statements read by that unqualified name, as a
// trigger reads its transition table (an ephemeral named relation: it
// hides any table of that name, whatever search_path says). The rows are
// detoasted as they are kept.
//
// Like SpiSession: release() frees the rows on the normal path, before
// spi.finish() (closing the temporary file may raise, so never from a
// destructor). A NamedRows left by an exception is freed by the abort
// that the exception becomes: its memory with SPI's, its temporary file
// with the resource owner (docs/boundary.md).
class NamedRows {
public:
    NamedRows(SpiSession& spi, std::string name, const std::vector<NamedRowColumn>& columns, const std::string& query,
              const Params& params, int budget_kb);
    ~NamedRows() = default;
    NamedRows(const NamedRows&) = delete;
    NamedRows& operator=(const NamedRows&) = delete;

    std::int64_t rows() const { return rows_; }
    void release();

private:
    std::string name_;
    Tuplestorestate* store_ = nullptr;
    std::int64_t rows_ = 0;
};

}  // namespace pg_idempotent::pg
