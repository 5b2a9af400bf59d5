// A named JavaScript call chain for jit_node.sh: buildJsonReport ->
// collectRows -> scoreRow -> a busy loop, for as many seconds as the first
// argument says. Each function does work of its own, so that the JIT keeps
// it a frame of its own rather than inlining it into its caller.
'use strict';

function scoreRow(i) {
	let h = i | 0;
	for (let k = 0; k < 2000; k++)
		h = (Math.imul(h, 16777619) ^ k) >>> 0;
	return h;
}

function collectRows(n) {
	const rows = [];
	for (let i = 0; i < n; i++)
		rows.push(scoreRow(i) & 0xff);
	return rows;
}

function buildJsonReport(seconds) {
	const end = Date.now() + seconds * 1000;
	let sum = 0;
	while (Date.now() < end)
		sum += collectRows(200).length;
	return sum;
}

console.log('pid=' + process.pid);
console.log('rows=' + buildJsonReport(Number(process.argv[2] || 5)));
