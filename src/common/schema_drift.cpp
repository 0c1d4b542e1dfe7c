#include "common/schema_drift.hpp"

#include <algorithm>

#include "core/sql_text.hpp"
#include "pg/catalog.hpp"
#include "pg/errors.hpp"

namespace pg_idempotent {

namespace {

using pg::UserError;
namespace sqlstate = pg::sqlstate;

bool named(const std::optional<std::vector<std::string>>& names, const std::string& name)
{
    return names && std::find(names->begin(), names->end(), name) != names->end();
}

// The batch without the named columns: the same statement, narrowed.
void leave_out_of_batch(SourceShape& src, const std::vector<std::string>& names)
{
    if (names.empty())
        return;
    std::vector<pg::Column> kept;
    std::vector<std::string> quoted;
    for (const auto& c : src.columns)
        if (std::find(names.begin(), names.end(), c.name) == names.end()) {
            kept.push_back(c);
            quoted.push_back(pg::quote_ident(c.name));
        }
    src.sql = core::select_columns(
        quoted, src.relation ? src.relation->qualified : core::as_subquery(src.sql) + " AS \"idem$batch\"");
    src.columns = kept;
}

UserError drift_error(const std::vector<std::string>& drifted, const pg::Relation& target, const DriftRules& rules)
{
    const std::string list = pg::quote_literal(core::text_array_literal(drifted));
    std::vector<std::string> quoted;
    for (const auto& name : drifted)
        quoted.push_back("\"" + name + "\"");
    const std::string last = quoted.back();
    quoted.pop_back();
    const std::string names = quoted.empty() ? "column " + last : "columns " + core::join(quoted) + " and " + last;
    return UserError(
        sqlstate::kUndefinedColumn,
        names + " of the source " + (quoted.empty() ? "does" : "do") + " not exist in \"" + target.display + "\"",
        rules.written + "; a source column the target lacks is schema drift: " + core::join(drifted) + ".",
        "Leave staging columns out of the batch with exclude_columns => " + list +
            ", add them to the target with on_schema_change => 'append_new_columns', or leave "
            "out every new column with on_schema_change => 'ignore'.");
}

}  // namespace

OnSchemaChange on_schema_change_of(const std::string& text)
{
    if (text == "fail")
        return OnSchemaChange::kFail;
    if (text == "ignore")
        return OnSchemaChange::kIgnore;
    if (text == "append_new_columns")
        return OnSchemaChange::kAppendNewColumns;
    throw UserError(sqlstate::kInvalidParameterValue,
                    "on_schema_change must be 'fail', 'ignore' or 'append_new_columns'", "It is '" + text + "'.",
                    "'fail' (the default) refuses a source column the target lacks; 'ignore' leaves it out; "
                    "'append_new_columns' adds it to the target.");
}

std::vector<pg::Column> settle_source_columns(SourceShape& src, const pg::Relation& target,
                                              const std::optional<std::vector<std::string>>& excluded,
                                              OnSchemaChange mode, const DriftRules& rules)
{
    for (const auto& c : excluded.value_or(std::vector<std::string>{}))
        if (find_column(src.columns, c) == nullptr && find_column(target.columns, c) == nullptr)
            throw UserError(
                sqlstate::kUndefinedColumn,
                "column \"" + c + "\" named in exclude_columns is in neither the source nor \"" + target.display + "\"",
                "exclude_columns names staging columns the target lacks (left out of the batch) and "
                "target columns to leave alone.",
                "Column names are matched exactly, case included.");
    std::vector<std::string> staging_only;
    std::vector<std::string> drifted;
    std::vector<pg::Column> drifted_columns;
    for (const auto& c : src.columns) {
        if (find_column(target.columns, c.name) != nullptr || rules.reads == c.name)
            continue;
        if (named(excluded, c.name)) {
            staging_only.push_back(c.name);
        } else {
            drifted.push_back(c.name);
            drifted_columns.push_back(c);
        }
    }
    leave_out_of_batch(src, staging_only);
    if (drifted.empty())
        return {};
    if (mode == OnSchemaChange::kFail)
        throw drift_error(drifted, target, rules);
    if (mode == OnSchemaChange::kIgnore) {
        leave_out_of_batch(src, drifted);
        return {};
    }
    return drifted_columns;
}

void add_target_columns(pg::SpiSession& spi, const pg::Relation& target, const std::vector<pg::Column>& columns,
                        const std::string& function)
{
    if (columns.empty())
        return;
    auto owner = spi.query(
        "SELECT pg_catalog.pg_has_role(c.relowner, 'USAGE')::pg_catalog.text"
        " FROM pg_catalog.pg_class c WHERE c.oid OPERATOR(pg_catalog.=) $1",
        {pg::Param::of_oid(target.oid)});
    if (owner.rows.at(0).at(0) != std::optional<std::string>("true"))
        throw UserError(sqlstate::kInsufficientPrivilege, "must be owner of table " + target.display,
                        function +
                            " with on_schema_change => 'append_new_columns' adds the source's new columns "
                            "to it (ALTER TABLE ... ADD COLUMN).",
                        "Run it as the table's owner (or a member of the owning role), or add the columns "
                        "yourself, or pass on_schema_change => 'ignore'.");
    std::vector<std::string> adds;
    for (const auto& c : columns) {
        auto collate = spi.query(
            "SELECT ' COLLATE ' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(n.nspname::pg_catalog.text)"
            " OPERATOR(pg_catalog.||) '.' OPERATOR(pg_catalog.||) pg_catalog.quote_ident(k.collname::pg_catalog.text)"
            " FROM pg_catalog.pg_collation k JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) k.collnamespace"
            " JOIN pg_catalog.pg_type t ON t.oid OPERATOR(pg_catalog.=) $2"
            " WHERE k.oid OPERATOR(pg_catalog.=) $1 AND k.oid OPERATOR(pg_catalog.<>) t.typcollation",
            {pg::Param::of_oid(c.collation), pg::Param::of_oid(c.type_oid)});
        adds.push_back("ADD COLUMN " + pg::quote_ident(c.name) + " " + c.qualified_type +
                       (collate.rows.empty() ? std::string() : collate.rows[0][0].value_or("")));
    }
    spi.execute("ALTER TABLE " + target.qualified + " " + core::join(adds));
}

}  // namespace pg_idempotent
