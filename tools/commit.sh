#!/usr/bin/env bash
# The commit this checkout is at, as `make bench` reports it and `make gpu-bundle` stamps it: the hash, with
# "-dirty" when tracked files differ from it; "unknown" outside a git checkout.
cd "$(dirname "$0")/.." || exit 1
if commit=$(git rev-parse HEAD 2>/dev/null); then
    git diff --quiet HEAD 2>/dev/null || commit="$commit-dirty"
    echo "$commit"
else
    echo unknown
fi
