#include "overwrite/swap_publications.hpp"

#include "pg/values.hpp"

namespace pg_idempotent {

void carry_publications(pg::SpiSession& spi, const Partition& part, const pg::Relation& staging)
{
    pg::QueryResult r;
    // The row filter holds expressions: deparsed under the canonical
    // settings (partitions.hpp), as the swap's other definitions are.
    pg::with_canonical_settings([&] {
        r = spi.query(
            "SELECT pg_catalog.quote_ident(p.pubname::pg_catalog.text),"
            " (SELECT pg_catalog.string_agg(pg_catalog.quote_ident(a.attname::pg_catalog.text), ', ' ORDER BY a.attnum)"
            "   FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) pr.prrelid"
            "   AND a.attnum OPERATOR(pg_catalog.=) ANY (pr.prattrs::pg_catalog.int2[])),"
            " pg_catalog.pg_get_expr(pr.prqual, pr.prrelid)"
            " FROM pg_catalog.pg_publication_rel pr"
            " JOIN pg_catalog.pg_publication p ON p.oid OPERATOR(pg_catalog.=) pr.prpubid"
            " WHERE pr.prrelid OPERATOR(pg_catalog.=) $1 AND pg_catalog.pg_has_role(p.pubowner, 'USAGE')"
            " AND NOT EXISTS (SELECT FROM pg_catalog.pg_publication_rel s"
            "   WHERE s.prrelid OPERATOR(pg_catalog.=) $2 AND s.prpubid OPERATOR(pg_catalog.=) pr.prpubid)"
            " ORDER BY p.oid",
            {pg::Param::of_oid(part.rel.oid), pg::Param::of_oid(staging.oid)});
    });
    for (const auto& row : r.rows) {
        std::string sql = "ALTER PUBLICATION " + row.at(0).value_or("") + " ADD TABLE " + staging.qualified;
        if (row.at(1))
            sql += " (" + *row.at(1) + ")";
        if (row.at(2))
            sql += " WHERE (" + *row.at(2) + ")";
        spi.execute(sql);
    }
}

}  // namespace pg_idempotent
