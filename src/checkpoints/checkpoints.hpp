// Checkpoints that travel with the data (api.md section 3, second block):
// typed watermarks, compare-and-set, job locks, run_once, the window ledger.
#pragma once

#include <optional>
#include <string>

#include "pg/spi.hpp"
#include "pg/values.hpp"

namespace pg_idempotent {

std::optional<std::string> watermark_text(const std::string& job);
// The stored watermark parsed as as_type (42804 if the job keeps another type).
std::optional<pg::TypedValue> watermark_typed(const std::string& job, std::uint32_t as_type);
std::optional<std::string> lock_job(const std::string& job, bool nowait);
void advance(const std::string& job, const pg::TypedValue& value, const std::optional<std::string>& expected);
void rewind(const std::string& job, const pg::TypedValue& value);
bool run_once(const std::string& job, const pg::TypedValue& value, const std::string& query);
void mark_window(const std::string& job, const pg::TypedValue& lo, const pg::TypedValue& hi);
void windows(const pg::ResultSet& out, const std::string& job);
void gaps(const pg::ResultSet& out, const std::string& job, const pg::TypedValue& from, const pg::TypedValue& to,
          const pg::TypedValue& step);

}  // namespace pg_idempotent
