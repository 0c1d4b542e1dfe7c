#include "overwrite/swap_losses.hpp"

#include "core/sql_text.hpp"
#include "pg/errors.hpp"

namespace pg_idempotent {

// Security labels (the table's or a column's: a label provider may refuse
// a label on a new table, and the caller may not be allowed to set one),
// an explicit membership in a publication the caller may not alter (one it
// may alter is carried, swap_publications.hpp; one through the parent
// stays: the new partition inherits it), and privileges another role
// granted (the new table's are granted by the owner: GRANTED BY names only
// the current user before PostgreSQL 19). Extended statistics objects are
// carried (swap_statistics.hpp); the statistics of ANALYZE are not a loss:
// ANALYZE remakes them.
std::vector<std::string> swap_losses(pg::SpiSession& spi, const Partition& part)
{
    const pg::QueryResult r = spi.query(
        "SELECT DISTINCT 'security labels (' OPERATOR(pg_catalog.||) l.provider OPERATOR(pg_catalog.||) ')'"
        "  FROM pg_catalog.pg_seclabel l WHERE l.objoid OPERATOR(pg_catalog.=) $1"
        "  AND l.classoid OPERATOR(pg_catalog.=) 'pg_catalog.pg_class'::pg_catalog.regclass"
        " UNION ALL SELECT 'membership in publication ' OPERATOR(pg_catalog.||)"
        "  pg_catalog.quote_ident(p.pubname::pg_catalog.text) OPERATOR(pg_catalog.||) ' (owned by '"
        "  OPERATOR(pg_catalog.||) pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(p.pubowner))"
        "  OPERATOR(pg_catalog.||) ', whose privileges this role does not have)'"
        "  FROM pg_catalog.pg_publication_rel pr"
        "  JOIN pg_catalog.pg_publication p ON p.oid OPERATOR(pg_catalog.=) pr.prpubid"
        "  WHERE pr.prrelid OPERATOR(pg_catalog.=) $1 AND NOT pg_catalog.pg_has_role(p.pubowner, 'USAGE')"
        " UNION ALL SELECT DISTINCT 'privileges granted by ' OPERATOR(pg_catalog.||)"
        "  pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantor))"
        "  FROM pg_catalog.pg_class c CROSS JOIN LATERAL pg_catalog.aclexplode(c.relacl) a"
        "  WHERE c.oid OPERATOR(pg_catalog.=) $1 AND a.grantor OPERATOR(pg_catalog.<>) c.relowner"
        " UNION SELECT 'privileges granted by ' OPERATOR(pg_catalog.||)"
        "  pg_catalog.quote_ident(pg_catalog.pg_get_userbyid(a.grantor))"
        "  FROM pg_catalog.pg_attribute t"
        "  JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.attrelid"
        "  CROSS JOIN LATERAL pg_catalog.aclexplode(t.attacl) a"
        "  WHERE t.attrelid OPERATOR(pg_catalog.=) $1 AND t.attacl IS NOT NULL"
        "  AND a.grantor OPERATOR(pg_catalog.<>) c.relowner"
        " ORDER BY 1",
        {pg::Param::of_oid(part.rel.oid)});
    std::vector<std::string> losses;
    for (const auto& row : r.rows)
        losses.push_back(row.at(0).value_or(""));
    return losses;
}

void refuse_swap_losses(pg::SpiSession& spi, const Partition& part, bool accept_losses)
{
    if (accept_losses)
        return;
    const std::vector<std::string> losses = swap_losses(spi, part);
    if (losses.empty())
        return;
    throw pg::UserError(pg::sqlstate::kFeatureNotSupported,
                        "a swap of partition \"" + part.rel.display + "\" would lose its " + losses.front() +
                            (losses.size() > 1 ? " and more" : ""),
                        "The new table cannot carry: " + core::join(losses, "; ") + ". Nothing was changed.",
                        "Pass accept_losses => true to swap without them, or use overwrite_partition's mode => "
                        "'rewrite', which keeps the partition itself.");
}

}  // namespace pg_idempotent
