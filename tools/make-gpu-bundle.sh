#!/usr/bin/env bash
# Turn build/ into a lean bundle for a GPU machine that has no package manager:
# the binaries, libladder.so (every kernel, once; gzipped, unpacked by the run scripts) and the shared
# libraries they need (all found through the $ORIGIN/../lib rpath), the two run scripts, and the commit it
# was built from.
# Objects stay in obj/.
#   tools/make-gpu-bundle.sh BUILD_DIR
set -euo pipefail
build=${1:-build}
cd "$(dirname "$0")/.."

commit=$(tools/commit.sh)
echo "$commit" >"$build/COMMIT"

# the GPU machine cannot build the test program (it has no Criterion): a bundle without it would run no test there
if [[ ! -x $build/bin/ladder-tests ]]; then
    echo "gpu-bundle: $build/bin/ladder-tests is missing (Criterion not installed here? tools/install-deps.sh test)" >&2
    exit 1
fi

# every shared library the binaries load (the rpath is a DT_RPATH, so it also serves the libraries
# that those libraries load), except the C runtime the GPU machine has itself. Whatever else is in
# lib/ (a library from an earlier bundle) must not ride along.
find "$build/lib" -mindepth 1 ! -name libladder.so -delete # (libladder.so.gz too: it is made again below)
for bin in "$build"/bin/*; do
    ldd "$bin" | awk '/=> \//{print $3}'
done | sort -u | while read -r lib; do
    case $(basename "$lib") in
    libc.so.* | libm.so.* | libpthread.so.* | libdl.so.* | librt.so.* | libresolv.so.* | ld-linux* | libgcc_s.so.* | libstdc++.so.*) ;;
    *) [[ -e $build/lib/$(basename "$lib") ]] || cp -L "$lib" "$build/lib/" ;;
    esac
done
for bin in "$build"/bin/*; do
    if ldd "$bin" | grep -q 'not found'; then
        echo "gpu-bundle: $bin needs a library that is not in $build/lib:" >&2
        ldd "$bin" | grep 'not found' >&2
        exit 1
    fi
done
install -m 755 tools/gpu/run-gpu-tests.sh tools/gpu/run-gpu-bench.sh "$build/"
# pytest for the Python module's GPU tests (tools/gpu/device-session.sh python), as wheels: the GPU machine has no
# package index. Pure-Python wheels, so any python3 there takes them; skipped, and said, where none can be fetched.
rm -rf "$build/wheels"
if ! python3 -m pip download -q --disable-pip-version-check -d "$build/wheels" pytest >/dev/null 2>&1; then
    rm -rf "$build/wheels"
    echo "gpu-bundle: pytest's wheels could not be fetched: the GPU machine's python3 must have pytest for the Python tests"
fi

# The kernels' device code is most of libladder.so and compresses about five times: it travels as
# lib/libladder.so.gz, which the run scripts unpack where it is not unpacked yet.
gzip -6 -f "$build/lib/libladder.so"

size=$(du -sm "$build" | cut -f1)
echo "gpu-bundle: $build is ${size} MiB, commit $commit"
if ((size > 48)); then
    echo "gpu-bundle: $build is over 48 MiB; the device machine takes 64 MiB with the working tree" >&2
    exit 1
fi
