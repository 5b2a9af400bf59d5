/* flightrec serve's page: the timeline of the ring (uPlot, stacked per
 * process), a brushed range's flame graph (d3-flame-graph), two ranges'
 * difference (red: a larger share in the second range, blue: smaller),
 * the range as pprof, and the threads of a process. Every number comes
 * from the server's JSON endpoints (tools/serve/serve_api.c); nothing here
 * computes a profile. window.flightrec is what the browser test reads. */
'use strict';
(function () {
	/* The server keeps the token of the address this page was opened
	 * with in a cookie; out of the address bar, it stays out of the
	 * history, of bookmarks and of screenshots. */
	if (new URLSearchParams(location.search).has('token'))
		history.replaceState(null, '', location.pathname);
	const $ = (id) => document.getElementById(id);
	const COLORS = ['#e6550d', '#3182bd', '#31a354', '#756bb1', '#e7ba52', '#de9ed6',
		'#17becf', '#8c564b', '#bcbd22', '#7f7f7f', '#393b79', '#ad494a'];
	const state = {
		timeline: null, plot: null, chart: null, tree: null, diff: false,
		ranges: [], marks: [], busy: 0, loads: 0, error: '',
		shown: null, /* the ranges of the flame graph shown: [a] or [a, b] */
		pressurePlot: null, /* the pressure lines under the chart */
	};

	function message(text, ok) {
		$('message').textContent = text || '';
		$('message').className = ok ? 'ok' : '';
		if (!ok && text)
			state.error = text;
	}

	async function getJSON(url) {
		const r = await fetch(url);
		const text = await r.text();
		if (!r.ok)
			throw new Error(text.trim() || r.status + ' ' + r.statusText);
		return JSON.parse(text);
	}

	function eventName() {
		return $('event').value || 'cpu';
	}

	/* alloc and heap are in bytes (what was allocated; what is in use at
	 * the range's end); the timeline of either is alloc's. */
	function isMemory(ev) {
		return ev === 'alloc' || ev === 'heap';
	}

	function bytesText(v) {
		const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
		let k = 0;
		for (; Math.abs(v) >= 1024 && k < units.length - 1; k++)
			v /= 1024;
		return (k ? v.toFixed(1) : String(v)) + ' ' + units[k];
	}

	/* The filters of the profile requests, as query parameters: the
	 * processes box holds pids (all digits) or command names. */
	function filters() {
		let q = '&event=' + encodeURIComponent(eventName());
		const procs = $('procs').value.replace(/\s+/g, '');
		if (procs)
			q += (/^[0-9,]+$/.test(procs) ? '&pid=' : '&comm=') + encodeURIComponent(procs);
		return q;
	}

	function utc(sec) {
		return new Date(sec * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
	}

	function describe(r) {
		return utc(r[0]) + ' to ' + utc(r[1]) + ' (' + (r[1] - r[0]).toFixed(1) + ' s)';
	}

	/* Values per step as a rate a person reads: CPUs busy, threads
	 * waiting, or events per second. */
	function unitLabel(t) {
		if (t.event === 'cpu')
			return 'CPUs busy';
		if (t.event === 'alloc')
			return 'bytes allocated per second';
		if (t.event === 'wakeup')
			return 'threads waiting until another woke them';
		if (t.event === 'runqueue')
			return 'threads waiting for a CPU';
		if (t.unit === 'nanoseconds')
			return 'threads waiting';
		return t.event + ' per second';
	}

	function scale(t, v) {
		const stepS = t.step_ns / 1e9;
		return t.unit === 'nanoseconds' ? v / t.step_ns : v / stepS;
	}

	/* What the flame graph of an event shows, when its stacks are not
	 * simply where the time went. */
	const FLAME_HINTS = {
		offcpu: 'Where threads waited (each frame: the time waited under it).',
		wakeup: 'The stacks of the code that woke waiting threads (a thread, or an ' +
			'interrupt: [timer], [I/O completion], ...), each frame as wide as the ' +
			'waiting it ended: the critical sections that cost the most waiting.',
		runqueue: 'Where threads resumed after waiting for a CPU (each frame: the ' +
			'time runnable but not running under it).',
	};

	function fillEvents(t, cur) {
		const sel = $('event');
		const names = (t.events && t.events.length) ? t.events.slice() : ['cpu'];
		if (!names.includes(cur))
			names.push(cur);
		sel.innerHTML = '';
		for (const n of names) {
			const o = document.createElement('option');
			o.value = o.textContent = n;
			sel.appendChild(o);
		}
		sel.value = cur;
	}

	function drawTimeline(t) {
		const n = t.groups.length ? t.groups[0].values.length : 0;
		const xs = new Array(n);
		for (let k = 0; k < n; k++)
			xs[k] = (t.start_ns + k * t.step_ns) / 1e9;
		/* Stacked: the series hold running sums, drawn largest sum
		 * first so each smaller one covers its part of it. */
		const sums = [], run = new Array(n).fill(0);
		for (const g of t.groups) {
			for (let k = 0; k < n; k++)
				run[k] += scale(t, g.values[k]);
			sums.push(run.slice());
		}
		const series = [{}], data = [xs];
		for (let i = t.groups.length - 1; i >= 0; i--) {
			const c = COLORS[i % COLORS.length];
			series.push({ label: t.groups[i].name, stroke: c, fill: c + '99', width: 1,
				value: (u, v, si, idx) => idx == null ? '' :
					scale(t, t.groups[i].values[idx]).toFixed(2) });
			data.push(sums[i]);
		}
		const box = $('timeline');
		if (state.plot)
			state.plot.destroy();
		box.innerHTML = '';
		const opts = {
			width: Math.max(400, box.clientWidth || document.body.clientWidth - 40),
			height: 280,
			series: series,
			axes: [{}, { label: unitLabel(t) }],
			scales: { x: { time: true }, y: { range: (u, min, max) => [0, max > 0 ? max * 1.05 : 1] } },
			cursor: { drag: { x: true, y: false, setScale: false } },
			hooks: {
				setSelect: [(u) => {
					if (u.select.width < 2)
						return;
					const a = u.posToVal(u.select.left, 'x');
					const b = u.posToVal(u.select.left + u.select.width, 'x');
					/* The chosen ranges are drawn as bands
					 * (drawMarks), so the same range can be
					 * brushed again. */
					u.setSelect({ left: 0, top: 0, width: 0, height: 0 }, false);
					brushed(a, b);
				}],
				draw: [drawMarks],
			},
		};
		state.plot = new uPlot(opts, data, box);
	}

	/* The ranges chosen: grey for a profile, blue for the first of a
	 * comparison and red for the second. */
	function drawMarks(u) {
		const ctx = u.ctx;
		ctx.save();
		for (const m of state.marks) {
			const x0 = u.valToPos(m.range[0], 'x', true);
			const x1 = u.valToPos(m.range[1], 'x', true);
			ctx.fillStyle = m.color;
			ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
		}
		drawLost(u, ctx);
		drawEvents(u, ctx);
		ctx.restore();
	}

	/* The window's crashes, OOM kills and deaths by a signal (the
	 * timeline's "marks"): a dark red line at each one's time, named at
	 * the top ("crash 1234 SIGSEGV"). */
	function drawEvents(u, ctx) {
		const t = state.timeline;
		if (!t || !t.marks)
			return;
		ctx.strokeStyle = 'rgba(140,0,0,0.9)';
		ctx.fillStyle = 'rgba(140,0,0,0.9)';
		ctx.font = '11px sans-serif';
		ctx.lineWidth = 1;
		for (const m of t.marks) {
			const x = Math.round(u.valToPos(m.time_ns / 1e9, 'x', true)) + 0.5;
			if (!(x >= u.bbox.left && x <= u.bbox.left + u.bbox.width))
				continue;
			ctx.beginPath();
			ctx.moveTo(x, u.bbox.top);
			ctx.lineTo(x, u.bbox.top + u.bbox.height);
			ctx.stroke();
			ctx.fillText(m.type + ' ' + m.pid + (m.signal ? ' ' + m.signal : ''), x + 3,
				u.bbox.top + 18);
		}
	}

	/* The steps in which the recorder lost samples of the event (the
	 * timeline's "lost", machine-wide): a red tick along the top. */
	function drawLost(u, ctx) {
		const t = state.timeline;
		if (!t || !Array.isArray(t.lost))
			return;
		ctx.fillStyle = 'rgba(200,0,0,0.9)';
		t.lost.forEach((n, k) => {
			if (!(n > 0))
				return;
			const x0 = u.valToPos((t.start_ns + k * t.step_ns) / 1e9, 'x', true);
			const x1 = u.valToPos((t.start_ns + (k + 1) * t.step_ns) / 1e9, 'x', true);
			ctx.fillRect(x0, u.bbox.top, Math.max(2, x1 - x0), 6);
		});
	}

	function mark(marks) {
		state.marks = marks;
		if (state.plot)
			state.plot.redraw(false);
	}

	async function loadTimeline() {
		message('loading the timeline…', true);
		state.busy++;
		try {
			const ev = eventName() === 'heap' ? 'alloc' : eventName();
			const q = 'event=' + encodeURIComponent(ev) + '&by=process';
			const t = await getJSON('/api/timeline?' + q);
			state.timeline = t;
			fillEvents(t, eventName());
			$('ring').textContent = t.ring.first_ns ? 'ring: ' + utc(t.ring.first_ns / 1e9) +
				' to ' + utc(t.ring.last_ns / 1e9) + ', ' + t.samples + ' samples of ' +
				t.event + (t.lost_total ? ', ' + t.lost_total +
				' lost (red along the top)' : '') + (t.marks && t.marks.length ? ', ' +
				t.marks.length + ' crashes, kills and deaths (dark red lines)' : '') :
				'the ring is empty';
			drawTimeline(t);
			message('', true);
			loadPressure(t);
		} catch (e) {
			message('timeline: ' + e.message);
		} finally {
			state.busy--;
		}
	}

	/* The machine's pressure (memory, cpu, io: the share of each step
	 * some task stalled) and the cgroups' CPU throttling (the share of
	 * each step throttled, all cgroups added), as lines under the chart,
	 * for the series the ring holds. */
	const PRESSURE = ['memory-pressure', 'cpu-pressure', 'io-pressure', 'throttled'];
	async function loadPressure(main) {
		const box = $('pressure');
		const have = PRESSURE.filter((e) => main.events && main.events.includes(e));
		if (state.pressurePlot) {
			state.pressurePlot.destroy();
			state.pressurePlot = null;
		}
		box.innerHTML = '';
		if (!have.length)
			return;
		try {
			const ts = [];
			for (const e of have)
				ts.push(await getJSON('/api/timeline?event=' + e +
					(e === 'throttled' ? '&by=cgroup' : '&by=process')));
			const t0 = ts[0];
			const mn = main.groups.length ? main.groups[0].values.length : 0;
			const xs0 = main.start_ns / 1e9;
			const xs1 = (main.start_ns + Math.max(0, mn - 1) * main.step_ns) / 1e9;
			const n = t0.groups.length ? t0.groups[0].values.length : 0;
			const xs = new Array(n);
			for (let k = 0; k < n; k++)
				xs[k] = (t0.start_ns + k * t0.step_ns) / 1e9;
			const series = [{}], data = [xs];
			ts.forEach((t, i) => {
				const ys = new Array(n).fill(0);
				for (const g of t.groups)
					for (let k = 0; k < n && k < g.values.length; k++)
						ys[k] += g.values[k] / t.step_ns * 100;
				const c = COLORS[(i + 3) % COLORS.length];
				series.push({ label: have[i] + ' %', stroke: c, width: 1.5,
					value: (u, v) => v == null ? '' : v.toFixed(1) });
				data.push(ys);
			});
			state.pressurePlot = new uPlot({
				width: Math.max(400, box.clientWidth || document.body.clientWidth - 40),
				height: 140,
				series: series,
				axes: [{}, { label: '% of the step' }],
				/* The CPU chart's span, so that a second lines up. */
				scales: { x: { time: true, range: () => [xs0, xs1] },
					y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
			}, data, box);
		} catch (e) {
			box.textContent = 'pressure: ' + e.message;
		}
	}

	function brushed(a, b) {
		if (!(b > a))
			return;
		if ($('compare').checked && state.ranges.length === 1) {
			state.ranges.push([a, b]);
			mark([state.marks[0], { range: [a, b], color: 'rgba(220,0,0,0.15)' }]);
			loadDiff();
			return;
		}
		state.ranges = [[a, b]];
		if ($('compare').checked) {
			mark([{ range: [a, b], color: 'rgba(0,0,220,0.15)' }]);
			$('range').textContent = 'first range (blue): ' + describe([a, b]) +
				'; now drag across the second range';
			return;
		}
		mark([{ range: [a, b], color: 'rgba(0,0,0,0.12)' }]);
		loadProfile();
	}

	function rangeQuery(r, suffix) {
		return 'from' + suffix + '=' + r[0].toFixed(3) + '&to' + suffix + '=' + r[1].toFixed(3);
	}

	function drawFlame(tree, diff) {
		const box = $('flame');
		box.innerHTML = '';
		$('details').textContent = '';
		const chart = flamegraph()
			.width(Math.max(400, box.clientWidth || document.body.clientWidth - 40))
			.cellHeight(18)
			.transitionDuration(200)
			.minFrameSize(0)
			.sort(true)
			.title('')
			.setDetailsElement($('details'));
		if (isMemory(eventName()))
			chart.label((d) => d.data.name + ' (' +
				(100 * (d.x1 - d.x0)).toFixed(3) + '%, ' + bytesText(d.value) + ')');
		if (diff)
			chart.computeDelta(true)
				.setColorMapper(flamegraph.colorMapper.differentialColorMapper);
		d3.select('#flame').datum(tree).call(chart);
		state.chart = chart;
		state.tree = tree;
		state.diff = diff;
		const term = $('search').value.trim();
		if (term)
			chart.search(term);
	}

	function warnings(...ranges) {
		const w = [];
		for (const r of ranges)
			if (r && r.warnings)
				w.push(...r.warnings);
		return w.join('; ');
	}

	async function loadProfile() {
		const q = rangeQuery(state.ranges[0], '') + filters();
		const dl = $('download');
		dl.href = '/api/pprof?' + q;
		dl.hidden = false;
		$('range').textContent = 'loading ' + describe(state.ranges[0]) + '…';
		state.busy++;
		try {
			const d = await getJSON('/api/profile?' + q);
			drawFlame(d.tree, false);
			$('flame-hint').textContent = FLAME_HINTS[d.event] || '';
			state.shown = [state.ranges[0]];
			$('range').textContent = describe(state.ranges[0]) + ', ' + d.range.samples +
				' samples of ' + d.event;
			message(warnings(d.range), true);
			state.loads++;
		} catch (e) {
			message('profile: ' + e.message);
		} finally {
			state.busy--;
		}
	}

	async function loadDiff() {
		const [a, b] = state.ranges;
		const q = rangeQuery(a, '') + '&' + rangeQuery(b, '2') + filters();
		$('download').href = '/api/pprof?' + rangeQuery(b, '') + filters();
		$('download').hidden = false;
		$('range').textContent = 'loading the difference…';
		state.busy++;
		try {
			const d = await getJSON('/api/diff?' + q);
			drawFlame(d.tree, true);
			$('flame-hint').textContent = FLAME_HINTS[d.event] || '';
			state.shown = [a, b];
			$('range').textContent = d.event + ': second range ' + describe(b) +
				' against the first ' +
				describe(a) + ': red frames have a larger share in the second, blue a ' +
				'smaller one';
			message(warnings(d.range, d.range2), true);
			state.loads++;
		} catch (e) {
			message('difference: ' + e.message);
		} finally {
			state.busy--;
			state.ranges = [];
		}
	}

	function durationText(ns) {
		if (ns >= 3600e9) return (ns / 3600e9).toFixed(1) + 'h';
		if (ns >= 60e9) return (ns / 60e9).toFixed(1) + 'm';
		if (ns >= 1e9) return (ns / 1e9).toFixed(1) + 's';
		return (ns / 1e6).toFixed(1) + 'ms';
	}

	async function loadThreads() {
		const pid = $('threads-pid').value.trim();
		const body = $('threads').tBodies[0];
		body.innerHTML = '';
		state.busy++;
		try {
			const d = await getJSON('/api/threads?pid=' + encodeURIComponent(pid));
			for (const t of d.threads) {
				const tr = body.insertRow();
				const cells = [t.pid, t.tid, t.thread, t.state, t.wait || '',
					t.waiting_ns != null ? durationText(t.waiting_ns) : '',
					t.stack.join('\n')];
				cells.forEach((v, i) => {
					const td = tr.insertCell();
					td.textContent = String(v);
					if (i === 6)
						td.className = 'stack';
				});
			}
			message(d.warnings.join('; '), true);
			state.loads++;
		} catch (e) {
			message('threads: ' + e.message);
		} finally {
			state.busy--;
		}
	}

	function start() {
		if (typeof uPlot === 'undefined' || typeof flamegraph === 'undefined' ||
		    typeof d3 === 'undefined') {
			message('this flightrec was built without the page\'s libraries: run ' +
				'`npm ci` in web/, then `meson setup --reconfigure` and rebuild');
			return;
		}
		/* Another event: its timeline, and the flame graph shown
		 * again for it. */
		$('event').onchange = () => {
			state.ranges = [];
			loadTimeline();
			if (state.shown && state.shown.length === 2) {
				state.ranges = state.shown.slice();
				loadDiff();
			} else if (state.shown) {
				state.ranges = state.shown.slice();
				loadProfile();
			}
		};
		$('reload').onclick = loadTimeline;
		$('compare').onchange = () => { state.ranges = []; mark([]); };
		$('search').oninput = () => {
			const term = $('search').value.trim();
			if (!state.chart)
				return;
			if (term) {
				state.chart.search(term);
			} else {
				state.chart.clear();
				$('details').textContent = '';
			}
		};
		$('reset-zoom').onclick = () => state.chart && state.chart.resetZoom();
		$('threads-go').onclick = loadThreads;
		loadTimeline();
	}

	/* For the browser test: where a time falls on the timeline, in page
	 * coordinates, so it can drag there with the mouse. */
	window.flightrec = {
		state: state,
		/* The page's range API: what brushing [a, b) does (seconds). */
		brush: brushed,
		point: (sec, yFrac) => {
			const u = state.plot, r = u.over.getBoundingClientRect();
			return { x: r.left + u.valToPos(sec, 'x'), y: r.top + r.height * (yFrac || 0.5) };
		},
	};
	start();
})();
