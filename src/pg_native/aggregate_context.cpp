#include "pg_native/aggregate_context.hpp"

namespace pg_idempotent::pg {

MemoryContext aggregate_context(FunctionCallInfo fcinfo, const char* caller, const char* hint)
{
    MemoryContext context = nullptr;
    if (!AggCheckCallContext(fcinfo, &context))
        ereport(ERROR, (errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
                        errmsg("%s can only be called by its aggregate", caller), errhint("%s", hint)));
    return context;
}

}  // namespace pg_idempotent::pg
