\echo '== What the demo showed'
\echo 'A plain INSERT is not rerun-safe: one retry doubled the revenue.'
\echo 'idem.checksum caught it: same rows in any order give the same checksum,'
\echo 'and any extra, missing or changed row gives another one.'
\echo 'idem.merge cured it for a keyed table: a rerun reports unchanged = n and'
\echo 'writes nothing; a real change is applied exactly once.'
\echo 'idem.claim made a twice-delivered webhook fulfil its order once, in the'
\echo 'same transaction as the fulfilment, and refused a key reused for another request.'
\echo
