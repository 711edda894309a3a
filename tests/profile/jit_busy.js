// JavaScript calling JavaScript for a second and a half, for
// tests/profile/jit_report_test.py (node --perf-basic-prof under perf record).
function leaf(n) { let s = 0; for (let i = 0; i < 2000; i++) s += Math.sqrt(i + n); return s; }
function mid(n) { return leaf(n) + leaf(n + 1); }
function top() { let t = 0; const end = Date.now() + 1500; while (Date.now() < end) t += mid(t % 7); return t; }
console.log(top());
