#include "merge/tombstones.hpp"

#include "pg/errors.hpp"
#include "pg/roles.hpp"
#include "pg/spi.hpp"

namespace pg_idempotent {

using pg::Param;

void tombstones(const pg::ResultSet& out, std::uint32_t target)
{
    pg::require_whole_table_privilege(target, pg::TablePrivilege::kSelect, "reading the tombstones of a table");
    pg::SpiSession spi;
    pg::as_extension_owner([&] {
        spi.return_rows(out,
                        "SELECT t.key_digest, t.version FROM idem.tombstones t"
                        " WHERE t.target OPERATOR(pg_catalog.=) $1::pg_catalog.oid::pg_catalog.regclass",
                        {Param::of_oid(target)}, true);
    });
    spi.finish();
}

std::int64_t put_tombstones(std::uint32_t target, const pg::TypedValue& key_digests, const pg::TypedValue& key_data,
                            const pg::TypedValue& versions)
{
    pg::require_whole_table_privilege(target, pg::TablePrivilege::kDelete, "recording the tombstones of a table");
    if (key_digests.is_null)
        return 0;
    pg::SpiSession spi;
    std::uint64_t written = 0;
    // The merge statement only asks for tombstones at least as new as what
    // it replaces (it compared the versions, as the caller).
    pg::as_extension_owner([&] {
        written = spi.execute(
            "INSERT INTO idem.tombstones AS t (target, key_digest, key_data, version)"
            " SELECT $1::pg_catalog.oid::pg_catalog.regclass, u.d, u.k, u.v"
            " FROM ROWS FROM (pg_catalog.unnest($2::pg_catalog.uuid[]), pg_catalog.unnest($3::pg_catalog.jsonb[]),"
            "                 pg_catalog.unnest($4::pg_catalog.text[])) AS u(d, k, v)"
            // idem.tombstones is shared: a key and a version of at most 8 kB
            // each, as for idempotency keys.
            " WHERE (pg_catalog.octet_length(u.k::pg_catalog.text) OPERATOR(pg_catalog.<=) 8192"
            "        AND COALESCE(pg_catalog.octet_length(u.v), 0) OPERATOR(pg_catalog.<=) 8192)"
            "  OR idem._raise('54000', 'the key or version of a deleted row is more than 8192 bytes',"
            "                 'Tombstones are stored in idem.tombstones, which every table''s merges share.',"
            "                 'Key the table by an identifier of the row (an id, a natural key) and version it by a"
            " number or a timestamp.')"
            " ON CONFLICT (target, key_digest) DO UPDATE"
            " SET version = EXCLUDED.version, key_data = EXCLUDED.key_data, deleted_at = pg_catalog.now()",
            {Param::of_oid(target), Param::of_value(key_digests), Param::of_value(key_data),
             Param::of_value(versions)});
    });
    spi.finish();
    return static_cast<std::int64_t>(written);
}

std::int64_t purge_tombstones(std::uint32_t target, const std::string& older_than)
{
    pg::require_whole_table_privilege(target, pg::TablePrivilege::kDelete, "purging the tombstones of a table");
    pg::SpiSession spi;
    std::uint64_t deleted = 0;
    pg::as_extension_owner([&] {
        deleted = spi.execute(
            "DELETE FROM idem.tombstones t"
            " WHERE t.target OPERATOR(pg_catalog.=) $1::pg_catalog.oid::pg_catalog.regclass"
            " AND t.deleted_at OPERATOR(pg_catalog.<) (pg_catalog.now() OPERATOR(pg_catalog.-) $2::pg_catalog.interval)",
            {Param::of_oid(target), Param::of_text(older_than)});
    });
    spi.finish();
    return static_cast<std::int64_t>(deleted);
}

}  // namespace pg_idempotent
