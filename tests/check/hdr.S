/* backstep check fixture: a clean shared object with .eh_frame,
 * .eh_frame_hdr and .debug_frame describing the same four functions
 * (the two sections covering one range is not an overlap). check.py
 * patches copies of it: the header's version, order, count and pointers,
 * an FDE's range (an overlap) and the CIE's version (a decode error). */
	.cfi_sections .eh_frame, .debug_frame
	.text
	.macro fn name
	.p2align 4
	.globl \name
	.type \name, @function
\name:
	.cfi_startproc
	pushq %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	movq %rsp, %rbp
	.cfi_def_cfa_register rbp
	nop
	popq %rbp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc
	.size \name, .-\name
	.endm
	fn f1
	fn f2
	fn f3
	fn f4
