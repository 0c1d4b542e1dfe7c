# Sourced by test/faults/run.sh: each family's invariant, checked in SQL
# after the run. Uses q(), check() and result() of run.sh.

keys_checks() {
    check "keys: each event's effect exactly once" \
        "SELECT count(*) = 300 AND count(DISTINCT event_id) = 300 FROM f_applied"
    check "keys: every balance is the sum of its events" \
        "SELECT bool_and(a.balance = s.total) FROM f_accounts a JOIN (SELECT account, sum(amount) AS total FROM f_events GROUP BY account) s ON s.account = a.id"
}

keys_orphan_check() {
    check "keys: no orphan claim (every key of the scope done, one per event)" \
        "SELECT count(*) = 300 AND bool_and(state = 'done') FROM idem.keys WHERE scope = 'faults'"
}

# A write of token T committed after a claim of a larger token of its key
# committed: the stale worker's write went through. Commit timestamps
# (track_commit_timestamp) order them: a takeover waits for the lock that
# check_lease or save_point holds, so a fenced write commits first or is
# refused. A write whose commit time is unknown counts as a violation.
FENCE_STALE="SELECT w.key, w.token, w.what FROM (SELECT key, token, xmin, 'page ' || page AS what FROM f_pages UNION ALL SELECT key, token, xmin, 'export' FROM f_exported) w
    JOIN f_claims c ON c.key = w.key AND c.token > w.token
    WHERE pg_xact_commit_timestamp(c.xmin) IS NULL OR pg_xact_commit_timestamp(w.xmin) IS NULL
       OR pg_xact_commit_timestamp(c.xmin) < pg_xact_commit_timestamp(w.xmin)"

fence_stale_check() {
    check "fencing: no write of a worker committed after its key was taken over" \
        "SELECT count(*) = 0 FROM ($FENCE_STALE) s"
}

# KEYS: how many exports the run made (24 by the clients, 1 stalled).
fence_checks() {
    local keys=$1
    check "fencing: every claim's token is unique, tokens after the crash above those before, each key's token its last claim's" \
        "SELECT (SELECT count(*) = count(DISTINCT token) AND count(DISTINCT key) = $keys FROM f_claims)
            AND (SELECT COALESCE(max(token) FILTER (WHERE pg_xact_commit_timestamp(xmin) < pg_postmaster_start_time()), 0)
                      < COALESCE(min(token) FILTER (WHERE pg_xact_commit_timestamp(xmin) > pg_postmaster_start_time()), 9e18) FROM f_claims)
            AND (SELECT bool_and(k.token = c.last) FROM idem.keys k JOIN (SELECT key, max(token) AS last FROM f_claims GROUP BY key) c ON c.key = k.key WHERE k.scope = 'fence')"
    check "fencing: each export done once, by its key's last owner, with its 3 pages" \
        "SELECT (SELECT count(*) = $keys AND count(DISTINCT key) = $keys FROM f_exported)
            AND (SELECT count(*) = $keys AND bool_and(k.state = 'done' AND k.token = e.token) FROM idem.keys k JOIN f_exported e ON e.key = k.key WHERE k.scope = 'fence')
            AND (SELECT count(*) = 3 * $keys FROM (SELECT DISTINCT key, page FROM f_pages) p)"
    fence_stale_check
}

# want: each key's highest version and whether that row is a delete.
WANT="SELECT DISTINCT ON (k) k AS id, b AS version, j >= 5 AND b % 2 = 1 AS deleted FROM generate_series(0, 59) b, generate_series(0, 9) j, LATERAL (SELECT (b * 7 + j) % 50 AS k) x ORDER BY k, b DESC"
merge_checks() {
    check "merge: the target holds the highest version of every key, deleted keys absent" \
        "SELECT count(*) = 0 FROM (SELECT * FROM ($WANT) w WHERE NOT deleted) want FULL JOIN f_target t USING (id) WHERE t.version IS DISTINCT FROM want.version OR t.val IS DISTINCT FROM md5(id || ':' || want.version)"
}

