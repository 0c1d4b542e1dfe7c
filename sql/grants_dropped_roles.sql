-- Grants name a role by its OID (regrole, in idem.usage_grant_rows); idem.usage_grants
-- shows the name and hides the grants of dropped roles, which
-- idem.purge_grants() deletes (grant_usage and revoke_usage do too).
CREATE ROLE gr_etl;
CREATE ROLE gr_kept;
SELECT idem.grant_usage('gr_etl', 'orders', 'keys');
SELECT idem.grant_usage('gr_etl', 'nightly', 'checkpoints');
SELECT idem.grant_usage('gr_kept', 'orders', 'keys');
SELECT role, kind, scope FROM idem.usage_grants WHERE role::text LIKE 'gr\_%' ORDER BY 1, 2;
-- A renamed role keeps its grants: they follow the OID, not the name.
ALTER ROLE gr_kept RENAME TO gr_kept_renamed;
SELECT role, kind, scope FROM idem.usage_grants WHERE role::text LIKE 'gr\_%' ORDER BY 1, 2;
SET ROLE gr_kept_renamed;
SELECT idem.claim('o-1', 'orders') AS renamed_role_claims;
RESET ROLE;
-- A granted role can be dropped (PostgreSQL does not know idem's grants);
-- its grants are hidden from then on.
DROP ROLE gr_etl;
SELECT role, kind, scope FROM idem.usage_grants WHERE role::text LIKE 'gr\_%' ORDER BY 1, 2;
SELECT count(*) AS rows_of_dropped_roles FROM idem.usage_grant_rows g
 WHERE NOT EXISTS (SELECT FROM pg_roles r WHERE r.oid = g.role::oid);
-- A new role of the same name inherits nothing.
CREATE ROLE gr_etl;
SET ROLE gr_etl;
SELECT show_error($$SELECT idem.claim('o-2', 'orders')$$);
RESET ROLE;
-- purge_grants deletes the dropped role's rows, once; it is an
-- administrator's function, closed to PUBLIC.
SELECT idem.purge_grants() AS purged;
SELECT idem.purge_grants() AS purged_again;
SET ROLE gr_etl;
SELECT show_error('SELECT idem.purge_grants()');
SELECT show_error('SELECT * FROM idem.usage_grants');
SELECT show_error('SELECT * FROM idem.usage_grant_rows');
RESET ROLE;
-- grant_usage purges too: drop a granted role again, grant another.
SELECT idem.grant_usage('gr_etl', 'orders', 'keys');
DROP ROLE gr_etl;
SELECT idem.grant_usage('gr_kept_renamed', 'more', 'keys');
SELECT count(*) AS rows_of_dropped_roles FROM idem.usage_grant_rows g
 WHERE NOT EXISTS (SELECT FROM pg_roles r WHERE r.oid = g.role::oid);
SELECT idem.revoke_usage('gr_kept_renamed', 'orders', 'keys');
SELECT idem.revoke_usage('gr_kept_renamed', 'more', 'keys');
DROP ROLE gr_kept_renamed;
-- The trigger function that tells other backends about a grant change is a
-- trigger function only: called directly it refuses (and the backend lives).
SELECT show_error('SELECT idem._grants_changed()');
SELECT 1 AS backend_alive;
DELETE FROM idem.keys WHERE scope = 'orders';
