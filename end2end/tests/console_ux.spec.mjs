// The console as admins expect it (issue 18), hydrated (project "js") and with JavaScript off
// (project "nojs") where it applies: a save that would break the active provider does not go
// live and Restore brings the previous version back; a trial on a provider that is not the
// active one runs there and keeps what was typed; no page scrolls sideways on a phone; dark
// mode; the connection report closes on Esc; a keyboard-only trial run. Screenshots of each
// page in both themes go to test-results.
import { test, expect } from '@playwright/test';
import { expectInteractive, signIn } from './helpers.mjs';

test.beforeEach(async ({ page }) => {
  await page.goto('/login');
  await signIn(page);
  await expect(page.getByTestId('admin-name')).toBeVisible();
});

test('a save that breaks the active provider does not go live, and Restore brings the previous version back', async ({ page, javaScriptEnabled }, testInfo) => {
  await page.goto('/admin/sandbox-settings?provider=local');
  await expectInteractive(page, javaScriptEnabled);
  const python = page.locator('#field-python_path');
  await expect(python).toHaveValue('/usr/bin/python3.11');

  // An executable, so the settings are valid; the health check cannot run with it.
  await python.fill('/bin/false');
  await page.getByTestId('save').click();
  await expect(page.getByTestId('save-notice')).toContainText('Nothing was saved: it is the active provider');
  await expect(page.getByTestId('unhealthy')).toBeVisible();
  await expect(python).toHaveValue('/bin/false');
  await page.screenshot({ path: testInfo.outputPath(`unhealthy-save-${testInfo.project.name}.png`), fullPage: true });
  // Still live with the old settings: a trial runs.
  await page.getByTestId('run').click();
  await expect(page.getByTestId('trial-status')).toHaveAttribute('data-status', 'success');
  await expect(page.getByTestId('health-badge')).toHaveText('Healthy');

  // The explicit second step: apply anyway. Runs now fail.
  await python.fill('/bin/false');
  await page.getByTestId('save').click();
  await page.getByTestId('activate-anyway').click();
  await expect(page.getByTestId('save-notice')).toContainText('New runs use these settings now.');
  await expect(page.getByTestId('health-badge')).toHaveText('Unhealthy');
  // The audit tells this save from an ordinary one.
  await page.goto('/admin/audit');
  await expect(page.getByTestId('audit-row').first()).toContainText('health_check: failed; applied anyway');
  await page.goto('/admin/sandbox-settings?provider=local');

  // History lists both versions with the change; Restore brings the first one back.
  await page.getByTestId('tab-history').click();
  const rows = page.getByTestId('version');
  await expect(rows.first()).toContainText('Python interpreter: /usr/bin/python3.11 → /bin/false');
  await expect(rows.first()).toContainText('current');
  await page.screenshot({ path: testInfo.outputPath(`versions-${testInfo.project.name}.png`), fullPage: true });
  // Restore asks first.
  await rows.nth(1).getByTestId('restore').click();
  await expect(page.getByTestId('confirm-restore')).toContainText('applied at once');
  await page.getByTestId('confirm-restore-yes').click();
  await expect(page.getByTestId('save-notice')).toContainText('Restored version #');
  await expect(page.getByTestId('version').first()).toContainText('restored from #');
  await page.getByTestId('tab-settings').click();
  await expect(page.locator('#field-python_path')).toHaveValue('/usr/bin/python3.11');
  await expect(page.getByTestId('health-badge')).toHaveText('Healthy');
});

test('a trial on a provider that is not active runs there and keeps what was typed', async ({ page, javaScriptEnabled }) => {
  await page.goto('/admin/sandbox-settings?provider=self_managed');
  await expectInteractive(page, javaScriptEnabled);
  await expect(page.getByTestId('trial-runs-on')).toContainText('Self-managed');
  await expect(page.getByTestId('trial-runs-on')).toContainText('not the active provider');
  // Saved pointing at a port nothing listens on.
  await page.locator('#field-endpoint').fill('http://127.0.0.1:9');
  await page.locator('#field-api_token').fill('e2e-token');
  await page.getByTestId('save').click();
  await expect(page.getByTestId('save-notice')).toContainText('Saved (version');

  // Unsaved edits in the settings, and code in the trial.
  await page.locator('#field-endpoint').fill('http://executor.internal:9385');
  await page.locator('#trial-code').fill('def main(**args):\n    return "from the trial"\n');
  await page.getByTestId('run').click();

  // It ran on the saved self-managed settings (unreachable), not on the active local provider.
  await expect(page.getByTestId('trial-error')).toContainText('127.0.0.1:9');
  await expect(page).toHaveURL(/provider=self_managed/);
  await expect(page.locator('#field-endpoint')).toHaveValue('http://executor.internal:9385');
  await expect(page.locator('#trial-code')).toHaveValue('def main(**args):\n    return "from the trial"\n');

  // Test connection keeps the trial's code too, and names what is wrong in plain words.
  await page.locator('#field-endpoint').fill('http://127.0.0.1:9');
  await page.locator('#field-api_token').fill('e2e-token');
  await page.getByTestId('test-connection').click();
  await expect(page.getByTestId('connection-message')).toContainText('Nothing is listening on 127.0.0.1:9');
  await expect(page.getByTestId('connection-report').locator('details')).toContainText('Connection refused');
  await expectInteractive(page, javaScriptEnabled);
  if (javaScriptEnabled) {
    // A real modal: Esc closes it.
    await page.keyboard.press('Escape');
    await expect(page.getByTestId('connection-report')).toBeHidden();
  } else {
    await page.getByTestId('close-report').click();
  }
  await expect(page.locator('#trial-code')).toHaveValue('def main(**args):\n    return "from the trial"\n');
});

