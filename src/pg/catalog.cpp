#include "pg/catalog.hpp"

#include <algorithm>
#include <optional>

#include "pg/guard.hpp"
#include "pg/spi.hpp"
#include "pg/spi_args.hpp"
#include "pg/tuple_columns.hpp"

extern "C" {
#include "access/genam.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/namespace.h"
#include "catalog/pg_am.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_index.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_proc.h"
#include "catalog/pg_type.h"
#include "commands/comment.h"
#include "commands/defrem.h"
#include "nodes/makefuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "storage/lmgr.h"
#include "utils/catcache.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/plancache.h"
#include "utils/rel.h"
#include "utils/syscache.h"
}

namespace pg_idempotent::pg {

std::string quote_ident(const std::string& name)
{
    const char* quoted = pg_call([&]() noexcept { return quote_identifier(name.c_str()); });
    return std::string(quoted);
}

std::string quote_literal(const std::string& text)
{
    const char* quoted = pg_call([&]() noexcept { return quote_literal_cstr(text.c_str()); });
    return std::string(quoted);
}

std::string relation_display_name(std::uint32_t oid)
{
    const char* text =
        pg_call([&]() noexcept { return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(oid))); });
    return std::string(text);
}

std::optional<LengthCoercion> length_coercion(std::uint32_t type_oid)
{
    switch (type_oid) {
    case VARCHAROID:
        return LengthCoercion{"pg_catalog.\"varchar\"", "pg_catalog.\"varchar\""};
    case BPCHAROID:
        return LengthCoercion{"pg_catalog.bpchar", "pg_catalog.bpchar"};
    case BITOID:
        return LengthCoercion{"pg_catalog.\"bit\"", "pg_catalog.\"bit\""};
    case VARBITOID:
        return LengthCoercion{"pg_catalog.varbit", "pg_catalog.varbit"};
    default:
        return std::nullopt;
    }
}

bool is_boolean_type(std::uint32_t type_oid)
{
    return type_oid == BOOLOID;
}

core::AssignmentTarget assignment_target(const Column& column)
{
    core::AssignmentTarget c{quote_ident(column.name), column.qualified_type, quote_literal(column.name)};
    std::int32_t base_typmod = column.typmod;
    const Oid base = pg_call([&]() noexcept {
        int32 typmod = column.typmod;
        const Oid b = getBaseTypeAndTypmod(column.type_oid, &typmod);
        base_typmod = typmod;
        return b;
    });
    const Oid collation = column.collation;
    if (OidIsValid(collation) && collation != pg_call([&]() noexcept { return get_typcollation(base); })) {
        const char* name = nullptr;
        const char* nspname = nullptr;
        pg_call([&]() noexcept {
            HeapTuple tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));
            if (!HeapTupleIsValid(tup))
                elog(ERROR, "cache lookup failed for collation %u", collation);
            auto* form = reinterpret_cast<Form_pg_collation>(GETSTRUCT(tup));
            name = pstrdup(NameStr(form->collname));
            nspname = get_namespace_name(form->collnamespace);
            ReleaseSysCache(tup);
        });
        c.collation = quote_ident(nspname) + "." + quote_ident(name);
    }
    if (base_typmod < 0)
        return c;
    if (auto lc = length_coercion(base)) {
        c.length_coercion = lc->function;
        c.base_type = lc->base_type;
        c.typmod = base_typmod;
        c.domain = base != column.type_oid;
    }
    return c;
}

bool relation_exists(const std::string& schema, const std::string& name)
{
    return relation_oid(schema, name) != InvalidOid;
}

namespace {

// Called inside pg_call: InvalidOid when the schema or the relation is missing.
Oid relid_in_schema(const std::string& schema, const std::string& name)
{
    const Oid ns = get_namespace_oid(schema.c_str(), true);
    return OidIsValid(ns) ? get_relname_relid(name.c_str(), ns) : InvalidOid;
}

}  // namespace

