#!/bin/sh
# Golden dump test: assemble tests/cli/shapes.S (fixed addresses) and diff
# `backstep dump` and `backstep dump --rows --json` against the checked-in
# text. With --update, rewrite the golden files instead.
#   golden.sh BACKSTEP SRCDIR [--update]
set -eu
backstep=$1 dir=$2 update=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
gcc -nostdlib -static -Wl,--build-id=none -o "$tmp/shapes" "$dir/shapes.S"
"$backstep" dump "$tmp/shapes" | sed "s|$tmp/||" > "$tmp/text"
"$backstep" dump --rows --json "$tmp/shapes" > "$tmp/json"
"$backstep" dump --pc 0x401027 "$tmp/shapes" > "$tmp/pc"
if [ "$update" = --update ]; then
	cp "$tmp/text" "$dir/shapes.golden"
	cp "$tmp/json" "$dir/shapes.json.golden"
	cp "$tmp/pc" "$dir/shapes.pc.golden"
	exit 0
fi
diff -u "$dir/shapes.golden" "$tmp/text"
diff -u "$dir/shapes.json.golden" "$tmp/json"
diff -u "$dir/shapes.pc.golden" "$tmp/pc"
echo "golden dumps match"
