#!/bin/sh
# The README's library example (examples/row_at.c), run at the first
# instruction of the demo's main (built for ARCH, the host's): on x86-64
# every function entry has CFA = rsp+8 with the return address at CFA-8;
# on AArch64 CFA = sp+0 and the return address is still in x30, so no
# register is saved anywhere yet.
#   readme_example.sh ROW_AT DEMO ARCH
set -eu
row_at=$1 demo=$2 arch=$3
addr=$(nm "$demo" | awk '$3 == "main" { print "0x" $1 }')
out=$("$row_at" "$demo" "$addr")
echo "$out"
case $arch in
x86_64)
	echo "$out" | grep -qx 'CFA = rsp+8'
	echo "$out" | grep -qx 'rip saved at CFA-8'
	;;
aarch64)
	[ "$out" = 'CFA = sp+0' ] || { echo "expected exactly 'CFA = sp+0'"; exit 1; }
	;;
*)
	echo "readme_example.sh: no expectation for $arch"; exit 1
	;;
esac
if "$row_at" "$demo" 0x1 2>/dev/null; then echo "address 0x1 should have no row"; exit 1; fi
