#!/bin/sh
# The installed library as a user gets it: install into a scratch prefix,
# check that the shared library exports only bk_* names, then build the
# README's example against the installed header and library with pkg-config
# (shared and static) and run it at the first instruction of the demo's
# main, where its first line must be CFA_LINE. A cross build gives its
# compiler as CC, its pkg-config directories as PKG_CONFIG_LIBDIR and the
# command that runs its programs as EXE_WRAPPER.
#   install_check.sh BUILD_DIR SOURCE_DIR DEMO_EXE CFA_LINE
set -eu
build=$1 src=$2 demo=$3 cfa=$4
cc=${CC:-cc}
run() { ${EXE_WRAPPER:-} "$@"; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
meson install -C "$build" --destdir "$tmp/root" --no-rebuild >/dev/null
so=$(find "$tmp/root" -name 'libbackstep.so.*.*' | head -n1)
pc=$(dirname "$(find "$tmp/root" -name backstep.pc | head -n1)")
[ -n "$so" ] && [ -n "$pc" ] || { echo "library or pkg-config file not installed"; exit 1; }
# The manual page and the bash completion.
man1=$(find "$tmp/root" -path '*/share/man/man1/backstep.1' | head -n1)
comp=$(find "$tmp/root" -path '*/share/bash-completion/completions/backstep' | head -n1)
[ -n "$man1" ] || { echo "man page not installed (share/man/man1/backstep.1)"; exit 1; }
[ -n "$comp" ] || { echo "bash completion not installed (share/bash-completion/completions/backstep)"; exit 1; }
warn=$(groff -man -Tutf8 -ww -z "$man1" 2>&1)
[ -z "$warn" ] || { echo "man page: groff warns: $warn"; exit 1; }
groff -man -Tascii -P-cbou "$man1" 2>/dev/null | grep -q 'EXIT STATUS' || { echo "man page does not render"; exit 1; }
subs=$(bash -c '. "$1"; COMP_WORDS=(backstep ""); COMP_CWORD=1; _backstep; echo "${COMPREPLY[*]}"' _ "$comp")
for s in run pid core dump check validate report record; do
	case " $subs " in *" $s "*) ;; *) echo "installed completion lacks $s: $subs"; exit 1 ;; esac
done
echo "man page and bash completion installed: $man1, $comp"
others=$(nm -D --defined-only "$so" | awk '{print $3}' | grep -v '^bk_' || true)
[ -z "$others" ] || { echo "exported beyond bk_*: $others"; exit 1; }
echo "exports: $(nm -D --defined-only "$so" | wc -l) symbols, all bk_*"
export PKG_CONFIG_PATH="$pc" PKG_CONFIG_SYSROOT_DIR="$tmp/root"
$cc -o "$tmp/row_at" "$src/examples/row_at.c" $(pkg-config --cflags --libs backstep) \
	-Wl,-rpath,"$(dirname "$so")"
$cc -o "$tmp/row_at_static" "$src/examples/row_at.c" $(pkg-config --cflags backstep) \
	"$(dirname "$so")/libbackstep.a" $(pkg-config --libs-only-l --static backstep | sed 's/-lbackstep//')
addr=$(nm "$demo" | awk '$3 == "main" { print "0x" $1 }')
run "$tmp/row_at" "$demo" "$addr" | grep -qxF "$cfa"
run "$tmp/row_at_static" "$demo" "$addr" | grep -qxF "$cfa"
echo "installed header, shared and static library work through pkg-config"
