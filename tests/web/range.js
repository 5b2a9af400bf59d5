// The browser test of flightrec serve's page over a 30-minute ring
// (tests/integration/web_range.sh runs it): headless Chromium driven by
// puppeteer-core, in a time zone other than UTC, against a real recorder
// whose ring holds 30 minutes of a synthetic stream and then a real
// `burst` (2 threads, 20 s) and `stacks` (deep, rare stacks).
//
//   node range.js URL OUTDIR BURST_PID STACKS_PID B0 B1 FROZE
//
// [B0, B1) (Unix seconds) lies inside the burst; FROZE is 1 when the
// recorder's ingest thread was frozen inside it (samples lost there).
// Every check prints "check NAME: ok ..." and a failed one throws (exit
// 1). Screenshots go to OUTDIR.
'use strict';
const fs = require('fs');
const path = require('path');
const puppeteer = require('puppeteer-core');

const [url, outdir, burstPid, stacksPid, b0, b1, froze] = process.argv.slice(2);
const B = [Number(b0), Number(b1)];
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
const CELL = 18; // the flame graph's cell height (web/app.js)

function check(name, ok, detail) {
	if (!ok)
		throw new Error('check ' + name + ' failed: ' + detail);
	console.log('check ' + name + ': ok ' + (detail || ''));
}

