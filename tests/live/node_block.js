// Parked in a read of stdin five JavaScript calls deep, for
// tests/live/node_test.py: top -> mid -> leaf -> fs.readSync.
const fs = require('fs');
function leaf(n) {
  const b = Buffer.alloc(1);
  process.stdout.write("ready\n");
  return fs.readSync(0, b, 0, 1, null) + n;
}
function mid(n) { return leaf(n + 1) * 2; }
function top(n) { let s = 0; for (let i = 0; i < 3; i++) s += i; return mid(n + s); }
top(1);