merge_history_checks() {
    check "merge: a key deleted last has its tombstone at that version" \
        "SELECT count(*) > 0 AND bool_and(EXISTS (SELECT FROM idem.tombstones t WHERE t.target = 'f_target'::regclass AND t.key_data = jsonb_build_array(w.id) AND t.version = w.version::text)) FROM ($WANT) w WHERE w.deleted"
    check "merge: the run history has a run for every batch, its counts add up to the target's rows" \
        "SELECT count(*) >= 60 AND sum((counts->>'inserted')::bigint) - sum((counts->>'deleted')::bigint) = (SELECT count(*) FROM f_target)
           FROM idem.run_log WHERE function_name = 'merge_query' AND target = 'public.f_target'"
}

publish_bookkeeping_check() {
    check "publish: the bookkeeping matches the tables" \
        "SELECT (SELECT count(*) FROM idem.dataset_versions v WHERE v.view_name = 'f_pub' AND (to_regclass(v.relation::text) IS NULL OR (SELECT count(*) FROM pg_class c WHERE c.oid = v.relation) <> 1)) = 0
            AND (SELECT count(*) FROM pg_class c WHERE c.relname LIKE 'f\\_pub\\_\\_v%' AND c.relkind = 'r' AND c.oid NOT IN (SELECT relation FROM idem.dataset_versions WHERE view_name = 'f_pub')) = 0
            AND (SELECT current_version IS NOT NULL FROM idem.datasets WHERE view_name = 'f_pub')"
}

# The readers' logs (reader-1, reader-2): every statement saw whole units
# (no "torn:"), and none failed otherwise: an ERROR other than the crash's
# lost connections (psql says FATAL, "server closed the connection" or
# "could not connect" for those).
reader_checks() {
    local reads torn errors
    reads=$(cat "$WORK"/reader-[0-9].log | grep -c '^t$')
    torn=$(cat "$WORK"/reader-[0-9].log | grep -c 'torn:')
    errors=$(cat "$WORK"/reader-[0-9].log | grep 'ERROR:' | grep -v 'torn:' | sort | uniq -c | head -5)
    if [ "$torn" -eq 0 ] && [ "$reads" -gt 0 ]; then
        result ok "readers never saw a partial partition or version ($reads reads)"
    else
        result fail "readers never saw a partial partition or version" "$(grep -h 'torn:' "$WORK"/reader-[0-9].log | sort | uniq -c | head -5)"
    fi
    if [ -z "$errors" ]; then
        result ok "readers never failed (swaps, rewrites and flips made them wait at most)"
    else
        result fail "readers never failed" "$errors"
    fi
}

