#include "pg/catalog.hpp"

#include "pg/guard.hpp"

namespace pg_idempotent::pg {

std::string quote_ident(const std::string& name)
{
    const char* quoted = pg_call([&] { return quote_identifier(name.c_str()); });
    return std::string(quoted);
}

std::string relation_display_name(std::uint32_t oid)
{
    const char* text = pg_call([&] {
        return DatumGetCString(DirectFunctionCall1(regclassout, ObjectIdGetDatum(oid)));
    });
    return std::string(text);
}

Relation describe_relation(std::uint32_t oid)
{
    Relation rel;
    rel.oid = oid;
    const char* relname = pg_call([&] { return get_rel_name(oid); });
    if (relname == nullptr) {
        throw UserError("42P01", "relation with OID " + std::to_string(oid) + " does not exist");
    }
    rel.name = relname;
    const Oid nsp = pg_call([&] { return get_rel_namespace(oid); });
    const char* nspname = pg_call([&] { return get_namespace_name(nsp); });
    rel.schema = nspname != nullptr ? nspname : "";
    rel.kind = pg_call([&] { return get_rel_relkind(oid); });
    const char* qualified =
        pg_call([&] { return quote_qualified_identifier(rel.schema.c_str(), rel.name.c_str()); });
    rel.qualified = qualified;

    const int natts = pg_call([&] {
        HeapTuple tup = SearchSysCache1(RELOID, ObjectIdGetDatum(oid));
        if (!HeapTupleIsValid(tup))
            elog(ERROR, "cache lookup failed for relation %u", oid);
        int n = reinterpret_cast<Form_pg_class>(GETSTRUCT(tup))->relnatts;
        ReleaseSysCache(tup);
        return n;
    });
    for (int attnum = 1; attnum <= natts; ++attnum) {
        Column col;
        bool live = false;
        const char* name = nullptr;
        const char* type_name = nullptr;
        pg_call([&] {
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
            }
            ReleaseSysCache(tup);
        });
        if (!live)
            continue;
        col.name = name;
        col.type_name = type_name;
        rel.columns.push_back(std::move(col));
    }
    return rel;
}

}  // namespace pg_idempotent::pg