test('a keyboard-only trial run', async ({ page, javaScriptEnabled }, testInfo) => {
  test.skip(!javaScriptEnabled, 'Ctrl+Enter and Esc-then-Tab need JavaScript');
  await page.goto('/admin/sandbox-settings?provider=local');
  await expectInteractive(page, true);
  const code = page.locator('#trial-code');
  await expect(code).toHaveCSS('font-family', /monospace|Menlo|Consolas/);
  // Tabbing through the page passes the code box by without touching the code.
  const sample = await code.inputValue();
  await page.locator('#trial-timeout').focus();
  await page.keyboard.press('Tab');
  await expect(code).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(page.locator('#trial-arguments')).toBeFocused();
  await expect(code).toHaveValue(sample);
  await page.keyboard.press('Shift+Tab');
  await expect(code).toBeFocused();
  await page.keyboard.press('Tab');
  await expect(page.locator('#trial-arguments')).toBeFocused();
  await expect(code).toHaveValue(sample);
  await code.focus();
  await page.keyboard.press('Control+A');
  await page.keyboard.type('def main(**args):\n');
  await page.keyboard.press('Tab');
  await page.keyboard.type('return 6 * 7');
  await expect(code).toHaveValue('def main(**args):\n    return 6 * 7');
  // The line numbers follow what is typed, on the code's own line height.
  const lines = page.getByTestId('code-lines');
  await expect(lines).toHaveText('1\n2');
  await page.keyboard.press('Enter');
  await expect(lines).toHaveText('1\n2\n3');
  await page.keyboard.press('Backspace');
  await expect(lines).toHaveText('1\n2');
  const heights = await page.evaluate(() => ['#trial-code', '[data-testid=code-lines]']
    .map((s) => getComputedStyle(document.querySelector(s)).lineHeight));
  expect(heights[0]).toBe(heights[1]);
  // Esc releases the box: Tab moves on to the arguments.
  await page.keyboard.press('Escape');
  await page.keyboard.press('Tab');
  await expect(page.locator('#trial-arguments')).toBeFocused();
  await code.focus();
  await page.keyboard.press('Control+Enter');
  await expect(page.getByTestId('trial-status')).toHaveAttribute('data-status', 'success');
  await expect(page.getByTestId('trial-return')).toHaveText('42');
  await expect(page.getByTestId('trial-status')).toHaveText('Success');
  await page.locator('#trial').screenshot({ path: testInfo.outputPath('trial-run.png') });
});

const PAGES = ['/', '/admin/sandbox-settings', '/admin/environments', '/admin/history', '/admin/sessions', '/admin/api-keys', '/admin/audit', '/admin/account', '/admin/administrators'];

test('the code box numbers its lines with JavaScript off too', async ({ page }) => {
  await page.goto('/admin/sandbox-settings?provider=local');
  const code = await page.locator('#trial-code').inputValue();
  const expected = code.split('\n').map((_, i) => String(i + 1)).join('\n');
  await expect(page.getByTestId('code-lines')).toHaveText(expected);
});

/** A run that succeeded and one that failed (for their badges), and the pages of one run and of
 * one environment: every page the console has. */
async function everyPage(page) {
  await page.goto('/admin/sandbox-settings?provider=local');
  for (const code of ['def main():\n    return 1\n', 'def main():\n    raise ValueError("no")\n']) {
    await page.locator('#trial-code').fill(code);
    await page.locator('#trial-arguments').fill('{}');
    await page.getByTestId('run').click();
    await expect(page.getByTestId('trial-status')).toHaveAttribute('data-status', /success|program_error/);
  }
  await page.goto('/admin/history');
  const run = await page.getByTestId('history-row').first().getByRole('link').getAttribute('href');
  await page.goto('/admin/environments');
  const environment = await page.getByTestId('environments').getByRole('link').first().getAttribute('href');
  return [...PAGES, run, environment];
}

const pageName = (path) => (path === '/' ? 'dashboard' : path.split('/').slice(2).join('-'));

test('no page scrolls sideways on a phone, in either theme', async ({ page, javaScriptEnabled }, testInfo) => {
  test.setTimeout(240_000);
  const pages = await everyPage(page);
  await page.setViewportSize({ width: 390, height: 844 });
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const path of pages) {
      await page.goto(path);
      await expectInteractive(page, javaScriptEnabled);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width, `${path} at 390 px (${scheme})`).toBeLessThanOrEqual(390);
      await expect(page.getByTestId('logout')).toBeInViewport();
      await page.screenshot({ path: testInfo.outputPath(`phone-${pageName(path)}-${scheme}-${testInfo.project.name}.png`), fullPage: true });
    }
  }
});

