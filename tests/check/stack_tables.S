/* backstep check --stack fixture (x86-64, static, no crt files): indirect
 * jumps whose targets the analysis proves from the code and the file, one
 * kind each (what glibc's hand-written string functions and vfprintf do).
 * Each lie_F function hides one lie behind its jump, at the instruction
 * marked M_lie_F_k: only the jump leads there, so the lie is caught only
 * when the jump is followed. Built with -DTRUTH the lies are told as
 * truth: then every function but the part_* ones is checked in full and
 * there is no difference (stack_tables.py asserts both builds).
 *
 * LIE(right, wrong): the CFA offset after the push in a case block.
 */
#ifdef TRUTH
#define LIE(right, wrong) .cfi_def_cfa_offset right
#else
#define LIE(right, wrong) .cfi_def_cfa_offset wrong
#endif

	.text
	.globl _start
	.type _start, @function
_start:
	.cfi_startproc
	.cfi_undefined rip
	xorl %ebp, %ebp
	andq $-16, %rsp
	call lie_class_table
	movl $60, %eax
	xorl %edi, %edi
	syscall
	hlt
	.cfi_endproc
	.size _start, .-_start

/* A class byte from a small table, then a table of offsets from a code
 * label indexed by that class (glibc's vfprintf: `goto *(&&do_form_unknown
 * + step0_jumps[jump_table[c - ' ']])`). The first table's index is bounded
 * by a compare on a copy of the character less 0x20, low byte only
 * (`lea eax, [r9 - 0x20]; cmp al, 0x5a; ja`); the character is then
 * zero-extended, less 0x20, sign-extended: 0..0x5a. The class table's
 * bytes (0..3) bound the second table's index. */
	.p2align 4
	.type lie_class_table, @function
lie_class_table:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	movzbl (%rdi), %r9d
	leal -0x20(%r9), %eax
	cmpb $0x5a, %al
	ja .Lct_unknown
	movzbl %r9b, %eax
	leaq .Lct_class(%rip), %rcx
	subl $0x20, %eax
	leaq .Lct_unknown(%rip), %rsi
	cltq
	movzbl (%rcx,%rax), %eax
	leaq .Lct_step(%rip), %rdx
	movslq (%rdx,%rax,4), %rax
	addq %rsi, %rax
	jmp *%rax
.Lct_unknown:
	xorl %eax, %eax
	jmp .Lct_out
.Lct_flag:
	movl $1, %eax
	jmp .Lct_out
.Lct_width:
	pushq %rax
	LIE(24, 16)
M_lie_class_table_0:
	popq %rax
	.cfi_def_cfa_offset 16
	movl $2, %eax
	jmp .Lct_out
.Lct_conv:
	leaq 3(%rbx), %rax
.Lct_out:
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size lie_class_table, .-lie_class_table
	.section .rodata
.Lct_class:			/* 0x5b classes, of ' ' .. 'z' */
	.byte 1, 0, 0, 1
	.fill 0x20, 1, 2
	.fill 0x37, 1, 3
.Lct_step:
	.long .Lct_unknown - .Lct_unknown
	.long .Lct_flag - .Lct_unknown
	.long .Lct_width - .Lct_unknown
	.long .Lct_conv - .Lct_unknown
	.text

/* The compare on one copy of the index, the table read with another
 * (glibc's _nl_intern_locale_data: `mov edi, ebp; ...; cmp ebp, 0xc; ja;
 * movsxd rcx, [rsi + rdi*4]`). */
	.p2align 4
	.type lie_copy_bound, @function
lie_copy_bound:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	movl %edi, %ebx
	movl %ebx, %edx
	cmpl $2, %ebx
	ja .Lcb_default
	leaq .Lcb_table(%rip), %rsi
	movslq (%rsi,%rdx,4), %rcx
	addq %rsi, %rcx
	jmp *%rcx
.Lcb_0:
	movl $7, %eax
	jmp .Lcb_out
.Lcb_1:
	pushq %rdx
	LIE(24, 32)
M_lie_copy_bound_0:
	popq %rdx
	.cfi_def_cfa_offset 16
.Lcb_2:
.Lcb_default:
	xorl %eax, %eax
.Lcb_out:
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size lie_copy_bound, .-lie_copy_bound
	.section .rodata
	.p2align 2
.Lcb_table:
	.long .Lcb_0 - .Lcb_table
	.long .Lcb_1 - .Lcb_table
	.long .Lcb_2 - .Lcb_table
	.text

/* A jump to a label's address kept in a register (vfprintf's `lea rax,
 * [rip + do_form_unknown]; cmp; ja L; ... L: mov [rsp+0x50], 1; jmp rax`). */
	.p2align 4
	.type lie_label_jump, @function
lie_label_jump:
	.cfi_startproc
	leaq .Lll_target(%rip), %rax
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	movl $1, %ebx
	jmp *%rax
.Lll_target:
	pushq %rbx
	LIE(24, 16)
M_lie_label_jump_0:
	popq %rbx
	.cfi_def_cfa_offset 16
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size lie_label_jump, .-lie_label_jump

