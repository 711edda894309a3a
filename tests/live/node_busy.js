// Busy in JIT code for tests/live/node_test.py: spin() runs hot (TurboFan
// compiles it, inlined into outer()), so a thread stopped at any moment is
// most likely interrupted in JIT code, where no CFI describes the frame.
function spin(n) { let s = 0; for (let i = 0; i < n; i++) s = (s + i * 7) % 1000003; return s; }
function outer() { let t = 0; for (;;) t += spin(100000); }
process.stdout.write("ready\n");
outer();