std::uint32_t relation_oid(const std::string& schema, const std::string& name)
{
    return pg_call([&]() noexcept { return relid_in_schema(schema, name); });
}

std::optional<RelationHead> relation_head(const std::string& schema, const std::string& name)
{
    RelationHead head;
    const bool found = pg_call([&]() noexcept {
        AcceptInvalidationMessages();
        const Oid oid = relid_in_schema(schema, name);
        HeapTuple tup = OidIsValid(oid) ? SearchSysCache1(RELOID, ObjectIdGetDatum(oid)) : nullptr;
        if (!HeapTupleIsValid(tup))
            return false;
        const auto* form = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup));
        head.oid = oid;
        head.owner = form->relowner;
        head.kind = form->relkind;
        ReleaseSysCache(tup);
        return true;
    });
    return found ? std::optional<RelationHead>(head) : std::nullopt;
}

bool relation_exists(std::uint32_t oid)
{
    return pg_call([&]() noexcept {
        AcceptInvalidationMessages();
        return SearchSysCacheExists1(RELOID, ObjectIdGetDatum(oid));
    });
}

void comment_on_relation(std::uint32_t relation, const std::string& text)
{
    pg_call([&]() noexcept {
        CreateComments(relation, RelationRelationId, 0, text.c_str());
        CommandCounterIncrement();
    });
}

bool function_exists(const std::string& schema, const std::string& name)
{
    return pg_call([&]() noexcept {
        const Oid ns = get_namespace_oid(schema.c_str(), true);
        if (!OidIsValid(ns))
            return false;
        CatCList* list = SearchSysCacheList1(PROCNAMEARGSNSP, CStringGetDatum(name.c_str()));
        bool found = false;
        for (int i = 0; i < list->n_members && !found; ++i) {
            const auto* proc = reinterpret_cast<Form_pg_proc>(GETSTRUCT(&list->members[i]->tuple));
            found = proc->pronamespace == ns;
        }
        ReleaseSysCacheList(list);
        return found;
    });
}

bool column_exists(const std::string& schema, const std::string& table, const std::string& column)
{
    return pg_call([&]() noexcept {
        const Oid ns = get_namespace_oid(schema.c_str(), true);
        const Oid rel = OidIsValid(ns) ? get_relname_relid(table.c_str(), ns) : InvalidOid;
        return OidIsValid(rel) && get_attnum(rel, column.c_str()) != InvalidAttrNumber;
    });
}

namespace {
[[noreturn]] void relation_gone(std::uint32_t oid)
{
    throw UserError(sqlstate::kUndefinedTable, "relation with OID " + std::to_string(oid) + " does not exist", {},
                    "The relation was dropped meanwhile: run the statement again.");
}
}  // namespace

Relation describe_relation(std::uint32_t oid)
{
    return describe_relation(oid, RelationLock::kAccessShare);
}