/* Two offsets below 16, ordered by a compare (and swapped when the other
 * way round), their difference indexing a table of 15 (glibc's sse2
 * strcmp: `and ecx, 0xf; and eax, 0xf; cmp ecx, eax; je; ja 1f; xchg ecx,
 * eax; 1: lea r9, [rax + 15]; sub r9, rcx`: 0..14 because rcx > rax).
 * Without the order the index could be 0..30: what follows the table is
 * no part of it (its entries name no instruction), so only the relation
 * makes the table readable. */
	.p2align 4
	.type lie_ordered_diff, @function
lie_ordered_diff:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	movl %edi, %ecx
	movl %esi, %eax
	andl $0xf, %ecx
	andl $0xf, %eax
	cmpl %eax, %ecx
	je .Lod_same
	ja 1f
	xchgl %ecx, %eax
1:	leaq 15(%rax), %r9
	subq %rcx, %r9
	leaq .Lod_table(%rip), %r10
	movslq (%r10,%r9,4), %r9
	leaq (%r10,%r9), %r10
	jmp *%r10
.Lod_small:
	movl $1, %eax
	jmp .Lod_out
.Lod_large:
	pushq %rcx
	LIE(24, 8)
M_lie_ordered_diff_0:
	popq %rcx
	.cfi_def_cfa_offset 16
	movl $2, %eax
	jmp .Lod_out
.Lod_same:
	xorl %eax, %eax
.Lod_out:
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size lie_ordered_diff, .-lie_ordered_diff
	.section .rodata
	.p2align 2
.Lod_table:
	.rept 14
	.long .Lod_small - .Lod_table
	.endr
	.long .Lod_large - .Lod_table
	.rept 16			/* not the table's: inside an instruction */
	.long .Lod_small + 1 - .Lod_table
	.endr
	.text

/* An index masked to 0..3 and shifted: a jump into one of four blocks of
 * 16 bytes (glibc's __memcpy_ssse3: `and ecx, 0xf; shl ecx, 6; add rcx,
 * r9; jmp rcx`). */
	.p2align 4
	.type lie_block_jump, @function
lie_block_jump:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	movl %edi, %ecx
	andl $3, %ecx
	shll $4, %ecx
	leaq .Lbj_blocks(%rip), %r9
	addq %r9, %rcx
	jmp *%rcx
	.p2align 4
.Lbj_blocks:
	movl $1, %eax
	jmp .Lbj_out
	.p2align 4
	movl $2, %eax
	jmp .Lbj_out
	.p2align 4
	pushq %rax
	LIE(24, 40)
M_lie_block_jump_0:
	popq %rax
	.cfi_def_cfa_offset 16
	jmp .Lbj_out
	.p2align 4
	movl $4, %eax
	jmp .Lbj_out
	.p2align 4
.Lbj_out:
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size lie_block_jump, .-lie_block_jump

/* A byte from memory indexes a table of 256: the index is a byte by its
 * zero extension, and every entry names an instruction of the function
 * (a table sized by the type's range). */
	.p2align 4
	.type lie_byte_table, @function
lie_byte_table:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	movzbl (%rdi), %eax
	leaq .Lbt_table(%rip), %rdx
	movslq (%rdx,%rax,4), %rax
	addq %rdx, %rax
	jmp *%rax
.Lbt_a:
	movl $1, %eax
	jmp .Lbt_out
.Lbt_b:
	pushq %rax
	LIE(24, 16)
M_lie_byte_table_0:
	popq %rax
	.cfi_def_cfa_offset 16
.Lbt_out:
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size lie_byte_table, .-lie_byte_table
	.section .rodata
	.p2align 2
.Lbt_table:
	.rept 255
	.long .Lbt_a - .Lbt_table
	.endr
	.long .Lbt_b - .Lbt_table
	.text

/* The same with a table of 3 (the compiler knew a narrower range than
 * the byte's, from something the code does not show): entry 3 on is
 * the next table's, which names no instruction here. Not read: "indirect
 * jump", never guessed. */
	.p2align 4
	.type part_byte_table, @function
part_byte_table:
	.cfi_startproc
	movzbl (%rdi), %eax
	leaq .Lpb_table(%rip), %rdx
	movslq (%rdx,%rax,4), %rax
	addq %rdx, %rax
	jmp *%rax
.Lpb_a:
	movl $1, %eax
	ret
.Lpb_b:
	movl $2, %eax
	ret
	.cfi_endproc
	.size part_byte_table, .-part_byte_table
	.section .rodata
	.p2align 2
.Lpb_table:
	.long .Lpb_a - .Lpb_table
	.long .Lpb_b - .Lpb_table
	.long .Lpb_a - .Lpb_table
.Lpb_next:			/* another function's table, relative to itself */
	.rept 253
	.long .Lct_flag - .Lpb_next
	.endr
	.text

/* A loop counter compared with a constant: the analysis reaches its fixed
 * point without climbing one value per round (an interval that grows at a
 * join is widened: 0..7, 0..8, ... would take 100000 rounds). */
	.p2align 4
	.type ok_counted_loop, @function
