#include "core/sql_text.hpp"

#include <cctype>

namespace pg_idempotent::core {

std::string join(const std::vector<std::string>& parts, const std::string& separator)
{
    std::string out;
    for (std::size_t i = 0; i < parts.size(); ++i) {
        if (i > 0)
            out += separator;
        out += parts[i];
    }
    return out;
}

std::string select_columns(const std::vector<std::string>& quoted_columns, const std::string& qualified_relation)
{
    return "SELECT " + join(quoted_columns) + " FROM " + qualified_relation;
}

std::vector<std::string> positional_columns(std::size_t column_count, const std::string& qualifier)
{
    std::vector<std::string> names;
    for (std::size_t i = 1; i <= column_count; ++i)
        names.push_back(qualifier + "c" + std::to_string(i));
    return names;
}

std::string digest_aggregate_sql(const std::string& statement, std::size_t column_count)
{
    return "SELECT idem._digest_agg(" + join(positional_columns(column_count, "idem_rows.")) + ") FROM (\n" +
           statement + "\n) AS idem_rows (" + join(positional_columns(column_count)) + ")";
}

std::string sampled_digest_and_digest_sql(const std::string& statement, std::size_t column_count,
                                          const std::vector<std::string>& expressions)
{
    return "SELECT idem._digest_sample_agg(" + join(positional_columns(column_count, "q.")) + "), idem._digest_agg(" +
           join(expressions) + ") FROM (\n" + statement + "\n) AS q (" + join(positional_columns(column_count)) + ")";
}

std::string columns_beside_sql(const std::string& statement, std::size_t column_count,
                               const std::vector<std::string>& expressions)
{
    std::vector<std::string> select = positional_columns(column_count, "q.");
    select.insert(select.end(), expressions.begin(), expressions.end());
    return "SELECT " + join(select) + " FROM (\n" + statement + "\n) AS q (" + join(positional_columns(column_count)) +
           ")";
}

std::string identifier_with_suffix(const std::string& name, const std::string& suffix)
{
    constexpr std::size_t kMaxIdentifierBytes = 63;  // NAMEDATALEN - 1
    std::string base = name;
    const std::size_t limit = suffix.size() < kMaxIdentifierBytes ? kMaxIdentifierBytes - suffix.size() : 0;
    if (base.size() > limit) {
        std::size_t cut = limit;
        while (cut > 0 && (static_cast<unsigned char>(base[cut]) & 0xC0) == 0x80)
            --cut;  // do not split a UTF-8 character
        base.resize(cut);
    }
    return base + suffix;
}

namespace {

// Whether array input reads name back as it is when unquoted.
bool plain_array_element(const std::string& name)
{
    if (name.empty())
        return false;
    std::string lower;
    for (char c : name) {
        if (std::string(" \t\n\r\v\f\"\\,{}").find(c) != std::string::npos)
            return false;
        lower += static_cast<char>(c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c);
    }
    return lower != "null";
}

}  // namespace

std::string text_array_literal(const std::vector<std::string>& names)
{
    std::vector<std::string> elements;
    for (const auto& name : names) {
        if (plain_array_element(name)) {
            elements.push_back(name);
            continue;
        }
        std::string quoted = "\"";
        for (char c : name)
            quoted += (c == '"' || c == '\\') ? std::string("\\") + c : std::string(1, c);
        elements.push_back(quoted + "\"");
    }
    return "{" + join(elements, ",") + "}";
}

std::string option_list_sql(const std::string& options, const std::string& filter)
{
    return "(SELECT pg_catalog.string_agg(pg_catalog.quote_ident(pg_catalog.split_part(o, '=', 1))"
           " OPERATOR(pg_catalog.||) '=' OPERATOR(pg_catalog.||)"
           " pg_catalog.quote_literal(pg_catalog.substr(o, pg_catalog.strpos(o, '=') OPERATOR(pg_catalog.+) 1)), ', ')"
           " FROM pg_catalog.unnest(" +
           options + ") o" + (filter.empty() ? std::string() : " WHERE " + filter) + ")";
}

std::string retarget_definition(const std::string& definition, const std::string& from, const std::string& to)
{
    const std::string marker = " ON " + from + " ";
    const std::size_t at = definition.find(marker);
    if (at == std::string::npos || definition.find(marker, at + 1) != std::string::npos)
        return {};
    return definition.substr(0, at) + " ON " + to + " " + definition.substr(at + marker.size());
}

std::string index_definition_on(const std::string& definition, const std::string& quoted_index, const std::string& from,
                                const std::string& to)
{
    for (const std::string kind : {"CREATE INDEX ", "CREATE UNIQUE INDEX "}) {
        const std::string prefix = kind + quoted_index + " ON " + from + " ";
        if (definition.compare(0, prefix.size(), prefix) == 0)
            return kind + "ON " + to + " " + definition.substr(prefix.size());
    }
    return {};
}

std::string as_subquery(const std::string& statement)
{
    std::size_t end = statement.size();
    while (end > 0 && (statement[end - 1] == ';' || std::isspace(static_cast<unsigned char>(statement[end - 1]))))
        --end;
    return "(\n" + statement.substr(0, end) + "\n)";
}

}  // namespace pg_idempotent::core