Relation describe_relation(std::uint32_t oid, RelationLock lock)
{
    const LOCKMODE mode = lock == RelationLock::kAccessShare    ? AccessShareLock
                          : lock == RelationLock::kRowExclusive ? RowExclusiveLock
                                                                : NoLock;
    // Locked first, as PostgreSQL's own relation_open does: a DROP that
    // holds the relation makes this wait, and LockRelationOid then takes in
    // the invalidations of what committed, so the syscache below no longer
    // finds a dropped relation. A relation that is gone is let go again.
    if (mode != NoLock) {
        const bool exists = pg_call([&]() noexcept {
            LockRelationOid(oid, mode);
            if (SearchSysCacheExists1(RELOID, ObjectIdGetDatum(oid)))
                return true;
            UnlockRelationOid(oid, mode);
            return false;
        });
        if (!exists)
            relation_gone(oid);
    }
    Relation rel;
    rel.oid = oid;
    // Without a lock the relation may go between these look-ups: each one
    // that finds it gone reports the same 42P01.
    bool found = false;
    int natts = 0;
    const char* relname = nullptr;
    const char* nspname = nullptr;
    const char* qualified = nullptr;
    pg_call([&]() noexcept {
        HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(oid));
        if (!HeapTupleIsValid(tup))
            return;
        const auto* form = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup));
        relname = pstrdup(NameStr(form->relname));
        nspname = get_namespace_name(form->relnamespace);
        rel.kind = form->relkind;
        natts = form->relnatts;
        ReleaseSysCache(tup);
        if (nspname == nullptr)
            return;
        qualified = quote_qualified_identifier(nspname, relname);
        found = true;
    });
    if (!found)
        relation_gone(oid);
    rel.name = relname;
    rel.schema = nspname;
    rel.qualified = qualified;
    rel.display = rel.schema + "." + rel.name;

    for (int attnum = 1; attnum <= natts; ++attnum) {
        Column col;
        bool live = false;
        const char* name = nullptr;
        const char* type_name = nullptr;
        const char* qualified_type = nullptr;
        pg_call([&]() noexcept {
            HeapTuple tup = SearchSysCache2(ATTNUM, ObjectIdGetDatum(oid), Int16GetDatum(attnum));
            if (!HeapTupleIsValid(tup))
                return;
            auto* att = reinterpret_cast<Form_pg_attribute>(GETSTRUCT(tup));
            if (!att->attisdropped) {
                live = true;
                name = pstrdup(NameStr(att->attname));
                col.number = att->attnum;
                col.type_oid = att->atttypid;
                col.typmod = att->atttypmod;
                col.collation = att->attcollation;
                col.not_null = att->attnotnull;
                col.generated = att->attgenerated;
                col.identity = att->attidentity;
                type_name = format_type_with_typemod(att->atttypid, att->atttypmod);
                qualified_type = format_type_extended(att->atttypid, att->atttypmod,
                                                      FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
            }
            ReleaseSysCache(tup);
        });
        if (!live)
            continue;
        col.name = name;
        col.type_name = type_name;
        col.qualified_type = qualified_type;
        rel.columns.push_back(std::move(col));
    }
    return rel;
}

std::vector<UniqueIndex> unique_indexes(std::uint32_t relation)
{
    // Read pg_index through the relcache's index list: one entry per index.
    List* index_oids = pg_call([&]() noexcept {
        ::Relation rel = table_open(relation, AccessShareLock);
        List* oids = RelationGetIndexList(rel);
        table_close(rel, AccessShareLock);
        return oids;
    });
    std::vector<UniqueIndex> out;
    const int n = pg_call([&]() noexcept { return list_length(index_oids); });
    for (int i = 0; i < n; ++i) {
        const Oid index_oid = pg_call([&]() noexcept { return list_nth_oid(index_oids, i); });
        UniqueIndex ix;
        bool unique = false;
        int nkeys = 0;
        AttrNumber keys[INDEX_MAX_KEYS];
        const char* name = nullptr;
        pg_call([&]() noexcept {
            HeapTuple tup = SearchSysCache1(INDEXRELID, ObjectIdGetDatum(index_oid));
            if (!HeapTupleIsValid(tup))
                elog(ERROR, "cache lookup failed for index %u", index_oid);
            auto* form = reinterpret_cast<Form_pg_index>(GETSTRUCT(tup));
            unique = form->indisunique;
            ix.primary = form->indisprimary;
            nkeys = form->indnkeyatts;
            bool plain = true;
            for (int k = 0; k < nkeys; ++k) {
                keys[k] = form->indkey.values[k];
                if (keys[k] == 0)
                    plain = false;  // an expression column
            }
            ix.usable = form->indisvalid && form->indimmediate && plain &&
                        heap_attisnull(tup, Anum_pg_index_indpred, nullptr) &&
                        heap_attisnull(tup, Anum_pg_index_indexprs, nullptr);
            ReleaseSysCache(tup);
            name = get_rel_name(index_oid);
        });
        if (!unique)
            continue;
        ix.name = name != nullptr ? name : "";
        for (int k = 0; k < nkeys; ++k) {
            if (keys[k] <= 0)
                continue;
            const AttrNumber attnum = keys[k];
            const char* col = pg_call([&]() noexcept { return get_attname(relation, attnum, false); });
            ix.columns.emplace_back(col);
        }
        out.push_back(std::move(ix));
    }
    return out;
}