ok_counted_loop:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	andl $7, %edi
	xorl %ebx, %ebx
1:	addl %edi, %ebx
	addl $1, %edi
	cmpl $100000, %edi
	jb 1b
	movl %ebx, %eax
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size ok_counted_loop, .-ok_counted_loop

/* A switch on a value the code fixed (zlib's inflateBack starts its state
 * machine with `mov eax, 0x3f3f; sub eax, 0x3f3f; cmp eax, 0x12; ja`): the
 * one entry the constant picks is followed. */
	.p2align 4
	.type ok_const_index, @function
ok_const_index:
	.cfi_startproc
	pushq %rbx
	.cfi_def_cfa_offset 16
	.cfi_offset rbx, -16
	movl $0x3f3f, %eax
	subl $0x3f3d, %eax
	cmpl $2, %eax
	ja .Lci_out
	leaq .Lci_table(%rip), %rdx
	movslq (%rdx,%rax,4), %rax
	addq %rdx, %rax
	jmp *%rax
.Lci_2:
	pushq %rax
	.cfi_def_cfa_offset 24
	popq %rax
	.cfi_def_cfa_offset 16
.Lci_out:
	popq %rbx
	.cfi_def_cfa_offset 8
	ret
	.cfi_endproc
	.size ok_const_index, .-ok_const_index
	.section .rodata
	.p2align 2
.Lci_table:
	.long .Lci_out - .Lci_table
	.long .Lci_out - .Lci_table
	.long .Lci_2 - .Lci_table
	.text

/* Two paths to a table, one bounded 0..2 by an earlier compare, the other
 * 0..16 (libgdk's gdk_frame_clock_paint_idle): their join is 0..16, the
 * hull; only a join round a loop widens. */
	.p2align 4
	.type ok_bound_join, @function
ok_bound_join:
	.cfi_startproc
	movl %edi, %eax
	cmpl $2, %eax
	ja 1f
	jmp .Lbj2_table
1:	cmpl $16, %eax
	ja .Lbj2_out
.Lbj2_table:
	leaq .Lbj2_tab(%rip), %rdx
	movslq (%rdx,%rax,4), %rax
	addq %rdx, %rax
	jmp *%rax
.Lbj2_a:
	movl $1, %eax
	ret
.Lbj2_out:
	xorl %eax, %eax
	ret
	.cfi_endproc
	.size ok_bound_join, .-ok_bound_join
	.section .rodata
	.p2align 2
.Lbj2_tab:
	.rept 17
	.long .Lbj2_a - .Lbj2_tab
	.endr
	.text

/* A compare no value passes on one path (gold's switch decision trees):
 * the path that reaches the table's compare first has 91..150, which
 * `cmp eax, 3; ja` excludes, so that edge is not followed (believing it
 * would read 151 entries with the old bound); the table (4 entries, then
 * no entry of it) is read with 0..3 once the other path (0..90) has
 * joined. */
	.p2align 4
	.type ok_no_value_passes, @function
ok_no_value_passes:
	.cfi_startproc
	movl %edi, %eax
	cmpl $150, %eax
	ja .Lnv_out
	cmpl $90, %eax
	jbe .Lnv_small
.Lnv_shared:
	cmpl $3, %eax
	ja .Lnv_out
	leaq .Lnv_tab(%rip), %rdx
	movslq (%rdx,%rax,4), %rax
	addq %rdx, %rax
	jmp *%rax
.Lnv_a:
	movl $1, %eax
	ret
.Lnv_out:
	xorl %eax, %eax
	ret
.Lnv_small:
	addl $0, %edx
	jmp .Lnv_shared
	.cfi_endproc
	.size ok_no_value_passes, .-ok_no_value_passes
	.section .rodata
	.p2align 2
.Lnv_tab:
	.rept 4
	.long .Lnv_a - .Lnv_tab
	.endr
	.rept 150			/* not the table's: inside an instruction */
	.long .Lnv_a + 1 - .Lnv_tab
	.endr
	.text

/* A compare that bounds from below only (mesa's `movzx eax, byte [rdi +
 * 0x18]; cmp al, 8; ja L` then, at L, a second table indexed by eax): at
 * L the index is 9..255 by its byte, not by a compare the table was sized
 * by (the compiler knew a narrower range from elsewhere; this table has
 * 12 entries, then no entry of it). Not read: "indirect jump". */
	.p2align 4
	.type part_above_bound, @function
part_above_bound:
	.cfi_startproc
	movzbl (%rdi), %eax
	cmpb $8, %al
	ja 1f
	xorl %eax, %eax
	ret
1:	leaq .Lab_tab(%rip), %rdx
	movslq (%rdx,%rax,4), %rax
	addq %rdx, %rax
	jmp *%rax
.Lab_a:
	movl $1, %eax
	ret
	.cfi_endproc
	.size part_above_bound, .-part_above_bound
	.section .rodata
	.p2align 2
.Lab_tab:
	.rept 12
	.long .Lab_a - .Lab_tab
	.endr
	.rept 244			/* not the table's: inside an instruction */
	.long .Lab_a + 1 - .Lab_tab
	.endr
	.text
