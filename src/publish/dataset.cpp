#include "publish/dataset.hpp"

#include "pg/catalog.hpp"
#include "pg/errors.hpp"

namespace pg_idempotent {

using pg::Param;
using pg::UserError;
namespace sqlstate = pg::sqlstate;

Dataset resolve(pg::SpiSession& spi, const std::string& dataset)
{
    if (dataset.empty())
        throw UserError(sqlstate::kInvalidParameterValue, "dataset must not be empty", {},
                        "Name the dataset as schema.view, for example 'marts.revenue'.");
    // parse_ident understands quoting exactly as the parser does; a bare name
    // lands in the caller's current schema, like CREATE VIEW would.
    auto r = spi.query_saved(
        "SELECT p[1], p[2], pg_catalog.array_length(p, 1)::pg_catalog.text, pg_catalog.current_schema()"
        " FROM pg_catalog.parse_ident($1) AS p",
        {Param::of_text(dataset)});
    const auto& row = r.rows.at(0);
    const int parts = std::stoi(row[2].value_or("0"));
    Dataset d;
    if (parts == 1) {
        if (!row[3])
            throw UserError(sqlstate::kInvalidSchemaName, "no schema has been selected to create the dataset in", {},
                            "Qualify the dataset name with its schema.");
        d.schema = *row[3];
        d.name = row[0].value_or("");
    } else if (parts == 2) {
        d.schema = row[0].value_or("");
        d.name = row[1].value_or("");
    } else {
        throw UserError(sqlstate::kInvalidName, "dataset name \"" + dataset + "\" has too many dots", {},
                        "Name the view as view or schema.view.");
    }
    // PostgreSQL cuts a longer identifier at 63 bytes with a NOTICE: the view
    // would be created under a name this lookup never finds again.
    for (const std::string* part : {&d.schema, &d.name})
        if (part->size() > 63)
            throw UserError(sqlstate::kNameTooLong, "dataset name \"" + dataset + "\" has a part longer than 63 bytes",
                            "PostgreSQL cuts identifiers at 63 bytes (NAMEDATALEN - 1), so the view would get "
                            "another name than the dataset's.",
                            "Name the dataset with a schema and a view name of at most 63 bytes each.");
    d.qualified = pg::quote_ident(d.schema) + "." + pg::quote_ident(d.name);
    d.display = d.schema + "." + d.name;
    return d;
}

}  // namespace pg_idempotent
