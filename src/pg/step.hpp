// The step a running SQL-callable function is at, for its error reports
// (no PostgreSQL types here: feature code names its steps).
#pragma once

namespace pg_idempotent::pg {

// The step of the running SQL-callable function that its errors name: while
// a Step lives, an ERROR or FATAL raised under the call (a cancel, a
// terminate, a failing statement) carries `CONTEXT: idem.merge_query:
// writing the batch`; without one, `CONTEXT: idem.merge_query`. The text
// must be a string literal (it is kept by pointer). No PostgreSQL call.
class Step {
public:
    explicit Step(const char* what) noexcept;
    ~Step();
    Step(const Step&) = delete;
    Step& operator=(const Step&) = delete;

private:
    const char* previous_;
};

}  // namespace pg_idempotent::pg
