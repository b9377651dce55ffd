#!/usr/bin/env bash
# Install what `make test` (Criterion; NumPy and pytest for the Python module's tests), `make docs` (Doxygen) or
# `make fuzz` (clang with its libFuzzer runtime) needs, when it is missing.
#   tools/install-deps.sh test|docs|fuzz|all
# Uses apt-get non-interactively (apt-get update first), through `sudo -n` when not root.
# Without apt-get or the rights to use it, prints the exact packages to install and fails.
set -euo pipefail

want=${1:-all}
pkgs=()
if [[ $want == test || $want == all ]]; then
    [[ -f /usr/include/criterion/criterion.h || -f /usr/local/include/criterion/criterion.h ]] || pkgs+=(libcriterion-dev)
    # NumPy and pytest for the python3 that `make test` runs: Debian's packages serve Debian's python3; another
    # python3 (a pyenv or a virtual environment, where apt's would not be seen) gets them from pip
    if ! command -v python3 >/dev/null; then
        pkgs+=(python3 python3-numpy python3-pytest)
    else
        py=()
        python3 -c 'import numpy' 2>/dev/null || py+=(numpy)
        python3 -c 'import pytest' 2>/dev/null || py+=(pytest)
        if ((${#py[@]})) && [[ $(python3 -c 'import sys; print(sys.prefix)') == /usr ]]; then
            pkgs+=("${py[@]/#/python3-}")
        elif ((${#py[@]})); then
            echo "install-deps: installing ${py[*]} for $(command -v python3) with pip"
            if ! PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q --disable-pip-version-check "${py[@]}"; then
                echo "install-deps: could not install them; please run:" >&2
                echo "    python3 -m pip install ${py[*]}" >&2
                exit 1
            fi
        fi
    fi
fi
if [[ $want == docs || $want == all ]]; then
    command -v doxygen >/dev/null || pkgs+=(doxygen)
fi
if [[ $want == fuzz || $want == all ]]; then
    # Debian's default clang and the runtime that matches it (clang-14 and libclang-rt-14-dev on Debian 12). The
    # runtime is a separate package, so clang alone is not enough: try linking a fuzz target.
    probe=$(mktemp -d)
    echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n) { (void)d; (void)n; return 0; }' >"$probe/t.c"
    if ! command -v clang >/dev/null; then
        pkgs+=(clang libclang-rt-dev)
    elif ! clang -fsanitize=fuzzer "$probe/t.c" -o "$probe/t" 2>/dev/null; then
        pkgs+=(libclang-rt-dev)
    fi
    rm -rf "$probe"
fi
((${#pkgs[@]})) || exit 0

echo "install-deps: installing ${pkgs[*]}"
sudo=()
if [[ $(id -u) != 0 ]]; then
    if sudo -n true 2>/dev/null; then sudo=(sudo -n); else sudo=(false); fi
fi
if command -v apt-get >/dev/null && [[ ${sudo[0]:-} != false ]] &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq &&
    "${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${pkgs[@]}" >/dev/null; then
    exit 0
fi
echo "install-deps: could not install them; please run:" >&2
echo "    sudo apt-get install ${pkgs[*]}" >&2
exit 1
