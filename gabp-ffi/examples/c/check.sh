#!/usr/bin/env bash
# Builds examples/c/minimal_mod.c and examples/c/harness.c with the system C compiler against libgabp, runs
# the mod under valgrind memcheck for a full `gabp conformance` session and the harness's checks (the harness
# under memcheck too), and checks that the mod ends cleanly at the end of its stdin (0 memcheck errors,
# nothing definitely lost in either) and on SIGTERM.
# Usage: check.sh TARGET_PROFILE_DIR GABP_BINARY   (e.g. target/debug target/debug/gabp)
set -euo pipefail
lib_dir=$(cd "$1" && pwd)
gabp=$2
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cleanup() {
  exec 7>&- 8>&- 2>/dev/null || true
  [ -n "${mod_pid:-}" ] && kill "$mod_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

cc -std=c99 -D_DEFAULT_SOURCE -Wall -Wextra -Werror "$here/minimal_mod.c" -I "$here/../../include" \
  -L "$lib_dir" "-Wl,-rpath,$lib_dir" -lgabp -lpthread -o "$work/minimal_mod"
cc -std=c99 -D_DEFAULT_SOURCE -Wall -Wextra -Werror "$here/harness.c" -I "$here/../../include" \
  -L "$lib_dir" "-Wl,-rpath,$lib_dir" -lgabp -lpthread -o "$work/harness"

token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
export HOME="$work" GABP_TOKEN="$token" GABP_SERVER_PORT="$port"
unset GABS_GAME_ID

mkfifo "$work/stdin"
valgrind --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite --error-exitcode=3 \
  --log-file="$work/valgrind.log" "$work/minimal_mod" < "$work/stdin" > "$work/stdout" 2>&1 &
mod_pid=$!
exec 7>"$work/stdin"
for _ in $(seq 1 300); do
  grep -q "^listening on" "$work/stdout" 2>/dev/null && break
  sleep 0.1
done
if ! grep -q "^listening on tcp://127.0.0.1:$port" "$work/stdout"; then
  echo "FAIL: the C example did not start under valgrind:" >&2
  cat "$work/stdout" "$work/valgrind.log" >&2
  exit 1
fi
if ! "$gabp" conformance --connect "tcp://127.0.0.1:$port" \
    --event-tool world/step --event-channel world/stepped > "$work/conformance" 2>&1; then
  cat "$work/conformance"
  echo "FAIL: gabp conformance against the C example" >&2
  exit 1
fi
tail -1 "$work/conformance"
if grep -E "^skip .*\[(MUST|SHOULD)\]" "$work/conformance"; then
  echo "FAIL: a MUST or SHOULD check was skipped against the C example" >&2
  exit 1
fi
if ! valgrind --leak-check=full --show-leak-kinds=definite --errors-for-leak-kinds=definite \
    --error-exitcode=3 --log-file="$work/harness-valgrind.log" \
    "$work/harness" "tcp://127.0.0.1:$port" "$token" > "$work/harness.out" 2>&1; then
  cat "$work/harness.out" "$work/harness-valgrind.log"
  echo "FAIL: the C harness against the C example" >&2
  exit 1
fi
tail -1 "$work/harness.out"
grep -E "ERROR SUMMARY" "$work/harness-valgrind.log"
exec 7>&- # the end of its stdin: the example stops
status=0
wait "$mod_pid" || status=$?
mod_pid=""
grep -E "ERROR SUMMARY|definitely lost|Invalid|uninitialised" "$work/valgrind.log" || true
if [ "$status" -ne 0 ] || ! grep -q "ERROR SUMMARY: 0 errors" "$work/valgrind.log" \
    || grep -qE "definitely lost: [1-9]" "$work/valgrind.log"; then
  cat "$work/stdout"
  echo "FAIL: the C example under valgrind ended with status $status, or memcheck found errors or leaks" >&2
  exit 1
fi
echo "valgrind: 0 errors, nothing definitely lost"

# SIGTERM ends it cleanly too (without valgrind: quick), its stdin still open.
mkfifo "$work/stdin2"
"$work/minimal_mod" < "$work/stdin2" > "$work/stdout2" 2>&1 &
mod_pid=$!
exec 8>"$work/stdin2"
for _ in $(seq 1 100); do grep -q "^listening on" "$work/stdout2" 2>/dev/null && break; sleep 0.05; done
kill -TERM "$mod_pid"
status=0
wait "$mod_pid" || status=$?
mod_pid=""
exec 8>&-
if [ "$status" -ne 0 ]; then
  cat "$work/stdout2"
  echo "FAIL: the C example exited with status $status on SIGTERM" >&2
  exit 1
fi
echo "SIGTERM: clean exit"
