#!/bin/sh
# check_phdrs.sh READELF KIND FILE [KIND FILE]...: the test programs of
# test_anyexe.c are what they must be, as readelf -l sees them. KIND nohdr:
# an .eh_frame section but no PT_GNU_EH_FRAME; KIND static: that, and an
# ET_EXEC with neither PT_INTERP nor PT_DYNAMIC (not even static-pie); KIND
# staticpie: an ET_DYN with PT_GNU_EH_FRAME and without PT_INTERP.
set -eu
readelf=$1
shift
status=0
while [ $# -ge 2 ]; do
	kind=$1 file=$2
	shift 2
	segs=$("$readelf" -lW "$file")
	problem=
	if ! "$readelf" -SW "$file" | grep -q ' \.eh_frame '; then
		problem="no .eh_frame section"
	elif [ "$kind" = staticpie ]; then
		if ! printf '%s\n' "$segs" | grep -q 'Elf file type is DYN' ||
			! printf '%s\n' "$segs" | grep -q 'GNU_EH_FRAME' ||
			printf '%s\n' "$segs" | grep -Eq '^ *INTERP '; then
			problem="not a static-pie with PT_GNU_EH_FRAME"
		fi
	elif printf '%s\n' "$segs" | grep -q 'GNU_EH_FRAME'; then
		problem="has PT_GNU_EH_FRAME"
	elif [ "$kind" = static ] && ! printf '%s\n' "$segs" | grep -q 'Elf file type is EXEC'; then
		problem="not an ET_EXEC"
	elif [ "$kind" = static ] && printf '%s\n' "$segs" | grep -Eq '^ *(INTERP|DYNAMIC) '; then
		problem="not static (PT_INTERP or PT_DYNAMIC)"
	fi
	if [ -n "$problem" ]; then
		echo "$file: $problem"
		status=1
	else
		echo "$file: $kind: ok"
	fi
done
exit $status
