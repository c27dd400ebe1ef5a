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

  // History lists both versions with the change; Restore brings the first one back.
  await page.getByTestId('tab-history').click();
  const rows = page.getByTestId('version');
  await expect(rows.first()).toContainText('Python interpreter: /usr/bin/python3.11 → /bin/false');
  await expect(rows.first()).toContainText('current');
  await page.screenshot({ path: testInfo.outputPath(`versions-${testInfo.project.name}.png`), fullPage: true });
  await rows.nth(1).getByTestId('restore').click();
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
  await code.focus();
  await page.keyboard.press('Control+A');
  await page.keyboard.type('def main(**args):\n');
  await page.keyboard.press('Tab');
  await page.keyboard.type('return 6 * 7');
  await expect(code).toHaveValue('def main(**args):\n    return 6 * 7');
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

const PAGES = ['/', '/admin/sandbox-settings', '/admin/environments', '/admin/history', '/admin/api-keys', '/admin/audit'];

test('no page scrolls sideways on a phone, in either theme', async ({ page, javaScriptEnabled }, testInfo) => {
  test.setTimeout(180_000);
  await page.setViewportSize({ width: 390, height: 844 });
  for (const scheme of ['light', 'dark']) {
    await page.emulateMedia({ colorScheme: scheme });
    for (const path of PAGES) {
      await page.goto(path);
      await expectInteractive(page, javaScriptEnabled);
      const width = await page.evaluate(() => document.documentElement.scrollWidth);
      expect(width, `${path} at 390 px (${scheme})`).toBeLessThanOrEqual(390);
      await expect(page.getByTestId('logout')).toBeInViewport();
      const name = path === '/' ? 'dashboard' : path.split('/').pop();
      await page.screenshot({ path: testInfo.outputPath(`phone-${name}-${scheme}-${testInfo.project.name}.png`), fullPage: true });
    }
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
