// Params as SPI takes them (boundary-internal: spi.cpp and catalog.cpp).
#pragma once

#include "pg/postgres.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent::pg {

// Parameters converted to what SPI takes; the arrays live in the current
// memory context (the SPI procedure context once connected).
struct SpiArgs {
    int count = 0;
    Oid* types = nullptr;
    Datum* values = nullptr;
    char* nulls = nullptr;  // ' ' or 'n', as SPI_execute_with_args wants
};

SpiArgs convert_params(const Params& params);

}  // namespace pg_idempotent::pg
