-- The security suite, third round (issue 41): hardening. Each block fails
-- on 0.8.0.

-- 1. idem.append checked SELECT and INSERT, but into a table with a unique
-- index on the key its statement's ON CONFLICT ... DO UPDATE (which updates
-- no row) needs UPDATE too: PostgreSQL's bare "permission denied" came
-- from the middle of the statement, only when the batch held an event the
-- table had. Now it is checked up front, with the extension's message.
CREATE ROLE hard_loader;
CREATE TABLE hard_events (id int PRIMARY KEY, payload text);
CREATE TABLE hard_batch (id int, payload text);
INSERT INTO hard_events VALUES (1, 'one');
INSERT INTO hard_batch VALUES (1, 'one'), (2, 'two');
GRANT SELECT, INSERT ON hard_events TO hard_loader;
GRANT SELECT ON hard_batch TO hard_loader;
SET ROLE hard_loader;
SELECT show_error($$SELECT * FROM idem.append('hard_events', 'hard_batch')$$);
RESET ROLE;
GRANT UPDATE ON hard_events TO hard_loader;
SET ROLE hard_loader;
SELECT * FROM idem.append('hard_events', 'hard_batch');
SELECT * FROM idem.append('hard_events', 'hard_batch');
RESET ROLE;
SELECT id, payload FROM hard_events ORDER BY id;
