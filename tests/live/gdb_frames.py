# Sourced by live_test.py inside `gdb -batch -p PID`: every thread's frames
# as gdb sees them, one line each, with what the `bt` text does not show:
# the frame's type and its registers.
#   FRAME <lwp> <level> <NORMAL_FRAME|INLINE_FRAME|TAILCALL_FRAME|SIGTRAMP_FRAME|...> <pc> <name or ->
#   REGS <lwp> <level> <reg>=<hex or -> ...      ("-": gdb says <not saved>)
#        (real frames only; in a deep stack only the innermost REGS_HEAD and
#        outermost REGS_TAIL: gdb takes ~0.2 ms a register)
#   SAL <lwp> <level> <line> <file>               (when gdb has a line for it)
#   STOP <lwp> <why the walk ended>
import gdb

TYPES = {getattr(gdb, n): n for n in dir(gdb) if n.endswith("_FRAME")}
REGS_HEAD, REGS_TAIL = 48, 16
REGS = ["rip", "rsp", "rbp", "rbx", "r12", "r13", "r14", "r15",
        "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9", "r10", "r11"]


def reg(frame, name):
    try:
        v = frame.read_register(name)
        if v.is_optimized_out:
            return "-"
        return "%x" % (int(v) & 0xffffffffffffffff)
    except gdb.error:
        return "-"


for thread in sorted(gdb.selected_inferior().threads(), key=lambda t: t.ptid[1]):
    thread.switch()
    lwp = thread.ptid[1]
    frames = []
    frame = gdb.newest_frame()
    while frame is not None:
        frames.append(frame)
        frame = frame.older()
    for i, frame in enumerate(frames):
        name = frame.name() or "-"
        kind = TYPES.get(frame.type(), "?")
        print("FRAME %d %d %s %#x %s" % (lwp, frame.level(), kind, frame.pc(), name))
        sal = frame.find_sal()
        if sal.symtab is not None and sal.line:
            print("SAL %d %d %d %s" % (lwp, frame.level(), sal.line, sal.symtab.filename))
        if kind in ("NORMAL_FRAME", "SIGTRAMP_FRAME") and \
                (i < REGS_HEAD or i >= len(frames) - REGS_TAIL):
            print("REGS %d %d %s" % (lwp, frame.level(),
                                     " ".join("%s=%s" % (r, reg(frame, r)) for r in REGS)))
    print("STOP %d %s" % (lwp, gdb.frame_stop_reason_string(frames[-1].unwind_stop_reason())))
