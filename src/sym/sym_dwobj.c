/* libdwarf over our own view of the file (its object access interface,
 * dwarf_object_init_b) instead of dwarf_init_path's own ELF reader.
 *
 * Why: on first loading .debug_info, libdwarf 20210528 loads and parses
 * every section it knows of that goes with it: .debug_rnglists and
 * .debug_loclists in full. For libc's debug file that is 1.4 MB of
 * location lists inflated and walked for nothing (we never read a location),
 * and sections we read ourselves (.debug_line, .debug_rnglists) were inflated
 * twice, once by libdwarf and once by libelf. Here libdwarf sees only the
 * sections below, each inflated once on first use by sym_elf_section and
 * shared with our readers; .debug_loclists, .debug_frame, .eh_frame and the
 * rest do not exist for it. A split DWARF file (.dwo, .dwp) is opened the
 * same way; its sections carry the .dwo suffix, and a package's indexes
 * (.debug_cu_index, .debug_tu_index) are shown too. .debug_rnglists stays visible (as before) and
 * so stays behind the guard of sym_guard.c, which the caller runs first.
 *
 * Relocations are not applied (no relocate_a_section): callers use this only
 * for ET_EXEC / ET_DYN files, whose DWARF needs none. A section whose
 * decompressed size differs from what get_section_info announced is an
 * error for libdwarf, never a short buffer it reads past.
 *
 * A libdwarf 20210528 hazard: its own ELF readers (dwarf_init_path,
 * dwarf_init_b, dwarf_elf_init) store a hook in the process-wide
 * _dwarf_get_elf_flags_func_ptr, which every later dwarf_object_init_b then
 * calls with *our* object as if it were theirs (a crash, or "section index
 * bad"). So the hook is cleared for the length of our init and put back,
 * under sym_dwarf_init_lock, which our dwarf_init_path calls (ET_REL) take
 * too. Another libdwarf user in the process that opens a file by path at
 * the same moment from another thread is not covered (nothing can make the
 * global safe against that).
 */
#include <pthread.h>

#include <libdwarf/dwarf.h>
#include <libdwarf/libdwarf.h>

#include "sym.h"

typedef int (*elf_flags_fn)(void *obj, Dwarf_Half ix, Dwarf_Unsigned *flags,
			    Dwarf_Unsigned *addralign, int *error);
/* Exported by libdwarf 20210528 (dwarf_init_finish.c); weak: absent elsewhere. */
extern elf_flags_fn _dwarf_get_elf_flags_func_ptr __attribute__((weak));

pthread_mutex_t sym_dwarf_init_lock = PTHREAD_MUTEX_INITIALIZER;

#define SHT_PROGBITS_ 1

static const char *const shown[] = {
	".debug_info", ".debug_abbrev", ".debug_line", ".debug_str", ".debug_line_str",
	".debug_str_offsets", ".debug_addr", ".debug_rnglists",
	/* Split DWARF: a .dwo's sections, and a .dwp's indexes. */
	".debug_info.dwo", ".debug_abbrev.dwo", ".debug_line.dwo", ".debug_str.dwo",
	".debug_str_offsets.dwo", ".debug_rnglists.dwo", ".debug_cu_index", ".debug_tu_index",
};
#define NSHOWN (sizeof(shown) / sizeof(shown[0]))

struct sym_dwobj {
	Dwarf_Obj_Access_Interface iface;
	struct sym_elf *elf;
	unsigned n;                 /* sections 1..n; 0 is the null section */
	const char *name[NSHOWN + 1];
	uint64_t size[NSHOWN + 1];
};

static int get_section_info(void *obj, Dwarf_Half ix, Dwarf_Obj_Access_Section *out, int *error)
{
	struct sym_dwobj *o = obj;
	(void)error;
	if (ix > o->n)
		return DW_DLV_NO_ENTRY;
	memset(out, 0, sizeof(*out));
	if (ix == 0) {
		out->name = "";
		return DW_DLV_OK;
	}
	out->name = o->name[ix];
	out->type = SHT_PROGBITS_;
	out->size = o->size[ix];
	return DW_DLV_OK;
}

static Dwarf_Endianness get_byte_order(void *obj)
{
	return ((struct sym_dwobj *)obj)->elf->msb ? DW_OBJECT_MSB : DW_OBJECT_LSB;
}

static Dwarf_Small get_length_size(void *obj)
{
	(void)obj;
	return 4;
}

static Dwarf_Small get_pointer_size(void *obj)
{
	return ((struct sym_dwobj *)obj)->elf->is64 ? 8 : 4;
}

static Dwarf_Unsigned get_section_count(void *obj)
{
	return ((struct sym_dwobj *)obj)->n + 1u;
}

static int load_section(void *obj, Dwarf_Half ix, Dwarf_Small **data, int *error)
{
	struct sym_dwobj *o = obj;
	if (ix == 0 || ix > o->n)
		return DW_DLV_NO_ENTRY;
	const uint8_t *p;
	size_t len;
	bool comp;
	if (!sym_elf_section(o->elf, o->name[ix], &p, &len, &comp)) {
		*error = DW_DLE_ZLIB_UNCOMPRESS_ERROR;
		return DW_DLV_ERROR;
	}
	if (len != o->size[ix]) {
		*error = DW_DLE_SECTION_SIZE_ERROR;
		return DW_DLV_ERROR;
	}
	*data = (Dwarf_Small *)p; /* libdwarf only reads it */
	return DW_DLV_OK;
}

static const Dwarf_Obj_Access_Methods methods = {
	get_section_info, get_byte_order, get_length_size, get_pointer_size,
	get_section_count, load_section, NULL,
};

int sym_dwobj_init(struct sym_elf *e, void **dbg, struct sym_dwobj **out)
{
	*dbg = NULL;
	*out = NULL;
	struct sym_dwobj *o = base_calloc(1, sizeof(*o));
	if (!o)
		return BK_E_NOMEM;
	o->elf = e;
	for (size_t i = 0; i < NSHOWN; i++) {
		uint64_t size;
		if (!sym_elf_section_size(e, shown[i], &size))
			continue;
		o->n++;
		o->name[o->n] = shown[i];
		o->size[o->n] = size;
	}
	o->iface.object = o;
	o->iface.methods = &methods;
	Dwarf_Debug d = NULL;
	Dwarf_Error err = NULL;
	pthread_mutex_lock(&sym_dwarf_init_lock);
	elf_flags_fn saved = NULL;
	if (&_dwarf_get_elf_flags_func_ptr) {
		saved = _dwarf_get_elf_flags_func_ptr;
		_dwarf_get_elf_flags_func_ptr = NULL;
	}
	int r = dwarf_object_init_b(&o->iface, NULL, NULL, DW_GROUPNUMBER_ANY, &d, &err);
	if (&_dwarf_get_elf_flags_func_ptr)
		_dwarf_get_elf_flags_func_ptr = saved;
	pthread_mutex_unlock(&sym_dwarf_init_lock);
	if (r != DW_DLV_OK) {
		if (r == DW_DLV_ERROR && err)
			dwarf_dealloc_error(NULL, err);
		base_free(o);
		return r == DW_DLV_NO_ENTRY ? BK_E_NOT_FOUND : BK_E_CORRUPT;
	}
	*dbg = d;
	*out = o;
	return 0;
}

void sym_dwobj_finish(void *dbg, struct sym_dwobj *o)
{
	if (dbg) {
		Dwarf_Error err = NULL;
		dwarf_object_finish(dbg, &err);
	}
	base_free(o);
}
