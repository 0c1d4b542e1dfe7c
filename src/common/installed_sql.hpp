// What the installed SQL objects of the extension provide.
//
// The module and the SQL objects are upgraded in two steps: the package
// replaces the module, and ALTER EXTENSION pg_idempotent UPDATE brings the
// SQL objects up to it, later. In between, the newer module keeps working
// as the older version did wherever it can (no run history, no record of
// written units, ...) and refuses with a clear error where it cannot. Every
// function asks here, in one place, instead of probing the catalog itself.
#pragma once
#include <string>

namespace pg_idempotent {

enum class SqlFeature {
    kRunLog,                // idem.run_log (0.4.0)
    kRunLogRoleOid,         // idem.run_log.role, the role by OID (0.7.0)
    kWrittenUnits,          // idem.written_units (0.4.0)
    kWrittenUnitPreimages,  // idem.written_units.query_digest (0.5.0)
    kWrittenUnitSamples,    // idem.written_units.query_sample (0.6.0)
    kDatasetRegistry,       // idem.datasets.view_relid and owner (0.7.0)
    kDigestAggregate,       // idem._digest_agg (0.4.0)
    kSwapCarryFunctions,    // idem._acl_statements and its siblings (0.8.0)
    kConflictTally,         // idem._count_conflict (0.8.0)
    kRepeatHashes,          // idem._repeat_hashes (0.8.0)
    kRowHash,               // idem._row_hash (0.8.0)
    kKeyTokens,             // idem.keys.token, the fencing tokens (0.8.0)
    kGrantRows,             // idem.usage_grant_rows; usage_grants a view (0.8.0)
    kKeyIds,                // idem.keys keyed by (scope, key), long_key (0.8.0)
    kTombstonesOf,          // idem._tombstones_of, _tombstones renamed (0.9.0)
    kRunLogParams,          // idem.run_log.params, the bound parameters (0.9.0)
    kDatasetHolds,          // idem.datasets.held_at, a hold on publish (0.9.0)
    kVersionSamples,        // idem.dataset_versions.row_sample (0.9.0)
    kImagesEqual,           // idem._images_equal (0.9.0)
};

// Whether the installed SQL objects have the feature (a syscache look-up:
// cheap, and right again after an ALTER EXTENSION ... UPDATE in the session).
bool sql_has(SqlFeature feature);

// Whether merge, append and snapshot compare rows through idem._images_equal
// (core/row_match.hpp): the installed SQL objects have it, and the target is
// not on Citus, whose workers' SQL objects are not looked at here.
bool compares_images_pairwise(bool citus);

// 55000 "<what> needs the SQL objects of pg_idempotent <version>" with a
// HINT to run ALTER EXTENSION pg_idempotent UPDATE, when they lack it.
void require_sql(SqlFeature feature, const std::string& what);

}  // namespace pg_idempotent
