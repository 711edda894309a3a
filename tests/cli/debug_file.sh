#!/bin/sh
# `backstep dump --debug-file`: the .debug_frame of a separate debug file,
# found through .gnu_debuglink next to the stripped file, is dumped and
# marked as coming from it; without the option it is not.
#   debug_file.sh BACKSTEP
set -eu
backstep=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cat > "$tmp/prog.c" <<'C'
__attribute__((noinline)) int leaf(int x) { return x * 3; }
int main(int argc, char **argv) { (void)argv; return leaf(argc); }
C
# No .eh_frame at all: the only unwind information is .debug_frame.
gcc -g -O1 -fno-asynchronous-unwind-tables -fno-exceptions -Wl,--build-id=none \
	-o "$tmp/prog" "$tmp/prog.c"
objcopy --only-keep-debug "$tmp/prog" "$tmp/prog.debug"
strip -g "$tmp/prog"
(cd "$tmp" && objcopy --add-gnu-debuglink=prog.debug prog)
if readelf -S "$tmp/prog" | grep -q debug_frame; then echo "strip left .debug_frame"; exit 1; fi

# Without the option: the stripped file's own sections only.
"$backstep" dump --rows --json --section debug "$tmp/prog" 2>"$tmp/err" && {
	echo "expected an error: no .debug_frame in the stripped file"; exit 1; }
grep -q "no unwind sections" "$tmp/err"

"$backstep" dump --rows --json --debug-file --section debug "$tmp/prog" > "$tmp/json"
n=$(grep -c '"from_debug_file": true' "$tmp/json")
[ "$n" -ge 2 ] || { echo "expected FDEs from the debug file, got $n"; cat "$tmp/json"; exit 1; }
grep -q '"section": ".debug_frame"' "$tmp/json"
"$backstep" dump --debug-file "$tmp/prog" | grep -q "separate debug file: $tmp/prog.debug"

# A debug file whose CRC does not match is not used.
printf 'x' >> "$tmp/prog.debug"
"$backstep" dump --debug-file --section debug "$tmp/prog" > /dev/null 2>"$tmp/err2" || true
grep -q "no separate debug file found" "$tmp/err2"
echo "separate debug file found, dumped and marked; a wrong CRC rejected"
