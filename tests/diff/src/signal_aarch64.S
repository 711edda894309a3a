/* A signal frame (.cfi_signal_frame: augmentation "zRS" in .eh_frame, "S" in
 * .debug_frame). Never called; only its CFI is read. See signal_x86_64.S. */
#ifdef SIGNAL_DEBUG_FRAME
	.cfi_sections .debug_frame
#endif
	.text
	.globl	cfi_zoo_signal
	.type	cfi_zoo_signal, %function
	.p2align 2
	nop
cfi_zoo_signal:
	.cfi_startproc
	.cfi_signal_frame
	.cfi_def_cfa sp, 4688
	.cfi_offset x30, -8
	.cfi_offset x29, -16
	nop
	.cfi_endproc
	.size	cfi_zoo_signal, .-cfi_zoo_signal

	.globl	cfi_zoo_signal2
	.type	cfi_zoo_signal2, %function
	.p2align 2
cfi_zoo_signal2:
	.cfi_startproc
	.cfi_signal_frame
	nop
	.cfi_def_cfa sp, 64
	.cfi_offset x30, -40
	.cfi_offset x19, -48
	nop
	.cfi_endproc
	.size	cfi_zoo_signal2, .-cfi_zoo_signal2

	.section .note.GNU-stack,"",%progbits