test('every badge on every page meets AA contrast in both themes', async ({ page, javaScriptEnabled }) => {
  test.setTimeout(180_000);
  test.skip(!javaScriptEnabled, 'colours do not depend on JavaScript');
  const pages = await everyPage(page);
  const seen = new Set();
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const path of pages) {
      await page.goto(path);
      const badges = await page.evaluate(() => {
        const parse = (c) => {
          const m = c.match(/rgba?\(([^)]+)\)/);
          if (!m) throw new Error(`a colour this test cannot read: ${c}`);
          const [r, g, b, a = 1] = m[1].split(/[\s,/]+/).filter(Boolean).map(Number);
          return { r, g, b, a };
        };
        const lum = ({ r, g, b }) => {
          const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
          return 0.2126 * f(r) + 0.7152 * f(g) + 0.0722 * f(b);
        };
        // The colour behind an element: its own background and its ancestors', blended.
        const behind = (el) => {
          const layers = [];
          for (let e = el; e; e = e.parentElement) {
            const c = parse(getComputedStyle(e).backgroundColor);
            if (c.a > 0) { layers.push(c); if (c.a >= 1) break; }
          }
          let base = { r: 255, g: 255, b: 255 };
          for (const c of layers.reverse()) {
            base = { r: c.r * c.a + base.r * (1 - c.a), g: c.g * c.a + base.g * (1 - c.a), b: c.b * c.a + base.b * (1 - c.a) };
          }
          return base;
        };
        return [...document.querySelectorAll('.badge')].filter((b) => b.getClientRects().length > 0).map((b) => {
          const [hi, lo] = [lum(parse(getComputedStyle(b).color)), lum(behind(b))].sort((x, y) => y - x);
          return { text: b.textContent.trim(), kind: b.className, ratio: (hi + 0.05) / (lo + 0.05) };
        });
      });
      for (const badge of badges) {
        seen.add(badge.kind);
        // WCAG AA for small text: 4.5:1.
        expect(badge.ratio, `${path} (${scheme}): "${badge.text}" (${badge.kind})`).toBeGreaterThanOrEqual(4.5);
      }
    }
  }
  // The check saw each kind of badge the console draws.
  for (const kind of ['badge success', 'badge failure', 'badge']) {
    expect([...seen], kind).toContain(kind);
  }
});

test('dark mode changes the background, and every page is captured in both themes', async ({ page, javaScriptEnabled }, testInfo) => {
  test.setTimeout(180_000);
  test.skip(!javaScriptEnabled, 'one project is enough for the desktop screenshots');
  const backgrounds = {};
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const path of PAGES) {
      await page.goto(path);
      const name = path === '/' ? 'dashboard' : path.split('/').pop();
      await page.screenshot({ path: testInfo.outputPath(`page-${name}-${scheme}.png`), fullPage: true });
    }
    backgrounds[scheme] = await page.evaluate(() => getComputedStyle(document.documentElement).backgroundColor);
  }
  expect(backgrounds.light).toBe('rgb(245, 246, 248)');
  expect(backgrounds.dark).not.toBe(backgrounds.light);
});

test('a browser that prefers Chinese gets the console in Chinese, and every page is captured in both languages', async ({ browser, javaScriptEnabled }, testInfo) => {
  test.setTimeout(180_000);
  for (const locale of ['zh-CN', 'en-US']) {
    const context = await browser.newContext({ locale, javaScriptEnabled });
    const page = await context.newPage();
    await page.goto('/login');
    if (locale === 'zh-CN') {
      await expect(page.getByTestId('login-submit')).toHaveText('登录');
    }
    await signIn(page);
    await expect(page.getByTestId('admin-name')).toBeVisible();
    await page.goto('/admin/sandbox-settings?provider=local');
    await expectInteractive(page, javaScriptEnabled);
    if (locale === 'zh-CN') {
      await expect(page.locator('html')).toHaveAttribute('lang', 'zh-CN');
      await expect(page.locator('h1')).toHaveText('沙箱设置');
      await expect(page.getByTestId('save')).toHaveText('保存');
      await expect(page.getByTestId('trial-form')).toContainText('试运行');
      // The provider's schema: a label and its help.
      await expect(page.locator('label[for="field-python_path"]')).toContainText('Python 解释器');
      await expect(page.locator('[data-field=python_path] .help')).toContainText('绝对路径');
      // A trial's status in words, in Chinese.
      await page.getByTestId('run').click();
      await expect(page.getByTestId('trial-status')).toHaveText('成功');
    } else {
      await expect(page.locator('html')).toHaveAttribute('lang', 'en');
      await expect(page.locator('h1')).toHaveText('Sandbox settings');
    }
    for (const path of PAGES) {
      await page.goto(path);
      const name = path === '/' ? 'dashboard' : path.split('/').pop();
      await page.screenshot({ path: testInfo.outputPath(`lang-${locale}-${name}-${testInfo.project.name}.png`), fullPage: true });
    }
    await context.close();
  }
});
