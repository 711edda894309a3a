/* DWARF and LSB constants used by the pure layers, from the DWARF 5
 * specification (§7.7.1 DW_OP, §7.24 DW_CFA) and the Linux Standard Base
 * (DW_EH_PE pointer encodings, .eh_frame_hdr). Kept here rather than taken
 * from <dwarf.h> so that src/cfi and src/expr compile on any host. */
#ifndef BK_DWARF_H
#define BK_DWARF_H

/* ---- Call frame instructions, DWARF 5 §7.24 table 7.29 ------------------ */
/* High two bits carry the opcode, low six an operand. */
#define DW_CFA_advance_loc 0x40
#define DW_CFA_offset 0x80
#define DW_CFA_restore 0xc0
/* Low six bits carry the opcode. */
#define DW_CFA_nop 0x00
#define DW_CFA_set_loc 0x01
#define DW_CFA_advance_loc1 0x02
#define DW_CFA_advance_loc2 0x03
#define DW_CFA_advance_loc4 0x04
#define DW_CFA_offset_extended 0x05
#define DW_CFA_restore_extended 0x06
#define DW_CFA_undefined 0x07
#define DW_CFA_same_value 0x08
#define DW_CFA_register 0x09
#define DW_CFA_remember_state 0x0a
#define DW_CFA_restore_state 0x0b
#define DW_CFA_def_cfa 0x0c
#define DW_CFA_def_cfa_register 0x0d
#define DW_CFA_def_cfa_offset 0x0e
#define DW_CFA_def_cfa_expression 0x0f
#define DW_CFA_expression 0x10
#define DW_CFA_offset_extended_sf 0x11
#define DW_CFA_def_cfa_sf 0x12
#define DW_CFA_def_cfa_offset_sf 0x13
#define DW_CFA_val_offset 0x14
#define DW_CFA_val_offset_sf 0x15
#define DW_CFA_val_expression 0x16
#define DW_CFA_lo_user 0x1c
#define DW_CFA_MIPS_advance_loc8 0x1d
#define DW_CFA_AARCH64_negate_ra_state_with_pc 0x2c /* AADWARF64 §4.4.2, FEAT_PAuth_LR */
#define DW_CFA_GNU_window_save 0x2d /* AArch64: DW_CFA_AARCH64_negate_ra_state */
#define DW_CFA_GNU_args_size 0x2e
#define DW_CFA_GNU_negative_offset_extended 0x2f
#define DW_CFA_hi_user 0x3f

/* ---- CIE ids ------------------------------------------------------------ */
#define DW_CIE_ID_32 0xffffffffu              /* .debug_frame, 32-bit DWARF */
#define DW_CIE_ID_64 0xffffffffffffffffull    /* .debug_frame, 64-bit DWARF */
#define DW_EH_CIE_ID 0u                        /* .eh_frame */

/* ---- Pointer encodings (LSB 4.1, "DWARF Exception Header Encoding") ----- */
#define DW_EH_PE_absptr 0x00
#define DW_EH_PE_uleb128 0x01
#define DW_EH_PE_udata2 0x02
#define DW_EH_PE_udata4 0x03
#define DW_EH_PE_udata8 0x04
#define DW_EH_PE_signed 0x08
#define DW_EH_PE_sleb128 0x09
#define DW_EH_PE_sdata2 0x0a
#define DW_EH_PE_sdata4 0x0b
#define DW_EH_PE_sdata8 0x0c
#define DW_EH_PE_pcrel 0x10
#define DW_EH_PE_textrel 0x20
#define DW_EH_PE_datarel 0x30
#define DW_EH_PE_funcrel 0x40
#define DW_EH_PE_aligned 0x50
#define DW_EH_PE_indirect 0x80
#define DW_EH_PE_omit 0xff

/* ---- Expression operations, DWARF 5 §7.7.1 table 7.9 -------------------- */
#define DW_OP_addr 0x03
#define DW_OP_deref 0x06
#define DW_OP_const1u 0x08
#define DW_OP_const1s 0x09
#define DW_OP_const2u 0x0a
#define DW_OP_const2s 0x0b
#define DW_OP_const4u 0x0c
#define DW_OP_const4s 0x0d
#define DW_OP_const8u 0x0e
#define DW_OP_const8s 0x0f
#define DW_OP_constu 0x10
#define DW_OP_consts 0x11
#define DW_OP_dup 0x12
#define DW_OP_drop 0x13
#define DW_OP_over 0x14
#define DW_OP_pick 0x15
#define DW_OP_swap 0x16
#define DW_OP_rot 0x17
#define DW_OP_xderef 0x18
#define DW_OP_abs 0x19
#define DW_OP_and 0x1a
#define DW_OP_div 0x1b
#define DW_OP_minus 0x1c
#define DW_OP_mod 0x1d
#define DW_OP_mul 0x1e
#define DW_OP_neg 0x1f
#define DW_OP_not 0x20
#define DW_OP_or 0x21
#define DW_OP_plus 0x22
#define DW_OP_plus_uconst 0x23
#define DW_OP_shl 0x24
#define DW_OP_shr 0x25
#define DW_OP_shra 0x26
#define DW_OP_xor 0x27
#define DW_OP_bra 0x28
#define DW_OP_eq 0x29
#define DW_OP_ge 0x2a
#define DW_OP_gt 0x2b
#define DW_OP_le 0x2c
#define DW_OP_lt 0x2d
#define DW_OP_ne 0x2e
#define DW_OP_skip 0x2f
#define DW_OP_lit0 0x30
#define DW_OP_lit31 0x4f
#define DW_OP_reg0 0x50
#define DW_OP_reg31 0x6f
#define DW_OP_breg0 0x70
#define DW_OP_breg31 0x8f
#define DW_OP_regx 0x90
#define DW_OP_fbreg 0x91
#define DW_OP_bregx 0x92
#define DW_OP_piece 0x93
#define DW_OP_deref_size 0x94
#define DW_OP_xderef_size 0x95
#define DW_OP_nop 0x96
#define DW_OP_push_object_address 0x97
#define DW_OP_call2 0x98
#define DW_OP_call4 0x99
#define DW_OP_call_ref 0x9a
#define DW_OP_form_tls_address 0x9b
#define DW_OP_call_frame_cfa 0x9c
#define DW_OP_bit_piece 0x9d
#define DW_OP_implicit_value 0x9e
#define DW_OP_stack_value 0x9f
#define DW_OP_implicit_pointer 0xa0
#define DW_OP_addrx 0xa1
#define DW_OP_constx 0xa2
#define DW_OP_entry_value 0xa3
#define DW_OP_const_type 0xa4
#define DW_OP_regval_type 0xa5
#define DW_OP_deref_type 0xa6
#define DW_OP_xderef_type 0xa7
#define DW_OP_convert 0xa8
#define DW_OP_reinterpret 0xa9
#define DW_OP_GNU_push_tls_address 0xe0
#define DW_OP_GNU_uninit 0xf0
#define DW_OP_GNU_encoded_addr 0xf1
#define DW_OP_GNU_implicit_pointer 0xf2
#define DW_OP_GNU_entry_value 0xf3
#define DW_OP_GNU_const_type 0xf4
#define DW_OP_GNU_regval_type 0xf5
#define DW_OP_GNU_deref_type 0xf6
#define DW_OP_GNU_convert 0xf7
#define DW_OP_GNU_reinterpret 0xf9
#define DW_OP_GNU_parameter_ref 0xfa
#define DW_OP_GNU_addr_index 0xfb
#define DW_OP_GNU_const_index 0xfc
#define DW_OP_GNU_variable_value 0xfd

#endif
