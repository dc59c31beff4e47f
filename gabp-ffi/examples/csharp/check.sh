#!/usr/bin/env bash
# Compiles examples/csharp/VoxelMod.cs with Gabp.cs using Mono's mcs, runs it on mono against libgabp, checks it
# with `gabp conformance`, then drives it through `gabp mcp` with the official MCP Python SDK (mcp_check.py).
# Usage: check.sh TARGET_PROFILE_DIR GABP_BINARY PYTHON_WITH_MCP
set -euo pipefail
lib_dir=$(cd "$1" && pwd)
gabp=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
python=$3
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)
cleanup() {
  exec 7>&- 2>/dev/null || true
  [ -n "${mod_pid:-}" ] && kill "$mod_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

mcs -langversion:7.2 -warnaserror+ -out:"$work/VoxelMod.exe" "$here/../../bindings/csharp/Gabp.cs" "$here/VoxelMod.cs"

token=$(head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n')
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkfifo "$work/stdin"
HOME="$work" GABP_TOKEN="$token" GABP_SERVER_PORT="$port" LD_LIBRARY_PATH="$lib_dir" \
  mono "$work/VoxelMod.exe" < "$work/stdin" > "$work/stdout" 2>&1 &
mod_pid=$!
exec 7>"$work/stdin"
for _ in $(seq 1 300); do
  grep -q "^listening on" "$work/stdout" 2>/dev/null && break
  sleep 0.1
done
if ! grep -q "^listening on tcp://127.0.0.1:$port" "$work/stdout"; then
  echo "FAIL: the C# voxel mod did not start on Mono:" >&2
  cat "$work/stdout" >&2
  exit 1
fi
if ! GABP_TOKEN="$token" "$gabp" conformance --connect "tcp://127.0.0.1:$port" \
    --event-tool player/teleport --event-channel player/move \
    --event-args '{"x":1,"y":5,"z":1}' --event-args '{"x":2,"y":5,"z":2}' --event-args '{"x":3,"y":5,"z":3}' \
    > "$work/conformance" 2>&1; then
  cat "$work/conformance"
  echo "FAIL: gabp conformance against the C# voxel mod" >&2
  exit 1
fi
tail -1 "$work/conformance"
exec 7>&-
status=0
wait "$mod_pid" || status=$?
mod_pid=""
if [ "$status" -ne 0 ]; then
  cat "$work/stdout"
  echo "FAIL: the C# voxel mod exited with status $status at the end of its stdin" >&2
  exit 1
fi

timeout 300 "$python" "$here/mcp_check.py" "$gabp" "$work/VoxelMod.exe" "$lib_dir"
