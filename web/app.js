/* flightrec serve's page: the timeline of the range shown (uPlot, stacked
 * per process, the top processes chosen over that range by the server; a
 * brushed range is shown next, its own top processes with it), the
 * brushed range's flame graph (d3-flame-graph), two ranges' difference
 * (red: a larger share in the second range, blue: smaller), the range as
 * pprof, and the threads of a process. The processes box filters the
 * timeline and the flame graph; steps where the recorder lost samples or
 * was held up are shaded. Times are UTC everywhere, as the CLI writes
 * them; values in their unit (time, bytes, samples). The state (range
 * shown, range brushed, event, processes, search) is the address's
 * fragment, so an address shared opens the same view. Every number comes
 * from the server's JSON endpoints (tools/serve/serve_api.c); nothing here
 * computes a profile. window.flightrec is what the browser test reads. */
'use strict';
(function () {
	/* The server keeps the token of the address this page was opened
	 * with in a cookie; out of the address bar, it stays out of the
	 * history, of bookmarks and of screenshots. */
	if (new URLSearchParams(location.search).has('token'))
		history.replaceState(null, '', location.pathname + location.hash);
	const $ = (id) => document.getElementById(id);
	const COLORS = ['#e6550d', '#3182bd', '#31a354', '#756bb1', '#e7ba52', '#de9ed6',
		'#17becf', '#8c564b', '#bcbd22', '#7f7f7f', '#393b79', '#ad494a'];
	const state = {
		timeline: null, plot: null, chart: null, tree: null, diff: false,
		ranges: [], marks: [], busy: 0, loads: 0, error: '',
		shown: null, /* the ranges of the flame graph shown: [a] or [a, b] */
		pressurePlot: null, /* the pressure lines under the chart */
		event: 'cpu',
		view: null, /* the range the timeline shows, [a, b] s; null: the ring */
		unit: 'count', /* of the flame graph's values */
		valueType: 'samples', /* what they count, when a count */
		missing: [], /* processes of the box not among the range's groups */
		shaded: [], /* the steps shaded: {k, lost, stalled} */
		timelines: 0, /* timelines drawn */
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
		return state.event || 'cpu';
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
		return (k ? v.toFixed(1) : String(Math.round(v))) + ' ' + units[k];
	}

	function procsText() {
		return $('procs').value.replace(/\s+/g, '');
	}

	/* The filters of the profile requests, as query parameters: the
	 * processes box holds pids (all digits) or command names. */
	function filters() {
		let q = '&event=' + encodeURIComponent(eventName());
		const procs = procsText();
		if (procs)
			q += (/^[0-9,]+$/.test(procs) ? '&pid=' : '&comm=') + encodeURIComponent(procs);
		return q;
	}

	/* The processes box as a test of a timeline group ("comm (pid)" by
	 * process), or null when it is empty. */
	function procsMatch() {
		const procs = procsText();
		if (!procs)
			return null;
		const items = procs.split(',').filter((x) => x);
		if (/^[0-9,]+$/.test(procs))
			return { items: items, test: (g, x) => String(g.pid) === x,
				mark: (m) => items.includes(String(m.pid)) };
		return { items: items, test: (g, x) => g.name.replace(/ \([0-9]+\)$/, '') === x,
			mark: (m) => items.includes(m.comm) };
	}

	/* Times as the CLI writes them: UTC, "2026-11-30 05:11:53Z", with
	 * milliseconds where a range needs them. */
	function utc(sec, ms) {
		const s = new Date(sec * 1000).toISOString().replace('T', ' ');
		return ms ? s : s.replace(/\.\d+Z$/, 'Z');
	}

	/* The axis's labels: "05:11:53Z" (the date under the first and at a
	 * new day), "05:11Z" when the ticks are minutes apart. */
	function axisTimes(u, splits, ax, space, incr) {
		let day = '';
		return splits.map((s) => {
			if (s == null)
				return '';
			const iso = new Date(s * 1000).toISOString();
			let t = incr >= 60 ? iso.slice(11, 16) + 'Z' :
				incr >= 1 ? iso.slice(11, 19) + 'Z' : iso.slice(11, 23) + 'Z';
			if (iso.slice(0, 10) !== day) {
				day = iso.slice(0, 10);
				t += '\n' + day;
			}
			return t;
		});
	}

	function describe(r) {
		const ms = r[1] - r[0] < 10;
		return utc(r[0], ms) + ' to ' + utc(r[1], ms) + ' (' + (r[1] - r[0]).toFixed(1) + ' s)';
	}

	/* A value of the flame graph in its unit: nanoseconds as a time,
	 * bytes as bytes, a count as samples (or as the events counted, for
	 * an event whose samples each stand for several: "page-faults"). */
	function valueText(v, unit, type) {
		unit = unit || state.unit;
		type = type || state.valueType;
		if (unit === 'nanoseconds')
			return durationText(v);
		if (unit === 'bytes')
			return bytesText(v);
		return Math.round(v).toLocaleString('en-US') + ' ' + (type && type !== 'samples' ?
			type : 'samples');
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

	/* A value of the chart as the legend writes it: bytes per second
	 * for alloc, else the rate (CPUs, threads, events per second). */
	function rateText(t, v) {
		return t.event === 'alloc' ? bytesText(v) + '/s' : v.toFixed(2);
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

	function stepsOf(t) {
		if (t.groups.length)
			return t.groups[0].values.length;
		return Math.max(0, Math.ceil((t.end_ns - t.start_ns) / t.step_ns));
	}

	function drawTimeline(t) {
		const n = stepsOf(t);
		const xs = new Array(n);
		for (let k = 0; k < n; k++)
			xs[k] = (t.start_ns + k * t.step_ns) / 1e9;
		/* Stacked: the series hold running sums, the largest group at
		 * the bottom and first in the legend ("other" last), each
		 * filled down to the one below it (a uPlot band). */
		const sums = [], run = new Array(n).fill(0);
		for (const g of t.groups) {
			for (let k = 0; k < n; k++)
				run[k] += scale(t, g.values[k]);
			sums.push(run.slice());
		}
		const series = [{ value: (u, v) => v == null ? '' : utc(v) }], data = [xs];
		const bands = [];
		t.groups.forEach((g, i) => {
			const c = COLORS[i % COLORS.length];
			series.push({ label: g.name, stroke: c, fill: c + '99', width: 1,
				value: (u, v, si, idx) => idx == null ? '' :
					rateText(t, scale(t, g.values[idx])) });
			data.push(sums[i]);
			if (i > 0)
				bands.push({ series: [i + 1, i] });
		});
		const box = $('timeline');
		if (state.plot)
			state.plot.destroy();
		box.innerHTML = '';
		const x0 = state.view ? state.view[0] : t.start_ns / 1e9;
		const x1 = state.view ? state.view[1] : t.end_ns / 1e9;
		const opts = {
			width: Math.max(400, box.clientWidth || document.body.clientWidth - 40),
			height: 280,
			series: series,
			bands: bands,
			/* Time ticks at UTC boundaries, named in UTC. */
			tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
			axes: [{ values: axisTimes, space: 70 }, { label: unitLabel(t), size: 70,
				values: (u, splits) => splits.map((v) => v == null ? '' :
					t.event === 'alloc' ? bytesText(v) + '/s' : String(+v.toFixed(3))) }],
			scales: { x: { time: true, range: () => [x0, x1] },
				y: { range: (u, min, max) => [0, max > 0 ? max * 1.05 : 1] } },
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
		drawLost(u, ctx);
		for (const m of state.marks) {
			/* A range shown whole needs no band. */
			if (state.view && m.range[0] <= state.view[0] && m.range[1] >= state.view[1])
				continue;
			const x0 = u.valToPos(m.range[0], 'x', true);
			const x1 = u.valToPos(m.range[1], 'x', true);
			ctx.fillStyle = m.color;
			ctx.fillRect(x0, u.bbox.top, x1 - x0, u.bbox.height);
		}
		drawEvents(u, ctx);
		ctx.restore();
	}

	/* The window's crashes, OOM kills and deaths by a signal (the
	 * timeline's "marks"): a dark red line at each one's time, named at
	 * the top ("crash 1234 SIGSEGV", "exit 1234 SIGTERM from kill 1300",
	 * "exit 1234 SIGKILL from kernel"). */
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
			const s = m.sender;
			const from = !s ? '' : s.kind === 'kernel' ? ' from kernel' :
				' from ' + (s.comm || '?') + ' ' + s.pid;
			ctx.fillText(m.type + ' ' + m.pid + (m.signal ? ' ' + m.signal : '') + from, x + 3,
				u.bbox.top + 18);
		}
	}

	/* The steps in which the recorder lost samples (the timeline's
	 * per-step "lost": the kernel's losses and the recorder's drops) or
	 * was held up ("stalled"), machine-wide: their values are short of
	 * what ran. Either array may be absent (none known); an older
	 * recorder's "lost" is {"total", "values"}. */
	function lossSteps(t) {
		const lost = Array.isArray(t.lost) ? t.lost : (t.lost && t.lost.values) || [];
		const stalled = Array.isArray(t.stalled) ? t.stalled : [];
		const out = [];
		for (let k = 0; k < Math.max(lost.length, stalled.length); k++)
			if (lost[k] > 0 || stalled[k] === true)
				out.push({ k: k, lost: lost[k] > 0 ? lost[k] : 0, stalled: stalled[k] === true });
		return out;
	}

	/* Shaded whole: red where samples were lost, orange where the
	 * recorder was only held up, with a darker strip along the top. */
	function drawLost(u, ctx) {
		const t = state.timeline;
		if (!t)
			return;
		for (const s of state.shaded) {
			const x0 = u.valToPos((t.start_ns + s.k * t.step_ns) / 1e9, 'x', true);
			const x1 = u.valToPos((t.start_ns + (s.k + 1) * t.step_ns) / 1e9, 'x', true);
			const w = Math.max(2, x1 - x0);
			ctx.fillStyle = s.lost ? 'rgba(220,0,0,0.16)' : 'rgba(240,140,0,0.2)';
			ctx.fillRect(x0, u.bbox.top, w, u.bbox.height);
			ctx.fillStyle = s.lost ? 'rgba(200,0,0,0.9)' : 'rgba(230,120,0,0.9)';
			ctx.fillRect(x0, u.bbox.top, w, 6);
		}
	}

	function mark(marks) {
		state.marks = marks;
		if (state.plot)
			state.plot.redraw(false);
	}

	/* The timeline of the range shown (the ring's when none): the
	 * server chooses its top groups over that range, among the
	 * processes in the box when it has some (the recorder filters them,
	 * as the flame graph's). */
	let timelineSeq = 0;
	async function loadTimeline() {
		const seq = ++timelineSeq;
		message('loading the timeline…', true);
		state.busy++;
		try {
			const ev = eventName() === 'heap' ? 'alloc' : eventName();
			const match = procsMatch();
			let q = 'event=' + encodeURIComponent(ev) + '&by=process';
			if (state.view)
				q += '&from=' + state.view[0].toFixed(3) + '&to=' + state.view[1].toFixed(3);
			if (match)
				q += '&top=32' + (/^[0-9,]+$/.test(procsText()) ? '&pid=' : '&comm=') +
					encodeURIComponent(procsText());
			const t = await getJSON('/api/timeline?' + q);
			if (seq !== timelineSeq)
				return;
			state.missing = [];
			if (match)
				state.missing = match.items.filter((x) =>
					!t.groups.some((g) => g.name !== 'other' && match.test(g, x)));
			state.timeline = t;
			state.shaded = lossSteps(t);
			fillEvents(t, eventName());
			const lostN = state.shaded.reduce((a, s) => a + s.lost, 0);
			const stalledN = state.shaded.filter((s) => s.stalled).length;
			const shown = state.view ? state.view : [t.start_ns / 1e9, t.end_ns / 1e9];
			$('ring').textContent = t.ring.first_ns ? 'ring: ' + utc(t.ring.first_ns / 1e9) +
				' to ' + utc(t.ring.last_ns / 1e9) + '; shown: ' + describe(shown) + ', ' +
				t.samples.toLocaleString('en-US') + ' samples of ' + t.event +
				(match ? ' (of the processes in the box)' : '') +
				(lostN ? ', ' + lostN.toLocaleString('en-US') +
				' samples lost (shaded red)' : '') +
				(stalledN ? ', the recorder was held up in ' + stalledN +
				' steps (shaded)' : '') +
				(t.marks && t.marks.length ? ', ' +
				t.marks.length + ' crashes, kills and deaths (dark red lines)' : '') :
				'the ring is empty';
			$('zoom-out').hidden = !state.view;
			drawTimeline(t);
			message(state.missing.length ? 'no samples in the range shown: ' +
				state.missing.join(', ') : '', true);
			state.timelines++;
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
					(e === 'throttled' ? '&by=cgroup' : '&by=process') +
					(state.view ? '&from=' + state.view[0].toFixed(3) + '&to=' +
					state.view[1].toFixed(3) + '&step=' + main.step_ns / 1e9 + 's' : '')));
			const t0 = ts[0];
			const xs0 = state.view ? state.view[0] : main.start_ns / 1e9;
			const xs1 = state.view ? state.view[1] : main.end_ns / 1e9;
			const n = t0.groups.length ? t0.groups[0].values.length : 0;
			const xs = new Array(n);
			for (let k = 0; k < n; k++)
				xs[k] = (t0.start_ns + k * t0.step_ns) / 1e9;
			const series = [{ value: (u, v) => v == null ? '' : utc(v) }], data = [xs];
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
				tzDate: (ts) => uPlot.tzDate(new Date(ts * 1e3), 'Etc/UTC'),
				axes: [{ values: axisTimes, space: 70 }, { label: '% of the step' }],
				/* The CPU chart's span, so that a second lines up. */
				scales: { x: { time: true, range: () => [xs0, xs1] },
					y: { range: (u, min, max) => [0, max > 0 ? max * 1.1 : 1] } },
			}, data, box);
		} catch (e) {
			box.textContent = 'pressure: ' + e.message;
		}
	}

	/* A range brushed: its flame graph, and the timeline shown for it,
	 * its top processes chosen over it. Comparing, the two ranges are
	 * marked on the timeline shown and their difference drawn. */
	function brushed(a, b) {
		/* To the millisecond, as the address holds it. */
		a = Math.round(a * 1000) / 1000;
		b = Math.round(b * 1000) / 1000;
		if (!(b > a))
			return;
		if ($('compare').checked && state.ranges.length === 1) {
			state.ranges.push([a, b]);
			state.shown = state.ranges.slice();
			saveState(true);
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
		state.view = [a, b];
		state.shown = [[a, b]];
		saveState(true);
		loadTimeline();
		loadProfile();
	}

	/* Back to the whole ring, the range brushed marked on it. */
	function zoomOut() {
		state.view = null;
		saveState(true);
		loadTimeline();
	}

	function rangeQuery(r, suffix) {
		return 'from' + suffix + '=' + r[0].toFixed(3) + '&to' + suffix + '=' + r[1].toFixed(3);
	}

	/* The flame graph: frames of 2 pixels or less are not drawn, and
	 * its height is that of the deepest frame drawn (again at each zoom),
	 * so a deep but rare stack leaves no empty band above the rest. */
	function drawFlame(tree, diff) {
		const box = $('flame');
		box.innerHTML = '';
		$('details').textContent = '';
		const chart = flamegraph()
			.width(Math.max(400, box.clientWidth || document.body.clientWidth - 40))
			.cellHeight(FLAME_CELL)
			.transitionDuration(200)
			.minFrameSize(2)
			.resetHeightOnZoom(true)
			.sort(true)
			.title('')
			.setDetailsElement($('details'));
		chart.label((d) => d.data.name + ' (' + (100 * (d.x1 - d.x0)).toFixed(3) + '%, ' +
			valueText(d.value) + (diff && d.data.delta ? ', ' + (d.data.delta > 0 ? '+' : '-') +
			valueText(Math.abs(d.data.delta)) + ' scaled to the first range' : '') + ')');
		chart.setSearchHandler((results, sum, total) => {
			$('details').textContent = 'search: ' + valueText(sum) + ' of ' + valueText(total) +
				' (' + (total ? 100 * sum / total : 0).toFixed(3) + '%)';
		});
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

	const FLAME_CELL = 18;

	/* Only the last flame graph asked is drawn (a range brushed while
	 * another loads). */
	let profileSeq = 0;
	async function loadProfile() {
		const seq = ++profileSeq, r = state.ranges[0];
		const q = rangeQuery(r, '') + filters();
		const dl = $('download');
		dl.href = '/api/pprof?' + q;
		dl.hidden = false;
		$('range').textContent = 'loading ' + describe(r) + '…';
		state.busy++;
		try {
			const d = await getJSON('/api/profile?' + q);
			if (seq !== profileSeq)
				return;
			state.unit = d.unit || 'count';
			state.valueType = d.value_type || 'samples';
			drawFlame(d.tree, false);
			$('flame-hint').textContent = FLAME_HINTS[d.event] || '';
			state.shown = [r];
			saveState();
			$('range').textContent = describe(r) + ', ' +
				d.range.samples.toLocaleString('en-US') + ' samples of ' + d.event +
				(d.tree && d.tree.value && state.unit !== 'count' ? ' (' +
				valueText(d.tree.value) + ')' : '');
			message(warnings(d.range), true);
			state.loads++;
		} catch (e) {
			message('profile: ' + e.message);
		} finally {
			state.busy--;
		}
	}

	async function loadDiff() {
		const seq = ++profileSeq;
		const [a, b] = state.ranges;
		const q = rangeQuery(a, '') + '&' + rangeQuery(b, '2') + filters();
		$('download').href = '/api/pprof?' + rangeQuery(b, '') + filters();
		$('download').hidden = false;
		$('range').textContent = 'loading the difference…';
		state.busy++;
		try {
			const d = await getJSON('/api/diff?' + q);
			if (seq !== profileSeq)
				return;
			state.unit = d.unit || 'count';
			state.valueType = d.value_type || 'samples';
			drawFlame(d.tree, true);
			$('flame-hint').textContent = FLAME_HINTS[d.event] || '';
			state.shown = [a, b];
			saveState();
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
			if (seq === profileSeq)
				state.ranges = [];
		}
	}

	function durationText(ns) {
		if (ns >= 3600e9) return (ns / 3600e9).toFixed(1) + ' h';
		if (ns >= 60e9) return (ns / 60e9).toFixed(1) + ' min';
		if (ns >= 1e9) return (ns / 1e9).toFixed(1) + ' s';
		if (ns >= 1e6) return (ns / 1e6).toFixed(1) + ' ms';
		return (ns / 1e3).toFixed(1) + ' µs';
	}

	/* ---- the state in the address: #event=cpu&view=A/B&range=A/B
	 * [&range2=A/B]&procs=...&search=..., times as ISO 8601 UTC ---- */
	function iso(sec) {
		return new Date(Math.round(sec * 1000)).toISOString();
	}

	function isoRange(r) {
		return iso(r[0]) + '/' + iso(r[1]);
	}

	function parseRange(v) {
		if (!v)
			return null;
		const p = v.split('/');
		const a = Date.parse(p[0]) / 1000, b = Date.parse(p[1]) / 1000;
		return p.length === 2 && b > a ? [a, b] : null;
	}

	/* The address of what is shown; `push`: a new entry of the
	 * browser's history (a range brushed, the whole ring again), so
	 * that Back goes to the view before. */
	function saveState(push) {
		const kv = [['event', eventName()]];
		if (state.view)
			kv.push(['view', isoRange(state.view)]);
		if (state.shown) {
			kv.push(['range', isoRange(state.shown[0])]);
			if (state.shown.length === 2)
				kv.push(['range2', isoRange(state.shown[1])]);
		}
		if (procsText())
			kv.push(['procs', procsText()]);
		if ($('search').value.trim())
			kv.push(['search', $('search').value.trim()]);
		const h = '#' + kv.map(([k, v]) => k + '=' + encodeURIComponent(v)
			.replace(/%3A/g, ':').replace(/%2F/g, '/').replace(/%2C/g, ',')).join('&');
		if (h === location.hash)
			return;
		if (push)
			history.pushState(null, '', location.pathname + location.search + h);
		else
			history.replaceState(null, '', location.pathname + location.search + h);
	}

	/* The address's state into the page: the timeline of its range, the
	 * flame graph (or difference) of its ranges. */
	function loadState() {
		const h = new URLSearchParams(location.hash.replace(/^#/, ''));
		state.event = h.get('event') || 'cpu';
		state.view = parseRange(h.get('view'));
		$('procs').value = h.get('procs') || '';
		$('search').value = h.get('search') || '';
		const r = parseRange(h.get('range')), r2 = parseRange(h.get('range2'));
		$('compare').checked = !!(r && r2);
		state.ranges = [];
		state.shown = null;
		loadTimeline();
		if (r && r2) {
			state.ranges = [r, r2];
			mark([{ range: r, color: 'rgba(0,0,220,0.15)' },
				{ range: r2, color: 'rgba(220,0,0,0.15)' }]);
			loadDiff();
		} else if (r) {
			state.ranges = [r];
			mark([{ range: r, color: 'rgba(0,0,0,0.12)' }]);
			loadProfile();
		} else {
			mark([]);
		}
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
		/* The flame graph (or the comparison) shown, asked again. */
		const reloadShown = () => {
			if (state.shown && state.shown.length === 2) {
				state.ranges = state.shown.slice();
				loadDiff();
			} else if (state.shown) {
				state.ranges = state.shown.slice();
				loadProfile();
			}
		};
		/* Another event: its timeline, and the flame graph shown
		 * again for it. */
		$('event').onchange = () => {
			state.event = $('event').value;
			saveState();
			state.ranges = [];
			loadTimeline();
			reloadShown();
		};
		$('reload').onclick = loadTimeline;
		$('zoom-out').onclick = zoomOut;
		/* The processes box: the timeline and the flame graph shown,
		 * both filtered. */
		$('procs').onchange = () => {
			saveState();
			loadTimeline();
			reloadShown();
		};
		/* An address pasted or edited: its state. */
		window.addEventListener('hashchange', loadState);
		/* Back and Forward through the views. */
		window.addEventListener('popstate', loadState);
		$('compare').onchange = () => { state.ranges = []; mark([]); };
		$('search').oninput = () => {
			const term = $('search').value.trim();
			saveState();
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
		loadState();
	}

	/* For the browser test: where a time falls on the timeline, in page
	 * coordinates, so it can drag there with the mouse. */
	window.flightrec = {
		state: state,
		/* The page's range API: what brushing [a, b) does (seconds). */
		brush: brushed,
		valueText: valueText,
		point: (sec, yFrac) => {
			const u = state.plot, r = u.over.getBoundingClientRect();
			return { x: r.left + u.valToPos(sec, 'x'), y: r.top + r.height * (yFrac || 0.5) };
		},
	};
	start();
})();
