#!/usr/bin/env bash
# Variants of one library source file, to time side by side in one device lease (`device-session.sh variants`):
#   tools/gpu/make-variants.sh SRC.cu NAME=FILE.cu ...      (after `make gpu-bundle`, whose objects it reuses)
# Each FILE.cu is compiled as SRC.cu is (the same nvcc flags and architectures, from SRC's folder, so that its
# includes resolve), linked into a libladder.so in place of SRC's object, and written xz-compressed to
# .variants/NAME.so.xz; the bundle's own library goes in as the variant "tree". The bundle's ladder program and
# libgomp go beside them, so the device call carries .variants alone (`carry: [".variants"]`, 64 MiB in all: about
# five variants beside the tree). A variant only has to compile: the flags' -Werror is dropped, so that a variant
# that spills can still be timed.
set -euo pipefail
cd "$(dirname "$0")/../.."
[[ $# -ge 2 && -f ${1:-} ]] || { sed -n '2,9p' "$0"; exit 2; }
src=$1
shift
arch=${BUNDLE_ARCH:-90}
obj=obj/${src%.cu}.o
[[ -f build/lib/libladder.so.gz && -f $obj ]] || { echo "make-variants: run make gpu-bundle first" >&2; exit 1; }
compile=$(make -n -W "$src" "$obj" ARCH="$arch" REQUIRE_CUDA=1 | grep '^tools/nvcc-checked.sh nvcc .* -c ')
compile=${compile#tools/nvcc-checked.sh } # a variant may serialize its products: it is only timed
link=$(make -n -W "$obj" build/lib/libladder.so ARCH="$arch" REQUIRE_CUDA=1 | grep '^gcc -shared')
rm -rf .variants && mkdir -p .variants/lib
cp build/bin/ladder .variants/
cp build/lib/libgomp.so.1 .variants/lib/
gzip -dc build/lib/libladder.so.gz | xz -T2 -6 >.variants/tree.so.xz
for v in "$@"; do
    name=${v%%=*} file=${v#*=}
    [[ $name != "$v" && -f $file && $name =~ ^[A-Za-z0-9_-]+$ ]] || { echo "make-variants: not NAME=FILE: $v" >&2; exit 2; }
    copy=$(dirname "$src")/.variant-$name-$(basename "$src")
    cp "$file" "$copy"
    cmd=${compile//"$src"/"$copy"}
    cmd=${cmd//"$obj"/"/tmp/variant-$name.o"}
    cmd=${cmd//-Werror=all-warnings/}
    # shellcheck disable=SC2086 # the commands are lists of arguments
    ${cmd//-Xcompiler=-Werror/}
    rm -f "$copy" "/tmp/variant-$name.d"
    cmd=${link//"$obj"/"/tmp/variant-$name.o"}
    # shellcheck disable=SC2086
    ${cmd//"-o build/lib/libladder.so"/"-o /tmp/variant-$name.so"}
    xz -T2 -6 -c "/tmp/variant-$name.so" >".variants/$name.so.xz"
    rm -f "/tmp/variant-$name.o" "/tmp/variant-$name.so"
    echo "make-variants: .variants/$name.so.xz from $file"
done
du -sh .variants
