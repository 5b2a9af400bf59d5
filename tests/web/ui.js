// The browser test of flightrec serve's page (tests/integration/web_ui.sh
// runs it): headless Chromium driven by puppeteer-core, against a real
// recorder that recorded `burn` alone (range A), then `burn` and `burn2`
// together (range B). URL is the address serve printed, with its token:
// the page keeps the token in a cookie and takes it out of the address.
//
//   node ui.js URL OUTDIR FLIGHTREC BURN_PID BURN2_PID A0 A1 B0 B1
//
// Times are Unix seconds. Every check prints "check NAME: ok ..." and a
// failed one throws (exit 1). Screenshots go to OUTDIR.
'use strict';
const fs = require('fs');
const path = require('path');
const { execFileSync } = require('child_process');
const puppeteer = require('puppeteer-core');

const [url, outdir, flightrec, burnPid, burn2Pid, a0, a1, b0, b1] = process.argv.slice(2);
const A = [Number(a0), Number(a1)], B = [Number(b0), Number(b1)];
const chromium = process.env.CHROMIUM || '/usr/bin/chromium';
const token = new URL(url).searchParams.get('token');

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

// Waits until the page has finished `n` loads and is not busy.
async function settled(page, loads) {
	await page.waitForFunction((n) => window.flightrec.state.loads >= n &&
		window.flightrec.state.busy === 0, { timeout: 60000 }, loads);
	// d3-flame-graph draws with transitions of 200 ms.
	await new Promise((r) => setTimeout(r, 600));
}

// Drags the mouse across [from, to) of the timeline.
async function brush(page, range) {
	await page.$eval('#timeline', (e) => e.scrollIntoView());
	const p0 = await page.evaluate((s) => window.flightrec.point(s, 0.5), range[0]);
	const p1 = await page.evaluate((s) => window.flightrec.point(s, 0.5), range[1]);
	await page.mouse.move(p0.x, p0.y);
	await page.mouse.down();
	await page.mouse.move((p0.x + p1.x) / 2, p0.y, { steps: 5 });
	await page.mouse.move(p1.x, p1.y, { steps: 5 });
	await page.mouse.up();
}

// The widths of the flame graph's frames named `name` over the root's.
async function share(page, name) {
	return page.evaluate((n) => {
		const root = document.querySelector('#flame g[name="all"]');
		let w = 0;
		for (const g of document.querySelectorAll('#flame g.frame'))
			if (g.getAttribute('name') === n)
				w += Number(g.getAttribute('width'));
		return w / Number(root.getAttribute('width'));
	}, name);
}

// The fill colours of the frames named `name` as [r, g, b].
async function fills(page, name) {
	return page.evaluate((n) => {
		const out = [];
		for (const g of document.querySelectorAll('#flame g.frame'))
			if (g.getAttribute('name') === n) {
				const m = g.querySelector('rect').getAttribute('fill').match(/\d+/g);
				out.push(m.map(Number));
			}
		return out;
	}, name);
}