async function shot(page, name) {
	const file = path.join(outdir, name + '.png');
	await page.screenshot({ path: file, fullPage: true });
	console.log('screenshot ' + file);
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Waits until the page has drawn `tl` timelines and `loads` profiles and
// is not busy.
async function settled(page, tl, loads) {
	await page.waitForFunction((a, b) => window.flightrec.state.timelines >= a &&
		window.flightrec.state.loads >= b && window.flightrec.state.busy === 0,
	{ timeout: 60000 }, tl, loads);
	// d3-flame-graph draws with transitions of 200 ms.
	await sleep(600);
}

async function counts(page) {
	return page.evaluate(() => [window.flightrec.state.timelines, window.flightrec.state.loads]);
}

// Drags the mouse across [from, to) of the timeline.
async function brush(page, range) {
	await page.$eval('#timeline', (e) => e.scrollIntoView());
	const p0 = await page.evaluate((s) => window.flightrec.point(s, 0.5), range[0]);
	const p1 = await page.evaluate((s) => window.flightrec.point(s, 0.5), range[1]);
	await page.mouse.move(p0.x, p0.y);
	await page.mouse.down();
	await page.mouse.move((p0.x + p1.x) / 2, p0.y, { steps: 3 });
	await page.mouse.move(p1.x, p1.y, { steps: 3 });
	await page.mouse.up();
}

async function legend(page) {
	return page.$$eval('#timeline .u-legend .u-series .u-label',
		(ls) => ls.slice(1).map((l) => l.textContent));
}

// What the page shows, to compare two pages.
async function shown(page) {
	return page.evaluate(() => {
		const s = window.flightrec.state;
		return {
			view: s.view && s.view.map((x) => Math.round(x * 1000)),
			shown: s.shown && s.shown.map((r) => r.map((x) => Math.round(x * 1000))),
			event: document.getElementById('event').value,
			procs: document.getElementById('procs').value,
			search: document.getElementById('search').value,
			range: document.getElementById('range').textContent,
			details: document.getElementById('details').textContent,
			legend: Array.from(document.querySelectorAll(
				'#timeline .u-legend .u-series .u-label')).map((l) => l.textContent),
			root: s.tree ? s.tree.value : null,
		};
	});
}

async function main() {
	fs.mkdirSync(outdir, { recursive: true });
	let page;
	const browser = await puppeteer.launch({
		executablePath: chromium, headless: true,
		args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'],
	});
	try {
		page = await browser.newPage();
		// Local time is not UTC: the page must still write UTC.
		await page.emulateTimezone('America/New_York');
		await page.setViewport({ width: 1400, height: 1000 });
		const errors = [];
		page.on('pageerror', (e) => errors.push(String(e)));
		page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
		await page.goto(url, { waitUntil: 'load' });
		await settled(page, 1, 0);

		// The whole ring: 30 minutes, its top processes the synthetic
		// servers, burst among "other".
		const ring = await page.evaluate(() => window.flightrec.state.timeline.ring);
		const span = (ring.last_ns - ring.first_ns) / 60e9;
		check('ring_30min', span >= 29.5, span.toFixed(1) + ' minutes');
		const burstName = 'burst (' + burstPid + ')';
		const whole = await legend(page);
		check('whole_ring_other', !whole.includes(burstName) && whole.includes('other'),
			'over the whole ring: ' + whole.join(', '));

		// Times in UTC: the axis's labels are the UTC times of its ticks,
		// the text's are written with a Z, none in the browser's zone.
		const axis = await page.evaluate(() => {
			const a = window.flightrec.state.plot.axes[0];
			return { splits: a._splits, values: a._values };
		});
		const bad = axis.values.filter((v, i) => v && !(String(v).startsWith(
			new Date(axis.splits[i] * 1000).toISOString().slice(11, 16)) &&
			/^\d\d:\d\d(:\d\d(\.\d+)?)?Z/.test(String(v))));
		check('axis_utc', axis.values.length >= 2 && bad.length === 0,
			JSON.stringify(axis.values));
		const ringText = await page.$eval('#ring', (e) => e.textContent);
		const first = new Date(ring.first_ns / 1e6).toISOString().slice(0, 19).replace('T', ' ');
		check('text_utc', ringText.includes(first + 'Z') && !/[ap]m\b/i.test(ringText), ringText);
		await shot(page, '1-ring');

		// Brushing the burst: the timeline of that range, burst in its
		// legend (its top processes chosen over it), and its flame graph.
		let [tl, loads] = await counts(page);
		await brush(page, B);
		await settled(page, tl + 1, loads + 1);
		const view = await page.evaluate(() => window.flightrec.state.view);
		check('brushed_view', view && Math.abs(view[0] - B[0]) < 5 && Math.abs(view[1] - B[1]) < 5,
			JSON.stringify(view) + ' for ' + JSON.stringify(B));
		const brushed = await legend(page);
		check('burst_in_legend', brushed.includes(burstName),
			'brushed ' + JSON.stringify(view) + ': ' + brushed.join(', '));
		const rangeText = await page.$eval('#range', (e) => e.textContent);
		check('range_text_utc', /\d\d:\d\d:\d\d(\.\d+)?Z to /.test(rangeText), rangeText);
		await shot(page, '2-burst');

		// Units: the flame graph's values of cpu are nanoseconds, written
		// as a time; a frame's label too.
		const unit = await page.evaluate(() => window.flightrec.state.unit);
		check('unit', unit === 'nanoseconds', unit);
		await page.type('#search', 'fr_burn_');
		let details = await page.$eval('#details', (d) => d.textContent);
		check('search_units', /^search: [0-9.]+ (µs|ms|s|min|h) of [0-9.]+ (ms|s|min|h) \(\s*[0-9.]+%\)$/
			.test(details), details);
		const label = await page.evaluate(() => {
			const g = document.querySelector('#flame g.frame[name="burst"]');
			return g ? g.querySelector('title').textContent : '';
		});
		check('label_units', /^burst \([0-9.]+%, [0-9.]+ (ms|s|min)\)$/.test(label), label);
		const texts = await page.evaluate(() => [window.flightrec.valueText(5 << 20, 'bytes'),
			window.flightrec.valueText(1234, 'count', 'samples'),
			window.flightrec.valueText(19232323040, 'nanoseconds'),
			window.flightrec.valueText(3, 'count', 'page-faults')]);
		check('value_texts', texts[0] === '5.0 MiB' && texts[1] === '1,234 samples' &&
			texts[2] === '19.2 s' && texts[3] === '3 page-faults', texts.join(' | '));

		// The flame graph is as tall as its deepest frame drawn (over 2
		// pixels wide): the rare deep stacks of `stacks` leave no band.
		const flame = await page.evaluate(() => {
			const svg = document.querySelector('#flame svg');
			let drawn = 0;
			for (const g of document.querySelectorAll('#flame g.frame'))
				drawn = Math.max(drawn, g.__data__.depth);
			const deepest = (n) => 1 + Math.max(0, ...(n.children || []).map(deepest));
			return { height: Number(svg.getAttribute('height')), drawn: drawn,
				tree: deepest(window.flightrec.state.tree) - 1 };
		});
		// (d3-flame-graph's height is 3 cells above the deepest frame; a
		// deeper stack not drawn would make it taller.)
		check('flame_height', flame.height <= (flame.drawn + 3) * CELL &&
			flame.tree > flame.drawn, JSON.stringify(flame) +
			' (height, deepest frame drawn, deepest in the profile)');
		await shot(page, '3-flame');

		// Loss: the steps where the kernel lost samples while the
		// recorder was frozen are shaded, red along the top.
		if (froze === '1') {
			const loss = await page.evaluate(() => {
				const s = window.flightrec.state, u = s.plot, t = s.timeline;
				if (!s.shaded.length)
					return { shaded: 0 };
				const k = s.shaded[0].k;
				const x = u.valToPos((t.start_ns + (k + 0.5) * t.step_ns) / 1e9, 'x', true);
				const px = u.ctx.getImageData(Math.round(x), Math.round(u.bbox.top + 3), 1, 1).data;
				return { shaded: s.shaded.length, lost: s.shaded[0].lost, pixel: Array.from(px) };
			});
			check('loss_shaded', loss.shaded > 0 && loss.pixel[0] > 150 && loss.pixel[1] < 90 &&
				loss.pixel[2] < 90, JSON.stringify(loss));
			// A recorder whose timeline says where it was held up
			// ("stalled" per step): the freeze is shaded too.
			const stall = await page.evaluate(() => {
				const s = window.flightrec.state;
				return Array.isArray(s.timeline.stalled) ?
					s.shaded.filter((x) => x.stalled).length : -1;
			});
			if (stall >= 0)
				check('stall_shaded', stall > 0, stall + ' steps shaded as held up');
			else
				console.log('check stall_shaded: skipped, the timeline has no "stalled"');
		} else {
			console.log('check loss_shaded: skipped, the recorder could not be frozen here');
		}

		// The processes box filters the timeline and the flame graph.
		[tl, loads] = await counts(page);
		await page.type('#procs', burstPid);
		await page.keyboard.press('Tab');
		await settled(page, tl + 1, loads + 1);
		const only = await legend(page);
		const marks = await page.evaluate(() =>
			(window.flightrec.state.timeline.marks || []).map((m) => m.pid));
		check('filter_timeline', only.length === 1 && only[0] === burstName &&
			marks.every((p) => String(p) === burstPid), only.join(', ') + '; marks of ' +
			JSON.stringify(marks));
		const roots = await page.evaluate(() =>
			(window.flightrec.state.tree.children || []).map((c) => c.name));
		check('filter_flame', roots.length === 1 && roots[0] === 'burst', roots.join(', '));
		details = await page.$eval('#details', (d) => d.textContent);
		check('search_kept', details.startsWith('search: '), details);
		await shot(page, '4-filtered');

		// The state in the address, and a new page opened on it shows
		// the same.
		const href = await page.evaluate(() => location.href);
		const h = new URLSearchParams(new URL(href).hash.slice(1));
		check('url_state', h.get('event') === 'cpu' && h.get('procs') === burstPid &&
			h.get('search') === 'fr_burn_' && /Z\/.*Z$/.test(h.get('view') || '') &&
			/Z\/.*Z$/.test(h.get('range') || ''), href);
		const before = await shown(page);
		const page2 = await browser.newPage();
		await page2.emulateTimezone('Asia/Kolkata');
		await page2.setViewport({ width: 1400, height: 1000 });
		page2.on('pageerror', (e) => errors.push(String(e)));
		await page2.goto(href, { waitUntil: 'load' });
		await settled(page2, 1, 1);
		const after = await shown(page2);
		const same = JSON.stringify(before) === JSON.stringify(after);
		check('url_round_trip', same, JSON.stringify(before) + ' vs ' + JSON.stringify(after));
		await shot(page2, '5-reopened');
		// The whole ring again, from the reopened page.
		[tl, loads] = await counts(page2);
		await page2.click('#zoom-out');
		await settled(page2, tl + 1, loads);
		const back = await page2.evaluate(() => [window.flightrec.state.view, location.hash]);
		check('zoom_out', back[0] === null && !back[1].includes('view='), JSON.stringify(back));
		// Back: the range brushed again, from the browser's history.
		[tl, loads] = await counts(page2);
		await page2.goBack();
		await settled(page2, tl + 1, loads + 1);
		const again = await shown(page2);
		check('history_back', JSON.stringify(again.view) === JSON.stringify(before.view) &&
			again.range === before.range, JSON.stringify(again.view) + ' ' + again.range);
		await page2.close();

		check('no_page_errors', errors.length === 0, errors.join('; '));
	} catch (e) {
		if (page)
			await page.screenshot({ path: path.join(outdir, 'failed.png'), fullPage: true })
				.catch(() => {});
		throw e;
	} finally {
		await browser.close();
	}
}

main().catch((e) => {
	console.error(e.stack || String(e));
	process.exit(1);
});