std::vector<Column> columns_of(TupleDesc desc)
{
    std::vector<Column> cols;
    for (int i = 0; i < desc->natts; ++i) {
        Form_pg_attribute att = TupleDescAttr(desc, i);
        Column col;
        col.name = NameStr(att->attname);
        col.number = i + 1;
        col.type_oid = att->atttypid;
        col.typmod = att->atttypmod;
        col.collation = att->attcollation;
        const Oid type = att->atttypid;
        const int32 typmod = att->atttypmod;
        col.type_name = pg_call([&]() noexcept { return format_type_with_typemod(type, typmod); });
        col.qualified_type = pg_call([&]() noexcept {
            return format_type_extended(type, typmod, FORMAT_TYPE_TYPEMOD_GIVEN | FORMAT_TYPE_FORCE_QUALIFY);
        });
        cols.push_back(std::move(col));
    }
    return cols;
}

std::vector<Column> describe_query(const std::string& sql, const Params& params)
{
    // Planned and described without running: the caller's query text is
    // wrapped as a subquery with LIMIT 0.
    SpiSession spi;
    const std::string wrapped = "SELECT * FROM (" + sql + "\n) AS idem_source LIMIT 0";
    const SpiArgs args = convert_params(params);
    SPIPlanPtr plan = pg_call([&]() noexcept { return SPI_prepare(wrapped.c_str(), args.count, args.types); });
    if (plan == nullptr)
        throw UserError(sqlstate::kInternalError, "could not prepare the source query", {},
                        "A bug in pg_idempotent: report it with the statement that raised it.");
    TupleDesc desc = pg_call([&]() noexcept {
        const int rc = SPI_execute_plan(plan, args.values, args.nulls, false, 0);
        if (rc != SPI_OK_SELECT)
            elog(ERROR, "describing the source query failed: %s", SPI_result_code_string(rc));
        return CreateTupleDescCopy(SPI_tuptable->tupdesc);
    });
    std::vector<Column> cols = columns_of(desc);
    spi.finish();
    return cols;
}

std::vector<std::uint32_t> query_relations(const std::string& sql, const Params& params)
{
    SpiSession spi;
    const SpiArgs args = convert_params(params);
    SPIPlanPtr plan = pg_call([&]() noexcept { return SPI_prepare(sql.c_str(), args.count, args.types); });
    if (plan == nullptr)
        throw UserError(sqlstate::kInternalError, "could not prepare the query", {},
                        "A bug in pg_idempotent: report it with the statement that raised it.");
    std::vector<std::uint32_t> relations;
    // Each plan source's relationOids: every relation its rewritten query
    // tree names, sublinks and CTEs included (what plan invalidation uses).
    const int count = pg_call([&]() noexcept {
        int n = 0;
        ListCell* s = nullptr;
        foreach (s, SPI_plan_get_plan_sources(plan)) {
            const auto* source = static_cast<CachedPlanSource*>(lfirst(s));
            n += list_length(source->relationOids);
        }
        return n;
    });
    relations.reserve(static_cast<std::size_t>(count));
    pg_call([&]() noexcept {
        ListCell* s = nullptr;
        foreach (s, SPI_plan_get_plan_sources(plan)) {
            const auto* source = static_cast<CachedPlanSource*>(lfirst(s));
            ListCell* r = nullptr;
            foreach (r, source->relationOids) {
                const Oid oid = lfirst_oid(r);
                if (std::find(relations.begin(), relations.end(), oid) == relations.end())
                    relations.push_back(oid);
            }
        }
    });
    spi.finish();
    return relations;
}

