#!/bin/sh
# Regenerates the seed corpora fuzz/corpus/{loader,eh_frame,expr}/ from
# small programs built here with the toolchains of the Debian 12 image
# (gcc, clang, g++, aarch64-linux-gnu-gcc, binutils, llvm-objcopy), the
# system's /usr/bin/ls and glibc, and the hand-written expressions in
# seedtool.py. The result depends on the toolchain versions; that is fine for
# seeds. Keep each corpus small (under ~40 files and ~2 MB): the fuzzer finds
# its own variations, the seeds only have to reach the interesting shapes.
#
#   fuzz/make_seeds.sh            # rewrites fuzz/corpus/*/
#
# A toolchain that is missing only skips the seeds that need it.
set -eu

here=$(cd "$(dirname "$0")" && pwd)
corpus=$here/corpus
tool="python3 $here/seedtool.py"
work=$(mktemp -d "${TMPDIR:-/tmp}/backstep-seeds.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM
cd "$work"

# Reproducible output: no temporary directory names in debug info.
CFLAGS_MAP="-ffile-prefix-map=$work=."
have() { command -v "$1" >/dev/null 2>&1; }
try() { "$@" 2>/dev/null || echo "make_seeds.sh: skipped: $*" >&2; }

rm -rf "$corpus/loader" "$corpus/eh_frame" "$corpus/expr"
mkdir -p "$corpus/loader" "$corpus/eh_frame" "$corpus/expr"

# ---- Sources -------------------------------------------------------------------

cat >hello.c <<'EOF'
#include <stdio.h>
static int depth(int n) { return n ? depth(n - 1) + 1 : 0; }
int main(int argc, char **argv) { (void)argv; printf("%d\n", depth(argc)); return 0; }
EOF

cat >lib.c <<'EOF'
int lib_add(int a, int b) { return a + b; }
int lib_call(int (*f)(int), int x) { return f(x) + 1; }
EOF

cat >throw.cc <<'EOF'
#include <stdexcept>
int f(int x) { if (x > 3) throw std::runtime_error("x"); return x; }
int main(int argc, char **) { try { return f(argc); } catch (const std::exception &) { return 1; } }
EOF

# _start only: the smallest ELF executables, no libc.
cat >start.c <<'EOF'
static int g(int x) { return x * 3; }
void _start(void) { volatile int r = g(14); (void)r; for (;;) __builtin_trap(); }
EOF

# Every DW_CFA opcode gas can emit, and the rest through .cfi_escape.
cat >cfi_ops.S <<'EOF'
#ifdef DEBUG_FRAME
	.cfi_sections .debug_frame
#endif
	.text
	.globl f_ops
	.type f_ops, @function
f_ops:
	.cfi_startproc
#ifndef DEBUG_FRAME
	.cfi_personality 0x9b, DW.ref.pers
	.cfi_lsda 0x1b, .Llsda
#endif
	push %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset %rbp, 0
	mov %rsp, %rbp
	.cfi_def_cfa_register %rbp
	.cfi_remember_state
	push %rbx
	.cfi_offset %rbx, -24
	.cfi_val_offset %r12, -32
	.cfi_register %r13, %r14
	.cfi_undefined %r15
	.cfi_same_value %r12
	nop
	.cfi_restore_state
	.cfi_escape 0x2e, 0x10                          /* DW_CFA_GNU_args_size 16 */
	.cfi_escape 0x10, 0x0c, 0x02, 0x76, 0x70        /* DW_CFA_expression r12 */
	.cfi_escape 0x16, 0x0d, 0x03, 0x76, 0x68, 0x06  /* DW_CFA_val_expression r13 */
	nop
	.cfi_escape 0x0f, 0x03, 0x76, 0x78, 0x06        /* DW_CFA_def_cfa_expression */
	nop
	.cfi_def_cfa %rsp, 8
	.cfi_restore %rbp
	.cfi_escape 0x06, 0x03                          /* DW_CFA_restore_extended rbx */
	ret
	.cfi_endproc
	.size f_ops, . - f_ops

	.globl f_signal
	.type f_signal, @function
	nop
f_signal:
	.cfi_startproc simple
	.cfi_signal_frame
	.cfi_def_cfa %rsp, 160
	.cfi_return_column 16
	.cfi_escape 0x11, 0x03, 0x7e                    /* DW_CFA_offset_extended_sf rbx */
	.cfi_escape 0x05, 0x06, 0x03                    /* DW_CFA_offset_extended rbp */
	.cfi_escape 0x14, 0x0c, 0x02                    /* DW_CFA_val_offset r12 */
	.cfi_escape 0x15, 0x0d, 0x7c                    /* DW_CFA_val_offset_sf r13 */
	.cfi_escape 0x2f, 0x0e, 0x02                    /* DW_CFA_GNU_negative_offset_extended */
	nop
	.cfi_escape 0x12, 0x07, 0x7e                    /* DW_CFA_def_cfa_sf rsp, 16 */
	nop
	.cfi_escape 0x13, 0x7d                          /* DW_CFA_def_cfa_offset_sf 24 */
	.cfi_escape 0x02, 0x01                          /* DW_CFA_advance_loc1 */
	nop
	.cfi_escape 0x03, 0x01, 0x00                    /* DW_CFA_advance_loc2 */
	nop
	.cfi_escape 0x04, 0x01, 0x00, 0x00, 0x00        /* DW_CFA_advance_loc4 */
	.cfi_escape 0x00                                /* DW_CFA_nop */
	nop
	nop
	ret
	.cfi_endproc
	.size f_signal, . - f_signal

	.globl pers
pers:
	ret
#ifndef DEBUG_FRAME
	.section .gcc_except_table, "a"
.Llsda:
	.byte 0xff, 0xff, 0x01, 0x00
	.section .data.rel.local.DW.ref.pers, "aw"
	.align 8
	.hidden DW.ref.pers
DW.ref.pers:
	.quad pers
#endif
	.section .note.GNU-stack, "", @progbits
EOF

cat >cfi_a64.S <<'EOF'
	.text
	.globl f_pac
	.type f_pac, %function
f_pac:
	.cfi_startproc
	.cfi_b_key_frame
	hint 27                 /* pacibsp */
	.cfi_window_save        /* DW_CFA_AARCH64_negate_ra_state */
	stp x29, x30, [sp, -32]!
	.cfi_def_cfa_offset 32
	.cfi_offset 29, -32
	.cfi_offset 30, -24
	mov x29, sp
	.cfi_def_cfa_register 29
	.cfi_remember_state
	str x19, [sp, 16]
	.cfi_offset 19, -16
	.cfi_escape 0x10, 0x14, 0x02, 0x8f, 0x18        /* DW_CFA_expression x20: sp+24 */
	ldp x29, x30, [sp], 32
	.cfi_restore 29
	.cfi_restore 30
	.cfi_def_cfa 31, 0
	hint 31                 /* autibsp */
	.cfi_window_save
	ret
	.cfi_restore_state
	nop
	ret
	.cfi_endproc
	.size f_pac, . - f_pac
	.section .note.GNU-stack, "", %progbits
EOF

# ---- Loader: whole ELF files ------------------------------------------------------

L=$corpus/loader
try gcc -Os -s -o "$L/x86_64_gcc_pie" hello.c
try clang -Os -s -no-pie -Wl,-z,noseparate-code -o "$L/x86_64_clang_nopie" hello.c
try gcc -Os -s -shared -fPIC -Wl,-z,noseparate-code -o "$L/x86_64_lib.so" lib.c
try gcc -Os -c -o "$L/x86_64_obj.o" hello.c
try gcc -Os -g $CFLAGS_MAP -fno-asynchronous-unwind-tables -c -o "$L/x86_64_debug_frame.o" lib.c
try gcc -Os -g $CFLAGS_MAP -gz=zlib -fno-asynchronous-unwind-tables -c -o "$L/x86_64_gz.o" lib.c
if [ -f "$L/x86_64_debug_frame.o" ]; then
	try objcopy --compress-debug-sections=zlib-gnu "$L/x86_64_debug_frame.o" "$L/x86_64_zdebug.o"
fi
try gcc -Os -s -nostdlib -static -Wl,--build-id -Wl,--eh-frame-hdr -o "$L/x86_64_nolibc" start.c
if [ -f "$L/x86_64_nolibc" ]; then
	try llvm-objcopy --strip-sections "$L/x86_64_nolibc" "$L/x86_64_no_shdrs"
	: >empty.debug
	try objcopy --add-gnu-debuglink=empty.debug "$L/x86_64_nolibc" "$L/x86_64_debuglink"
fi
try gcc -m32 -Os -s -nostdlib -static -Wl,--build-id -Wl,--eh-frame-hdr -o "$L/i386_nolibc" start.c
try gcc -m32 -Os -g $CFLAGS_MAP -fno-asynchronous-unwind-tables -c -o "$L/i386_debug_frame.o" lib.c
try g++ -Os -s -Wl,-z,noseparate-code -o "$L/x86_64_gxx_throw" throw.cc
try gcc -s -nostdlib -shared -Wl,-z,noseparate-code -o "$L/x86_64_cfi_ops.so" cfi_ops.S
if have aarch64-linux-gnu-gcc; then
	# 4 KiB pages: the default 64 KiB alignment makes 64 KiB files of padding.
	a64="aarch64-linux-gnu-gcc -Wl,-z,max-page-size=4096"
	try $a64 -Os -s -o "$L/aarch64_gcc_pie" hello.c
	try $a64 -Os -s -mbranch-protection=pac-ret+b-key -o "$L/aarch64_pac_b_key" hello.c
	try $a64 -Os -s -shared -fPIC -o "$L/aarch64_lib.so" lib.c
	try $a64 -Os -c -o "$L/aarch64_obj.o" hello.c
	try $a64 -s -nostdlib -shared -o "$L/aarch64_cfi_ops.so" cfi_a64.S
fi

# ---- eh_frame: sections in fuzz_eh_frame's format ----------------------------------

E=$corpus/eh_frame
for f in x86_64_gcc_pie x86_64_clang_nopie x86_64_lib.so x86_64_gxx_throw x86_64_cfi_ops.so \
	 x86_64_nolibc i386_nolibc aarch64_gcc_pie aarch64_pac_b_key aarch64_lib.so \
	 aarch64_cfi_ops.so x86_64_obj.o aarch64_obj.o; do
	[ -f "$L/$f" ] && try $tool eh "$L/$f" "$E/$f"
done
# Other shapes of the same tables: no header (the index), header tables in
# other encodings.
[ -f "$L/x86_64_gcc_pie" ] && try $tool eh "$L/x86_64_gcc_pie" "$E/x86_64_gcc_pie_nohdr" --no-hdr
[ -f "$L/x86_64_gxx_throw" ] && try $tool eh "$L/x86_64_gxx_throw" "$E/x86_64_gxx_hdr_sdata8" --hdr-enc 0x3c
[ -f "$L/aarch64_gcc_pie" ] && try $tool eh "$L/aarch64_gcc_pie" "$E/aarch64_hdr_udata8" --hdr-enc 0x04
[ -f "$L/i386_nolibc" ] && try $tool eh "$L/i386_nolibc" "$E/i386_hdr_udata4" --hdr-enc 0x03
# .debug_frame, linked (real addresses) and from objects.
try gcc -Os -g $CFLAGS_MAP -fno-asynchronous-unwind-tables -o dbg_x86_64 hello.c
try $tool eh dbg_x86_64 "$E/x86_64_debug_frame" --debug-frame
try gcc -nostdlib -shared -DDEBUG_FRAME -o dbg_ops.so cfi_ops.S
try $tool eh dbg_ops.so "$E/x86_64_cfi_ops_debug_frame" --debug-frame
try clang -Os -gdwarf-5 $CFLAGS_MAP -fno-asynchronous-unwind-tables -fno-unwind-tables -c -o dbg_clang.o lib.c
try $tool eh dbg_clang.o "$E/x86_64_clang_debug_frame_v4" --debug-frame
try $tool eh dbg_ops.so "$E/x86_64_debug_frame_dwarf64" --debug-frame --dwarf64
[ -f "$L/i386_debug_frame.o" ] && try $tool eh "$L/i386_debug_frame.o" "$E/i386_debug_frame" --debug-frame
if have aarch64-linux-gnu-gcc; then
	try aarch64-linux-gnu-gcc -Os -g $CFLAGS_MAP -fno-asynchronous-unwind-tables -fno-unwind-tables \
		-o dbg_a64 hello.c
	try $tool eh dbg_a64 "$E/aarch64_debug_frame" --debug-frame
fi
# Bigger real tables, and the signal-frame CIEs of glibc.
try $tool eh /usr/bin/ls "$E/x86_64_ls"
for libc in /lib/x86_64-linux-gnu/libc.so.6 /usr/lib/x86_64-linux-gnu/libc.so.6; do
	if [ -f "$libc" ]; then
		try $tool subset "$libc" "$E/x86_64_libc_signal_frame" S 4
		try $tool subset "$libc" "$E/x86_64_libc_personality" zPLR 6
		break
	fi
done
[ -f /usr/aarch64-linux-gnu/lib/libc.so.6 ] &&
	try $tool subset /usr/aarch64-linux-gnu/lib/libc.so.6 "$E/aarch64_libc_first" zR 12

# Hand-assembled tables for shapes no compiler emits.
$tool handmade "$E"

# ---- expr ---------------------------------------------------------------------------

$tool expr "$corpus/expr"

for d in loader eh_frame expr; do
	printf '%-9s %3d files %8d bytes\n' "$d" "$(ls "$corpus/$d" | wc -l)" \
		"$(cat "$corpus/$d"/* | wc -c)"
done
