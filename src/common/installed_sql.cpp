#include "common/installed_sql.hpp"

#include "pg/catalog.hpp"
#include "pg/errors.hpp"

namespace pg_idempotent {

namespace {

// The object whose presence says the feature is installed, and the version
// that brought it.
struct Probe {
    const char* table;   // in schema idem; nullptr for a function
    const char* column;  // nullptr: the table itself
    const char* function;
    const char* since;
};

Probe probe_of(SqlFeature feature)
{
    switch (feature) {
    case SqlFeature::kRunLog:
        return {"run_log", nullptr, nullptr, "0.4.0"};
    case SqlFeature::kRunLogRoleOid:
        return {"run_log", "role", nullptr, "0.7.0"};
    case SqlFeature::kWrittenUnits:
        return {"written_units", nullptr, nullptr, "0.4.0"};
    case SqlFeature::kWrittenUnitPreimages:
        return {"written_units", "query_digest", nullptr, "0.5.0"};
    case SqlFeature::kWrittenUnitSamples:
        return {"written_units", "query_sample", nullptr, "0.6.0"};
    case SqlFeature::kDatasetRegistry:
        return {"datasets", "view_relid", nullptr, "0.7.0"};
    case SqlFeature::kDigestAggregate:
        return {nullptr, nullptr, "_digest_agg", "0.4.0"};
    case SqlFeature::kSwapCarryFunctions:
        return {nullptr, nullptr, "_acl_statements", "0.8.0"};
    case SqlFeature::kConflictTally:
        return {nullptr, nullptr, "_count_conflict", "0.8.0"};
    case SqlFeature::kRepeatHashes:
        return {nullptr, nullptr, "_repeat_hashes", "0.8.0"};
    case SqlFeature::kRowHash:
        return {nullptr, nullptr, "_row_hash", "0.8.0"};
    case SqlFeature::kKeyTokens:
        return {"keys", "token", nullptr, "0.8.0"};
    case SqlFeature::kGrantRows:
        return {"usage_grant_rows", nullptr, nullptr, "0.8.0"};
    case SqlFeature::kKeyIds:
        return {"keys", "long_key", nullptr, "0.8.0"};
    case SqlFeature::kTombstonesOf:
        return {nullptr, nullptr, "_tombstones_of", "0.9.0"};
    case SqlFeature::kRunLogParams:
        return {"run_log", "params", nullptr, "0.9.0"};
    case SqlFeature::kDatasetHolds:
        return {"datasets", "held_at", nullptr, "0.9.0"};
    case SqlFeature::kVersionSamples:
        return {"dataset_versions", "row_sample", nullptr, "0.9.0"};
    case SqlFeature::kImagesEqual:
        return {nullptr, nullptr, "_images_equal", "0.9.0"};
    }
    return {nullptr, nullptr, nullptr, "?"};
}

}  // namespace

bool sql_has(SqlFeature feature)
{
    const Probe p = probe_of(feature);
    if (p.function != nullptr)
        return pg::function_exists("idem", p.function);
    if (p.table == nullptr)
        return false;
    return p.column != nullptr ? pg::column_exists("idem", p.table, p.column) : pg::relation_exists("idem", p.table);
}

bool compares_images_pairwise(bool citus)
{
    return !citus && sql_has(SqlFeature::kImagesEqual);
}

void require_sql(SqlFeature feature, const std::string& what)
{
    if (sql_has(feature))
        return;
    throw pg::UserError(pg::sqlstate::kObjectNotInPrerequisiteState,
                        what + " needs the SQL objects of pg_idempotent " + probe_of(feature).since + " or later",
                        "The module was upgraded; the extension's SQL objects in this database were not.",
                        "Run ALTER EXTENSION pg_idempotent UPDATE;");
}

}  // namespace pg_idempotent
