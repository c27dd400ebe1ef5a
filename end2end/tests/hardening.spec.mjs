// What an outside probe found, in a real browser: code that tries to close the trial's
// textarea and run a script shows as text, no dialog opens, the page still hydrates, and the
// page's Content-Security-Policy lets the app's own scripts run (no violation on any page).
import { test, expect } from '@playwright/test';
import { expectInteractive, signIn } from './helpers.mjs';

const HOSTILE = '</textarea><script>alert(1)</script>';

test.beforeEach(async ({ page }) => {
  // Collected before any page script runs; the init script is not subject to the page's CSP.
  await page.addInitScript(() => {
    window.__cspViolations = [];
    document.addEventListener('securitypolicyviolation', (e) => {
      window.__cspViolations.push(`${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  await page.goto('/login');
  await signIn(page);
  await expect(page.getByTestId('admin-name')).toBeVisible();
});

test('markup typed into the trial shows as text and runs nothing', async ({ page, javaScriptEnabled }, testInfo) => {
  const dialogs = [];
  page.on('dialog', async (dialog) => {
    dialogs.push(dialog.message());
    await dialog.dismiss();
  });
  await page.goto('/admin/sandbox-settings');
  await expectInteractive(page, javaScriptEnabled);
  const code = `def main(x):\n    return "${HOSTILE}"\n`;
  const args = `{"x": "${HOSTILE.replaceAll('/', '\\/')}"}`;

  await page.locator('#trial-code').fill(code);
  await page.locator('#trial-arguments').fill(args);
  await page.getByTestId('run').click();

  await expect(page.getByTestId('trial-status')).toHaveAttribute('data-status', 'success');
  await expectInteractive(page, javaScriptEnabled);
  await expect(page.locator('#trial-code')).toHaveValue(code);
  await expect(page.locator('#trial-arguments')).toHaveValue(args);
  await expect(page.getByTestId('trial-return')).toContainText(HOSTILE);
  expect(dialogs).toEqual([]);
  expect(await page.locator('script:not([nonce])').count()).toBe(0);
  if (javaScriptEnabled) {
    expect(await page.evaluate(() => window.__cspViolations)).toEqual([]);
  }
  await page.locator('#trial').screenshot({ path: testInfo.outputPath(`trial-injection-${testInfo.project.name}.png`) });
});

test('the app runs under its own policy on every page', async ({ page, javaScriptEnabled }) => {
  test.skip(!javaScriptEnabled, 'the policy only matters for scripts');
  for (const path of ['/', '/admin/sandbox-settings', '/admin/history', '/admin/api-keys', '/admin/audit']) {
    const response = await page.goto(path);
    expect(response.headers()['content-security-policy']).toContain("object-src 'none'");
    await expectInteractive(page, true);
    expect(await page.evaluate(() => window.__cspViolations), path).toEqual([]);
  }
});
