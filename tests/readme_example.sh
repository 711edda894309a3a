#!/bin/sh
# The README's library example (examples/row_at.c), run at the first
# instruction of the demo's main: on x86-64 every function entry has
# CFA = rsp+8 with the return address at CFA-8.
set -eu
row_at=$1 demo=$2
addr=$(nm "$demo" | awk '$3 == "main" { print "0x" $1 }')
out=$("$row_at" "$demo" "$addr")
echo "$out"
echo "$out" | grep -qx 'CFA = rsp+8'
echo "$out" | grep -qx 'rip saved at CFA-8'
if "$row_at" "$demo" 0x1 2>/dev/null; then echo "address 0x1 should have no row"; exit 1; fi
