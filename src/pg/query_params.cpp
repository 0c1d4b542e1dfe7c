#include "pg/query_params.hpp"

#include <algorithm>
#include <cctype>
#include <utility>
#include <vector>

#include "core/sql_text.hpp"
#include "pg/errors.hpp"
#include "pg/guard.hpp"
#include "pg/postgres.hpp"

extern "C" {
#include "common/keywords.h"
#include "parser/scanner.h"
}

namespace pg_idempotent::pg {

namespace {

// The byte offsets of the $n tokens of sql, by the core lexer. A token that
// starts with '$' and a digit is a parameter: a dollar quote's tag and an
// identifier never start with a digit.
std::vector<int> param_locations(const std::string& sql)
{
    const char* text = sql.c_str();
    List* found = pg_call([&]() noexcept {
        List* locations = NIL;
        core_yy_extra_type extra;
        core_yyscan_t scanner = scanner_init(text, &extra, &ScanKeywords, ScanKeywordTokens);
        core_YYSTYPE value;
        int location = 0;
        while (core_yylex(&value, &location, scanner) != 0)
            if (text[location] == '$' && isdigit(static_cast<unsigned char>(text[location + 1])))
                locations = lappend_int(locations, location);
        scanner_finish(scanner);
        return locations;
    });
    std::vector<int> out;
    ListCell* cell = nullptr;
    foreach (cell, found)
        out.push_back(lfirst_int(cell));
    return out;
}

}  // namespace

std::string shift_params(const std::string& sql, int by)
{
    if (by == 0)
        return sql;
    std::string out;
    std::size_t from = 0;
    for (const int at : param_locations(sql)) {
        const auto start = static_cast<std::size_t>(at) + 1;
        std::size_t end = start;
        while (end < sql.size() && std::isdigit(static_cast<unsigned char>(sql[end])))
            ++end;
        if (end - start > 9)
            continue;  // no such parameter: the parser says so
        out += sql.substr(from, start - from);
        out += std::to_string(std::stol(sql.substr(start, end - start)) + by);
        from = end;
    }
    return out + sql.substr(from);
}

void require_bound(const std::string& sql, const QueryParams& params, const std::string& what)
{
    long highest = 0;
    for (const int at : param_locations(sql)) {
        std::size_t end = static_cast<std::size_t>(at) + 1;
        while (end < sql.size() && std::isdigit(static_cast<unsigned char>(sql[end])))
            ++end;
        const std::string digits = sql.substr(static_cast<std::size_t>(at) + 1, end - static_cast<std::size_t>(at) - 1);
        highest = std::max(highest, digits.size() > 9 ? 999999999L : std::stol(digits));
    }
    const auto given = static_cast<long>(params.values.size());
    if (highest <= given)
        return;
    std::vector<std::string> slots;
    for (long i = 1; i <= highest && i <= 3; ++i)
        slots.push_back("v" + std::to_string(i));
    throw UserError(
        sqlstate::kUndefinedParameter,
        what + " refers to $" + std::to_string(highest) + ", and params gives " +
            (given == 0 ? std::string("no values") : std::to_string(given) + (given == 1 ? " value" : " values")),
        "$1, $2, ... are bound to the values of params, in order: they are never spliced into the text.",
        "Pass one value per parameter: params => idem.params(" + core::join(slots) + (highest > 3 ? ", ..." : "") +
            ").");
}

Params with_caller_params(Params own, const QueryParams& caller)
{
    own.insert(own.end(), caller.values.begin(), caller.values.end());
    return own;
}

}  // namespace pg_idempotent::pg