family_checks() {
    check "append: each event id once, its content intact, the runs' inserted counts equal to the rows" \
        "SELECT count(*) = 405 AND count(DISTINCT event_id) = 405 AND bool_and(payload = repeat(md5(event_id::text), 20)) AND min(event_id) = 0 AND max(event_id) = 404
                AND count(*) = (SELECT sum((counts->>'inserted')::bigint) FROM idem.run_log WHERE function_name = 'append_query' AND target = 'public.f_log')
           FROM f_log"
    check "overwrite: each day holds one job's 200 rows, and no staging or kept table is left" \
        "SELECT (SELECT count(*) = 5 AND bool_and(n = 200 AND stamps = 1 AND stamp % 5 = extract(day FROM day)::int - 1) FROM (SELECT day, count(*) AS n, count(DISTINCT amount) AS stamps, min(amount) AS stamp FROM f_sales GROUP BY day) d)
            AND (SELECT count(*) = 6 FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public' AND c.relname LIKE 'f\\_sales%' AND c.relkind IN ('r', 'p'))"
    check "publish: the view shows one whole version" \
        "SELECT count(*) = 100 AND count(DISTINCT stamp) = 1 FROM f_pub"
    publish_bookkeeping_check
    check "checkpoints: the data and the watermark moved together" \
        "SELECT count(*) = 300 AND count(DISTINCT event_id) = 300 AND max(event_id) = idem.watermark('f_loader')::int FROM f_loaded"
    check "snapshot: one current version per key, no gaps or overlaps" \
        "SELECT (SELECT count(*) = 30 AND count(DISTINCT id) = 30 FROM f_hist WHERE valid_to IS NULL)
            AND (SELECT count(*) = 0 FROM (SELECT valid_to, lead(valid_from) OVER (PARTITION BY id ORDER BY valid_from) AS next FROM f_hist) v WHERE v.next IS NOT NULL AND v.valid_to IS DISTINCT FROM v.next)
            AND (SELECT count(*) = 0 FROM f_hist WHERE valid_to IS NOT NULL AND valid_to <= valid_from)"
}

# Every valid B-tree index of idem and the jobs, and the server log: no
# crash but the one backend the suite killed (the postmaster's kill -9
# leaves no line).
server_checks() {
    local amcheck crashes
    amcheck=$(q -c "SELECT count(*) FROM (SELECT bt_index_parent_check(c.oid, true) FROM pg_index i JOIN pg_class c ON c.oid = i.indexrelid JOIN pg_am a ON a.oid = c.relam JOIN pg_namespace n ON n.oid = c.relnamespace WHERE a.amname = 'btree' AND c.relkind = 'i' AND n.nspname IN ('idem', 'public') AND c.relpersistence <> 't' AND i.indisvalid) x" 2>&1)
    if [[ "$amcheck" =~ ^[0-9]+$ ]] && [ "$amcheck" -gt 10 ]; then
        result ok "every B-tree index of idem and the jobs passes bt_index_parent_check(heapallindexed) ($amcheck indexes)"
    else
        result fail "every B-tree index passes bt_index_parent_check(heapallindexed)" "$amcheck"
    fi
    crashes=$(grep -E "terminated by signal|PANIC|TRAP:" "$SERVER_LOG")
    if [ "$(grep -c "terminated by signal 9" <<<"$crashes")" -le 1 ] && ! grep -v "terminated by signal 9" <<<"$crashes" | grep -q .; then
        result ok "no backend crashed but the one the suite killed"
    else
        result fail "no backend crashed but the one the suite killed" "$crashes"
    fi
}

# The outbox: exactly the jobs' effects (keys fx-0 to fx-81 of the queries,
# fx1-0 to fx1-39 one per job), each delivered, applied once by the
# receiver, and done with the answer of its own last attempt's call.
effects_checks() {
    check "effects: the outbox holds exactly the jobs' effects, every one delivered" \
        "SELECT array_agg(key ORDER BY key) = (SELECT array_agg(k ORDER BY k) FROM (SELECT 'fx-' || g FROM generate_series(0, 81) g UNION ALL SELECT 'fx1-' || g FROM generate_series(0, 39) g) s(k))
                AND bool_and(state = 'done')
           FROM idem.effects WHERE scope = 'faults' AND kind = 'fx'"
    check "effects: the receiver applied each effect once, and nothing else" \
        "SELECT (SELECT array_agg(key ORDER BY key) FROM f_fx_applied) = (SELECT array_agg(key ORDER BY key) FROM idem.effects WHERE scope = 'faults' AND kind = 'fx')"
    effects_stale_check
}

effects_stale_check() {
    check "effects: every done effect holds its own payload and the answer of its current token (no stale report took hold)" \
        "SELECT bool_and((answer->>'token')::bigint = token AND answer->'payload' = payload) FROM idem.effects WHERE state = 'done'"
}

# effects_stale_report: dispatcher A takes effect "fx-stale" with a 100 ms
# lease and stalls; B takes it over and reports done; then A reports done
# with its old token. Prints A's report's outcome (the error's first line,
# or "accepted"). In the same order every run: no timing.
effects_stale_report() {
    local a b out
    q -c "SELECT idem.record_effect('fx-stale', 'fx_stale', '{\"n\": 0}', scope => 'faults')" >/dev/null
    a=$(q -c "SELECT token FROM idem.take_effects('fx_stale', lease => '100 ms', scope => 'faults')")
    sleep 0.3
    b=$(q -c "SELECT token FROM idem.take_effects('fx_stale', scope => 'faults')")
    q -c "SELECT idem.effect_done('fx-stale', $b, '{\"token\": $b, \"payload\": {\"n\": 0}}', 'faults')" >/dev/null
    if out=$(q -c "SELECT idem.effect_done('fx-stale', $a, '{\"token\": $a, \"payload\": {\"n\": 0}}', 'faults')" 2>&1); then
        echo accepted
    else
        head -1 <<<"$out"
    fi
}
