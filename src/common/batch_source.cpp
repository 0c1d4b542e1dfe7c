#include "common/batch_source.hpp"

#include <set>

#include "common/installed_sql.hpp"
#include "core/sql_text.hpp"
#include "pg/errors.hpp"

namespace pg_idempotent {

using pg::UserError;
namespace sqlstate = pg::sqlstate;

bool SourceShape::stable() const
{
    return relation && std::string("rpm").find(relation->kind) != std::string::npos;
}

const pg::Column* find_column(const std::vector<pg::Column>& cols, const std::string& name)
{
    for (const auto& c : cols)
        if (c.name == name)
            return &c;
    return nullptr;
}

void require_target_column(const pg::Relation& target, const std::string& column, const std::string& named_in)
{
    if (find_column(target.columns, column) == nullptr)
        throw UserError(sqlstate::kUndefinedColumn,
                        "column \"" + column + "\" of relation \"" + target.display + "\" does not exist",
                        "It was named in " + named_in + ".", "Column names are matched exactly, case included.");
}

pg::Relation describe_table_target(std::uint32_t oid, const std::string& why)
{
    pg::Relation target = pg::describe_relation(oid);
    if (target.kind != 'r' && target.kind != 'p')
        throw pg::UserError(pg::sqlstate::kWrongObjectType, "\"" + target.display + "\" is not a table", why,
                            "Write into a table or a partitioned table; a view can be its source, not its target.");
    return target;
}

SourceShape describe_source(const BatchSource& source, const std::string& function)
{
    SourceShape shape;
    if (source.relation) {
        shape.relation = pg::describe_relation(*source.relation);
        const pg::Relation& rel = *shape.relation;
        if (std::string("rpvmf").find(rel.kind) == std::string::npos)
            throw UserError(sqlstate::kWrongObjectType, "\"" + rel.display + "\" is not a table or view",
                            "The source of " + function + " is a table, view, materialized view or foreign table.",
                            "Pass a table or view as the source, or use the _query form of the function with a query.");
        shape.columns = rel.columns;
        std::vector<std::string> quoted;
        for (const auto& c : shape.columns)
            quoted.push_back(pg::quote_ident(c.name));
        shape.sql = core::select_columns(quoted, rel.qualified);
    } else {
        pg::require_bound(*source.query, source.params, "the query");
        shape.columns = pg::describe_query(*source.query, source.params.values);
        shape.sql = *source.query;
        shape.params = source.params;
    }
    std::set<std::string> names;
    for (const auto& c : shape.columns)
        if (!names.insert(c.name).second)
            throw UserError(sqlstate::kDuplicateColumn, "the source has more than one column named \"" + c.name + "\"",
                            {}, "Give every source column a distinct name (AS ...).");
    return shape;
}

std::vector<std::string> resolve_key(const pg::Relation& target, const std::optional<std::vector<std::string>>& key,
                                     const std::vector<pg::UniqueIndex>& indexes, const std::string& function,
                                     const std::string& hint)
{
    if (!key) {
        for (const auto& ix : indexes)
            if (ix.primary)
                return ix.columns;
        throw UserError(sqlstate::kObjectNotInPrerequisiteState,
                        "relation \"" + target.display + "\" has no primary key",
                        function + " matches rows on a key: the primary key by default.", hint);
    }
    if (key->empty())
        throw UserError(sqlstate::kInvalidParameterValue, "key must name at least one column", {},
                        "Pass the business key, for example key => '{id}'.");
    std::set<std::string> seen;
    for (const auto& k : *key) {
        if (!seen.insert(k).second)
            throw UserError(sqlstate::kDuplicateColumn, "key column \"" + k + "\" is named more than once", {},
                            "Name each key column once.");
        if (find_column(target.columns, k) == nullptr)
            throw UserError(sqlstate::kUndefinedColumn,
                            "key column \"" + k + "\" does not exist in \"" + target.display + "\"", {},
                            "Column names are matched exactly, case included.");
    }
    return *key;
}

bool has_unique_index_on(const std::vector<std::string>& key, const std::vector<pg::UniqueIndex>& indexes)
{
    const std::set<std::string> wanted(key.begin(), key.end());
    for (const auto& ix : indexes) {
        const std::set<std::string> have(ix.columns.begin(), ix.columns.end());
        if (ix.usable && have == wanted && ix.columns.size() == key.size())
            return true;
    }
    return false;
}

bool source_unique_on_key(const SourceShape& src, const std::vector<std::string>& key, const pg::Relation& target)
{
    if (!src.relation || (src.relation->kind != 'r' && src.relation->kind != 'p'))
        return false;
    for (const auto& k : key) {
        const pg::Column* s = find_column(src.relation->columns, k);
        const pg::Column* t = find_column(target.columns, k);
        if (s == nullptr || t == nullptr || !s->not_null || s->type_oid != t->type_oid)
            return false;
    }
    return has_unique_index_on(key, pg::unique_indexes(src.relation->oid));
}

std::vector<core::AssignmentTarget> insert_columns(const SourceShape& src, const pg::Relation& target,
                                                   const InsertColumnRules& rules)
{
    std::vector<core::AssignmentTarget> out;
    for (const auto& sc : src.columns) {
        if (rules.skip && sc.name == *rules.skip)
            continue;
        const pg::Column* tc = find_column(target.columns, sc.name);
        if (tc == nullptr) {
            if (rules.ignore_extra)
                continue;
            throw UserError(sqlstate::kUndefinedColumn,
                            "column \"" + sc.name + "\" of the source does not exist in \"" + target.display + "\"",
                            rules.extra_detail, rules.extra_hint);
        }
        if (tc->generated != '\0')
            continue;  // generated columns are computed by the target, never written
        if (tc->identity == 'a' && !rules.override_identity)
            throw UserError(sqlstate::kGeneratedAlways,
                            "column \"" + sc.name + "\" of \"" + target.display + "\" is GENERATED ALWAYS AS IDENTITY",
                            rules.function + " does not silently override identity values.", rules.identity_hint);
        if (!pg::can_assign(sc.type_oid, tc->type_oid))
            throw UserError(sqlstate::kDatatypeMismatch,
                            "column \"" + sc.name + "\" is " + sc.type_name + " in the source and " + tc->type_name +
                                " in the target, and there is no assignment cast between them",
                            {}, "Cast the column in the source query.");
        out.push_back(pg::assignment_target(*tc));
    }
    return out;
}

bool keys_hashable(const pg::Relation& target, const std::vector<std::string>& key)
{
    if (!sql_has(SqlFeature::kRepeatHashes))
        return false;
    int collatable = 0;
    for (const auto& k : key)
        collatable += find_column(target.columns, k)->collation != 0 ? 1 : 0;
    for (const auto& k : key) {
        const pg::Column* c = find_column(target.columns, k);
        if (!pg::key_hashable(c->type_oid, c->collation, collatable == 1))
            return false;
    }
    return true;
}

}  // namespace pg_idempotent
