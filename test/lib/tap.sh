# Sourced by the suites that print TAP lines themselves (test/docs,
# test/demo, test/cmake): "ok N - name" or "not ok N - name", then the
# details, each line as "#   ..."; test/run_all.sh counts the lines.
TAP_N=0
TAP_FAILED=0

tap_result() {  # ok|fail name [details]
    TAP_N=$((TAP_N + 1))
    if [ "$1" = ok ]; then
        echo "ok $TAP_N - $2"
    else
        echo "not ok $TAP_N - $2"
        TAP_FAILED=$((TAP_FAILED + 1))
    fi
    [ -n "${3:-}" ] && printf '%s\n' "$3" | sed 's/^/#   /'
    return 0
}

tap_finish() {  # suite: the summary line; the exit status says whether all passed
    echo "# $1: $((TAP_N - TAP_FAILED)) of $TAP_N checks passed"
    [ "$TAP_FAILED" -eq 0 ]
}