std::string btree_operator(std::uint32_t type_oid, int strategy, const std::string& column)
{
    Oid op = InvalidOid;
    pg_call([&]() noexcept {
        const Oid base = getBaseType(type_oid);
        const Oid opclass = GetDefaultOpClass(base, BTREE_AM_OID);
        if (OidIsValid(opclass)) {
            const Oid family = get_opclass_family(opclass);
            const Oid input = get_opclass_input_type(opclass);
            op = get_opfamily_member(family, input, input, static_cast<int16>(strategy));
        }
    });
    if (op == InvalidOid) {
        const char* type_name = pg_call([&]() noexcept { return format_type_be(type_oid); });
        throw UserError(
            sqlstate::kUndefinedFunction,
            "column \"" + column + "\" has type " + type_name + ", which has no default btree operator class", {},
            "Keys and versions need a type with an ordering (a default btree operator class).");
    }
    const char* opname = nullptr;
    const char* nspname = nullptr;
    pg_call([&]() noexcept {
        HeapTuple tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(op));
        if (!HeapTupleIsValid(tup))
            elog(ERROR, "cache lookup failed for operator %u", op);
        auto* form = reinterpret_cast<Form_pg_operator>(GETSTRUCT(tup));
        opname = pstrdup(NameStr(form->oprname));
        nspname = get_namespace_name(form->oprnamespace);
        ReleaseSysCache(tup);
    });
    return std::string("OPERATOR(") + quote_ident(nspname) + "." + opname + ")";
}

bool key_hashable(std::uint32_t type_oid, std::uint32_t collation, bool only_collatable)
{
    return pg_call([&]() noexcept {
        const Oid base = getBaseType(type_oid);
        const Oid btree = GetDefaultOpClass(base, BTREE_AM_OID);
        const Oid hash = GetDefaultOpClass(base, HASH_AM_OID);
        if (!OidIsValid(btree) || !OidIsValid(hash))
            return false;
        const Oid input = get_opclass_input_type(btree);
        const Oid eq = get_opfamily_member(get_opclass_family(btree), input, input, BTEqualStrategyNumber);
        if (!OidIsValid(eq) || !op_in_opfamily(eq, get_opclass_family(hash)))
            return false;
        TypeCacheEntry* entry = lookup_type_cache(base, TYPECACHE_HASH_EXTENDED_PROC);
        if (!OidIsValid(entry->hash_extended_proc))
            return false;
        return !OidIsValid(collation) || only_collatable || get_collation_isdeterministic(collation);
    });
}

bool can_assign(std::uint32_t from, std::uint32_t to)
{
    return pg_call([&]() noexcept {
        Oid in = from;
        Oid out = to;
        return can_coerce_type(1, &in, &out, COERCION_ASSIGNMENT);
    });
}

bool conversion_is_immutable(std::uint32_t from, std::int32_t from_typmod, std::uint32_t to, std::int32_t to_typmod)
{
    return pg_call([&]() noexcept {
        if (getBaseType(to) != to)
            return false;
        // The coercion of a stand-in for the query's column, built as the
        // parser builds CAST(... AS type): a Param, so nothing is folded.
        auto* in = reinterpret_cast<::Param*>(newNode(sizeof(::Param), T_Param));
        in->paramkind = PARAM_EXTERN;
        in->paramid = 1;
        in->paramtype = from;
        in->paramtypmod = from_typmod;
        in->paramcollid = get_typcollation(from);
        in->location = -1;
        Node* cast = coerce_to_target_type(nullptr, reinterpret_cast<Node*>(in), from, to, to_typmod, COERCION_EXPLICIT,
                                           COERCE_EXPLICIT_CAST, -1);
        return cast != nullptr && !contain_mutable_functions(cast);
    });
}

bool is_timestamp_type(std::uint32_t type_oid)
{
    return type_oid == TIMESTAMPTZOID || type_oid == TIMESTAMPOID;
}

}  // namespace pg_idempotent::pg