// The cum share of `fn` in the profile file, by the project's reader.
function topShare(file, fn) {
	const out = execFileSync(flightrec, ['top', file, '-n', '200'], { encoding: 'utf8' });
	for (const line of out.split('\n')) {
		const f = line.trim().split(/\s+/);
		if (f[f.length - 1] === fn)
			return Number(f[3].replace('%', '')) / 100;
	}
	throw new Error(fn + ' is not in flightrec top ' + file + ':\n' + out);
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
		await page.setViewport({ width: 1400, height: 1000 });
		const errors = [];
		page.on('pageerror', (e) => errors.push(String(e)));
		page.on('console', (m) => m.type() === 'error' && errors.push(m.text()));
		await page.goto(url, { waitUntil: 'load' });

		// The token: in a cookie the page's scripts cannot read, out of
		// the address bar; the page's own requests carry it.
		const where = await page.evaluate(() => location.href);
		check('token_out_of_address', token && !where.includes(token), where);
		const seen = await page.evaluate(() => document.cookie);
		check('cookie_http_only', !seen.includes(token), 'document.cookie: ' + seen);
		const cookies = await page.cookies();
		const c = cookies.find((x) => x.value === token);
		check('cookie_set', c && c.httpOnly && c.sameSite === 'Strict' && c.path === '/',
			JSON.stringify(cookies.map((x) => [x.name, x.httpOnly, x.sameSite, x.path])));

		// The timeline renders, with the workload's process in it.
		await page.waitForFunction(() => window.flightrec.state.plot &&
			window.flightrec.state.busy === 0, { timeout: 60000 });
		const legend = await page.$$eval('.u-legend .u-series .u-label',
			(ls) => ls.map((l) => l.textContent));
		const burnName = 'burn (' + burnPid + ')';
		check('timeline_process', legend.includes(burnName), legend.join(', '));
		// The machine's memory pressure as a line under the chart, where
		// the ring has it (a kernel with PSI).
		const psi = await page.evaluate(() =>
			(window.flightrec.state.timeline.events || []).includes('memory-pressure'));
		if (psi) {
			await page.waitForFunction(() => window.flightrec.state.pressurePlot,
				{ timeout: 30000 });
			const pl = await page.$$eval('#pressure .u-legend .u-series .u-label',
				(ls) => ls.map((l) => l.textContent));
			check('pressure_lines', pl.includes('memory-pressure %'), pl.join(', '));
		} else {
			console.log('check pressure_lines: skipped, the ring has no memory-pressure');
		}
		await shot(page, '1-timeline');

		// Only the workload (by pid: other programs named burn may run):
		// the timeline is drawn again with their processes only.
		let tl = await page.evaluate(() => window.flightrec.state.timelines);
		await page.type('#procs', burnPid + ',' + burn2Pid);
		await page.keyboard.press('Tab');
		await page.waitForFunction((n) => window.flightrec.state.timelines > n &&
			window.flightrec.state.busy === 0, { timeout: 60000 }, tl);
		const only = await page.$$eval('#timeline .u-legend .u-series .u-label',
			(ls) => ls.slice(1).map((l) => l.textContent));
		check('timeline_filtered', only.length >= 1 && only.every((l) =>
			l.endsWith('(' + burnPid + ')') || l.endsWith('(' + burn2Pid + ')')), only.join(', '));
		// The recorder filters the timeline: the top group of burn2's
		// pid alone is burn2, though burn ran longer.
		const narrow = await fetch(new URL('/api/timeline?event=cpu&by=process&top=1&pid=' +
			burn2Pid, url), { headers: { Authorization: 'Bearer ' + token } });
		const nt = narrow.ok ? await narrow.json() : { groups: [] };
		check('timeline_pid_server', nt.groups.length >= 1 &&
			nt.groups[0].name === 'burn2 (' + burn2Pid + ')' &&
			nt.groups.every((g) => g.pid === Number(burn2Pid) || g.name === 'other'),
			narrow.status + ' ' + JSON.stringify(nt.groups.map((g) => g.name)));

		// Range A by mouse: the flame graph of burn alone.
		let loads = 0;
		await brush(page, A);
		await settled(page, ++loads);
		const heavy = await share(page, 'fr_burn_heavy');
		const href = await page.$eval('#download', (a) => a.href);
		// Outside the browser, the link needs the token as a script sends it.
		const bare = await fetch(href);
		check('download_needs_token', bare.status === 401, String(bare.status));
		const res = await fetch(href, { headers: { Authorization: 'Bearer ' + token } });
		check('download_status', res.ok, String(res.status));
		const file = path.join(outdir, 'range-a.pb.gz');
		fs.writeFileSync(file, Buffer.from(await res.arrayBuffer()));
		const want = topShare(file, 'fr_burn_heavy');
		check('flame_share', Math.abs(heavy - want) <= 0.02 && want > 0.5 && want < 0.95,
			'fr_burn_heavy ' + heavy.toFixed(3) + ' of the flame graph, ' +
			want.toFixed(3) + ' in the downloaded pprof (flightrec top)');
		await shot(page, '2-flame');

		// Search: the details line counts what matches.
		await page.type('#search', 'fr_burn_');
		const details = await page.$eval('#details', (d) => d.textContent);
		check('search', /search: .*\(\s*[0-9.]+%\)/.test(details), details);

		// Click a frame: it fills the width.
		const light = await page.$('#flame g.frame[name="fr_burn_light"]');
		await light.click();
		await new Promise((r) => setTimeout(r, 800));
		const zoomed = await share(page, 'fr_burn_light');
		check('zoom', zoomed > 0.97, 'fr_burn_light ' + zoomed.toFixed(3) + ' after the click');
		await shot(page, '3-zoom');

		// Compare: B against A. burn's share halves (blue), burn2 is new
		// (orange: red and green above blue).
		// (No search: matches are drawn in their own colour.)
		await page.click('#search', { clickCount: 3 });
		await page.keyboard.press('Backspace');
		// Brushing A showed the timeline of A: back to the whole ring,
		// where both ranges are.
		tl = await page.evaluate(() => window.flightrec.state.timelines);
		await page.click('#zoom-out');
		await page.waitForFunction((n) => window.flightrec.state.timelines > n &&
			window.flightrec.state.busy === 0, { timeout: 60000 }, tl);
		await page.click('#compare');
		await brush(page, A);
		await brush(page, B);
		await settled(page, ++loads);
		// The process's frame, whose share is what halves: its stacks
		// below may differ between the ranges (the first seconds of a
		// program can be truncated until its unwind table is built).
		const blue = await fills(page, 'burn');
		const burn2 = await fills(page, 'burn2');
		check('diff_blue', blue.length === 1 && blue[0][2] > blue[0][0] + 40 &&
			burn2.length === 1 && burn2[0][0] > burn2[0][2] + 40,
			'burn ' + JSON.stringify(blue) + ', burn2 ' + JSON.stringify(burn2));
		await shot(page, '4-diff-blue');
		// A against B: burn's share doubles (red).
		await brush(page, B);
		await brush(page, A);
		await settled(page, ++loads);
		const red = await fills(page, 'burn');
		check('diff_red', red.length === 1 && red[0][0] > red[0][2] + 40,
			'burn ' + JSON.stringify(red));
		await shot(page, '5-diff-red');
		// The comparison is in the address: a new page opened on it
		// draws the same difference.
		const href2 = await page.evaluate(() => location.href);
		const diffText = await page.$eval('#range', (e) => e.textContent);
		const page2 = await browser.newPage();
		await page2.setViewport({ width: 1400, height: 1000 });
		page2.on('pageerror', (e) => errors.push(String(e)));
		await page2.goto(href2, { waitUntil: 'load' });
		await settled(page2, 1);
		const text2 = await page2.$eval('#range', (e) => e.textContent);
		const red2 = await fills(page2, 'burn');
		check('diff_url', /range2=/.test(href2) && text2 === diffText &&
			JSON.stringify(red2) === JSON.stringify(red), href2 + ': ' + text2);
		await page2.close();

		// Another event: the timeline is drawn again for it, and the
		// flame graph.
		const events = await page.$$eval('#event option', (os) => os.map((o) => o.value));
		const other = events.find((e) => e !== 'cpu');
		if (other) {
			await page.select('#event', other);
			await page.waitForFunction((e) => window.flightrec.state.timeline &&
				window.flightrec.state.timeline.event === e &&
				window.flightrec.state.busy === 0, { timeout: 60000 }, other);
			// The difference shown is asked again for that event.
			await settled(page, ++loads);
			const text = await page.$eval('#range', (e) => e.textContent);
			const hash = await page.evaluate(() => location.hash);
			check('event_switch', text.startsWith(other + ':') &&
				hash.includes('event=' + other + '&'),
				'to ' + other + ' of ' + events.join(',') + ': ' + text + ' ' + hash);
			await shot(page, '6-' + other);
		}
		// Who kept them waiting: wakeup (and runqueue) are shown like
		// offcpu, with what their stacks are said above the flame graph.
		for (const ev of ['wakeup', 'runqueue']) {
			if (!events.includes(ev))
				continue;
			await page.select('#event', ev);
			await page.waitForFunction((e) => window.flightrec.state.timeline &&
				window.flightrec.state.timeline.event === e &&
				window.flightrec.state.busy === 0, { timeout: 60000 }, ev);
			await settled(page, ++loads);
			const text = await page.$eval('#range', (e) => e.textContent);
			const hint = await page.$eval('#flame-hint', (e) => e.textContent);
			check('event_' + ev, text.startsWith(ev + ':') && /woke|resumed/.test(hint),
				text + ' / ' + hint);
			await shot(page, '6-' + ev);
		}

		// The threads of burn as a table.
		await page.type('#threads-pid', burnPid);
		await page.click('#threads-go');
		await settled(page, ++loads);
		const rows = await page.$$eval('#threads tbody tr',
			(rs) => rs.map((r) => Array.from(r.cells).map((c) => c.textContent)));
		check('threads', rows.length >= 1 && rows.every((r) => r[0] === burnPid) &&
			rows.some((r) => /fr_burn|main/.test(r[6])), rows.length + ' rows');
		await shot(page, '7-threads');

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
