/* The README's library example: the row in force at one address. */
#include <backstep.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: row_at FILE ADDR\n");
		return 2;
	}
	struct bk_elf *elf;
	struct bk_row row;
	int err = bk_elf_open(argv[1], &elf);
	if (err) {
		fprintf(stderr, "%s: %s\n", argv[1], bk_strerror(err));
		return 1;
	}
	err = bk_elf_row_at(elf, strtoull(argv[2], NULL, 0), &row);
	if (!err && row.cfa.kind == BK_RULE_CFA_REG_OFFSET)
		printf("CFA = %s%+lld\n", bk_reg_name(bk_elf_arch(elf), row.cfa.reg),
		       (long long)row.cfa.offset);
	for (unsigned i = 0; !err && i < row.nregs; i++)
		if (row.regs[i].kind == BK_RULE_OFFSET)
			printf("%s saved at CFA%+lld\n",
			       bk_reg_name(bk_elf_arch(elf), row.regno[i]),
			       (long long)row.regs[i].offset);
	bk_elf_close(elf);
	return err ? 1 : 0;
}
