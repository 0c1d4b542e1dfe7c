#include "overwrite/written_units.hpp"

#include "common/installed_sql.hpp"
#include "core/digest.hpp"
#include "core/sql_text.hpp"
#include "pg/roles.hpp"
#include "pg_native/stamp_scan.hpp"

namespace pg_idempotent {

namespace {

using pg::Param;

// Without the table (SQL objects older than the module) nothing is read or
// written: the partition is hashed every time. Without the preimage or the
// sample columns, records are kept and read without them.
bool installed()
{
    return sql_has(SqlFeature::kWrittenUnits);
}
bool keeps_preimages()
{
    return sql_has(SqlFeature::kWrittenUnitPreimages);
}
bool keeps_samples()
{
    return sql_has(SqlFeature::kWrittenUnitSamples);
}

}  // namespace

// Reading xmin and cmin needs SELECT on the whole table, which column
// privileges do not give. Checked as the caller, who then reads them.
bool may_read_stamps(pg::SpiSession& spi, const pg::Relation& unit)
{
    auto allowed =
        spi.query("SELECT pg_catalog.has_table_privilege($1, 'SELECT')::pg_catalog.text", {Param::of_oid(unit.oid)});
    return allowed.rows.at(0).at(0).value_or("") == "true";
}

bool records_query_samples()
{
    return installed() && keeps_preimages() && keeps_samples();
}

std::string unit_shape(const pg::Relation& parent, const pg::Relation& unit)
{
    std::string shape;
    for (const auto& p : parent.columns) {
        if (p.generated != '\0')
            continue;
        const pg::Column* found = nullptr;
        for (const auto& c : unit.columns)
            if (c.name == p.name)
                found = &c;
        if (found == nullptr)
            return "";  // not the parent's columns: never matches a record
        shape += std::to_string(found->number) + ":" + std::to_string(found->type_oid) + ":" +
                 std::to_string(found->typmod) + ";";
    }
    return shape;
}

std::optional<WrittenUnit> witnessed_unit(pg::SpiSession& spi, const pg::Relation& unit, const std::string& shape)
{
    if (shape.empty() || !installed())
        return std::nullopt;
    const bool preimages = keeps_preimages();
    const bool samples = preimages && keeps_samples();
    pg::QueryResult record;
    pg::as_extension_owner([&] {
        record = spi.query_saved(
            std::string("SELECT w.digest, w.row_count::pg_catalog.text, w.row_xmin::pg_catalog.text,"
                        " w.row_cmin::pg_catalog.text, ") +
                (preimages ? "w.query_shape, w.query_digest" : "NULL::pg_catalog.text, NULL::pg_catalog.text") +
                (samples ? ", pg_catalog.encode(w.query_sample, 'hex')" : ", NULL::pg_catalog.text") +
                " FROM idem.written_units w"
                " WHERE w.relid OPERATOR(pg_catalog.=) $1 AND w.shape OPERATOR(pg_catalog.=) $2"
                // No 32-bit xid reused since: fewer than 2^31 transactions later.
                "   AND pg_catalog.pg_snapshot_xmax(pg_catalog.pg_current_snapshot())::pg_catalog.text::pg_catalog.numeric"
                "       OPERATOR(pg_catalog.-) w.written_by::pg_catalog.text::pg_catalog.numeric"
                "       OPERATOR(pg_catalog.<) 2147483648",
            {Param::of_oid(unit.oid), Param::of_text(shape)});
    });
    if (record.rows.empty() || !may_read_stamps(spi, unit))
        return std::nullopt;
    const auto& r = record.rows.at(0);
    const std::string digest = r.at(0).value_or("");
    const std::string expected = r.at(1).value_or("-1");
    // The rows the caller sees, and how many carry the stamp: a scan of the
    // rows' headers (see pg_native/stamp_scan.hpp).
    if (r.at(2).has_value() && r.at(3).has_value()) {
        const auto seen = pg::count_stamped_rows(unit.oid, static_cast<std::uint32_t>(std::stoul(*r.at(2))),
                                                 static_cast<std::uint32_t>(std::stoul(*r.at(3))));
        if (!seen || std::to_string(seen->rows) != expected || std::to_string(seen->stamped) != expected)
            return std::nullopt;
    } else {
        // No row was written: the record holds while there is none.
        auto seen = spi.query("SELECT pg_catalog.count(*)::pg_catalog.text FROM ONLY " + unit.qualified);
        if (seen.rows.at(0).at(0).value_or("") != expected)
            return std::nullopt;
    }
    if (std::to_string(core::digest_text_count(digest)) != expected)
        return std::nullopt;
    WrittenUnit written;
    written.digest = digest;
    // The same rows, so as many query rows as stored ones.
    if (r.at(4).has_value() && r.at(5).has_value() && std::to_string(core::digest_text_count(*r.at(5))) == expected)
        written.preimage = QueryPreimage{*r.at(4), *r.at(5), r.at(6).value_or("")};
    return written;
}

void record_written_unit(pg::SpiSession& spi, const pg::Relation& unit, const std::string& shape,
                         const std::string& digest, const std::optional<QueryPreimage>& preimage,
                         const std::optional<RowStamp>& stamp)
{
    if (!installed())
        return;
    // The stamp of the rows just inserted: they are all the rows there are.
    // (Read as the caller, who wrote them.) Without it, only the old record
    // goes.
    const bool witnessed = !shape.empty() && may_read_stamps(spi, unit);
    std::optional<std::string> xmin;
    std::optional<std::string> cmin;
    if (witnessed && stamp) {
        xmin = std::to_string(stamp->xmin);
        cmin = std::to_string(stamp->cmin);
    } else if (witnessed) {
        auto first =
            spi.query("SELECT xmin::pg_catalog.text, cmin::pg_catalog.text FROM ONLY " + unit.qualified + " LIMIT 1");
        if (!first.rows.empty()) {
            xmin = first.rows.at(0).at(0);
            cmin = first.rows.at(0).at(1);
        }
    }
    pg::as_extension_owner([&] {
        // The unit's own record: its writers take turns under the unit's
        // lock, so this waits for no one else.
        spi.query_saved("DELETE FROM idem.written_units w WHERE w.relid OPERATOR(pg_catalog.=) $1",
                        {Param::of_oid(unit.oid)});
        // Records of relations that are gone (old partitions dropped by a
        // swap) go at the same time, so the table stays as small as the set
        // of partitions written; but only those no other transaction holds
        // (SKIP LOCKED): another role's open or prepared overwrite that is
        // cleaning them must not stall every overwrite in the database.
        spi.query_saved(
            "DELETE FROM idem.written_units w WHERE w.ctid OPERATOR(pg_catalog.=) ANY (ARRAY("
            "SELECT g.ctid FROM idem.written_units g WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class c"
            " WHERE c.oid OPERATOR(pg_catalog.=) g.relid) FOR UPDATE OF g SKIP LOCKED))");
        if (!witnessed)
            return;
        pg::Params values = {
            Param::of_oid(unit.oid), Param::of_text(shape),
            Param::of_text(digest),  Param::of_int8(static_cast<std::int64_t>(core::digest_text_count(digest))),
            Param::of_text(xmin),    Param::of_text(cmin)};
        if (!keeps_preimages()) {
            spi.query_saved(
                "INSERT INTO idem.written_units (relid, shape, digest, row_count, row_xmin, row_cmin, written_by)"
                " VALUES ($1, $2, $3, $4, $5::pg_catalog.xid, $6::pg_catalog.cid,"
                " pg_catalog.pg_current_xact_id())",
                values);
            return;
        }
        values.push_back(Param::of_text(preimage ? std::optional<std::string>(preimage->shape) : std::nullopt));
        values.push_back(Param::of_text(preimage ? std::optional<std::string>(preimage->digest) : std::nullopt));
        if (keeps_samples()) {
            values.push_back(Param::of_text(
                preimage && !preimage->sample.empty() ? std::optional<std::string>(preimage->sample) : std::nullopt));
            spi.query_saved(
                "INSERT INTO idem.written_units (relid, shape, digest, row_count, row_xmin, row_cmin,"
                " written_by, query_shape, query_digest, query_sample)"
                " VALUES ($1, $2, $3, $4, $5::pg_catalog.xid, $6::pg_catalog.cid,"
                " pg_catalog.pg_current_xact_id(), $7, $8, pg_catalog.decode($9, 'hex'))",
                values);
            return;
        }
        spi.query_saved(
            "INSERT INTO idem.written_units (relid, shape, digest, row_count, row_xmin, row_cmin, written_by,"
            " query_shape, query_digest)"
            " VALUES ($1, $2, $3, $4, $5::pg_catalog.xid, $6::pg_catalog.cid, pg_catalog.pg_current_xact_id(),"
            " $7, $8)",
            values);
    });
}

}  // namespace pg_idempotent
