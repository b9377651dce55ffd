#!/usr/bin/env bash
# tools/nvcc-checked.sh NVCC ARGS...: run the nvcc command line, its messages passed on, and fail where ptxas reports
# C7513 (a Hopper kernel's wgmma products serialized: each waits for the one before). ptxas prints that advisory as
# information, not as a warning, so -Werror lets it pass; a kernel that meets it runs a third slower or worse.
set -uo pipefail
messages=$(mktemp)
trap 'rm -f "$messages"' EXIT
"$@" 2>"$messages"
status=$?
cat "$messages" >&2
if grep -q C7513 "$messages"; then
    echo "nvcc-checked: ptxas serialized wgmma products (C7513) in: ${*: -3:1}" >&2
    status=1
fi
exit "$status"
