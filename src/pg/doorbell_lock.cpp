#include "pg/doorbell_lock.hpp"

#include "pg/compat.hpp"
#include "pg/guard.hpp"

extern "C" {
#include "common/hashfn.h"
#include "miscadmin.h"
#include "storage/lock.h"
}

namespace pg_idempotent::pg {

namespace {

constexpr uint16 kDoorbellField4 = 3;
constexpr LOCKMODE kDispatcherMode = ShareLock;
constexpr LOCKMODE kProbeMode = RowExclusiveLock;

LOCKTAG doorbell_tag(const std::string& name)
{
    const uint64 h =
        hash_bytes_extended(reinterpret_cast<const unsigned char*>(name.data()), static_cast<int>(name.size()), 0);
    LOCKTAG tag;
    SET_LOCKTAG_ADVISORY(tag, MyDatabaseId, static_cast<uint32>(h >> 32), static_cast<uint32>(h), kDoorbellField4);
    return tag;
}

}  // namespace

bool try_hold_doorbell(const std::string& name)
{
    const LOCKTAG tag = doorbell_tag(name);
    return pg_call([&]() noexcept {
        if (compat::lock_held_by_me(&tag, kDispatcherMode))
            return true;
        return LockAcquire(&tag, kDispatcherMode, true, true) != LOCKACQUIRE_NOT_AVAIL;
    });
}

bool holds_doorbell(const std::string& name)
{
    const LOCKTAG tag = doorbell_tag(name);
    return pg_call([&]() noexcept { return compat::lock_held_by_me(&tag, kDispatcherMode); });
}

void release_doorbell(const std::string& name)
{
    const LOCKTAG tag = doorbell_tag(name);
    pg_call([&]() noexcept {
        if (compat::lock_held_by_me(&tag, kDispatcherMode))
            LockRelease(&tag, kDispatcherMode, true);
    });
}

bool doorbell_held(const std::string& name)
{
    const LOCKTAG tag = doorbell_tag(name);
    return pg_call([&]() noexcept {
        if (LockAcquire(&tag, kProbeMode, false, true) == LOCKACQUIRE_NOT_AVAIL)
            return true;
        LockRelease(&tag, kProbeMode, false);
        return false;
    });
}

}  // namespace pg_idempotent::pg
