// The sandbox-settings page end to end, hydrated (project "js") and with JavaScript off
// (project "nojs"): fields from the schema, an inline error, a save that survives a reload,
// test connection, and a trial run.
import { test, expect } from '@playwright/test';
import { expectInteractive, signIn } from './helpers.mjs';

test.beforeEach(async ({ page }) => {
  await page.goto('/login');
  await signIn(page);
  await expect(page.getByTestId('admin-name')).toBeVisible();
});

test('an admin configures, tests and tries the local provider', async ({ page, javaScriptEnabled }, testInfo) => {
  await page.getByRole('link', { name: 'Sandbox settings' }).click();
  await expect(page).toHaveURL(/\/admin\/sandbox-settings$/);
  await expectInteractive(page, javaScriptEnabled);
  await expect(page.getByTestId('provider-local')).toContainText('Active');
  await expect(page.getByTestId('health-badge')).toHaveText('Healthy');
  await expect(page.getByLabel('Python interpreter')).toHaveValue('/usr/bin/python3.11');
  const timeout = page.locator('#field-timeout_secs');

  await timeout.fill('0');
  await page.getByTestId('save').click();
  await expect(page.locator('[data-field=timeout_secs] .field-error')).toHaveText('Enter a number from 1 to 600.');
  await expect(page.getByTestId('save-notice')).toHaveText('Nothing was saved: fix the marked fields.');
  await expect(timeout).toHaveValue('0');

  const value = javaScriptEnabled ? '17' : '19';
  await timeout.fill(value);
  await page.getByTestId('save').click();
  await expect(page.getByTestId('save-notice')).toContainText('Saved (version');
  await page.reload();
  await expectInteractive(page, javaScriptEnabled);
  await expect(page.locator('#field-timeout_secs')).toHaveValue(value);

  await page.getByTestId('test-connection').click();
  await expect(page.getByTestId('connection-report')).toContainText('Connection test passed');
  await page.screenshot({ path: testInfo.outputPath(`sandbox-settings-${testInfo.project.name}.png`), fullPage: true });
  await page.getByTestId('close-report').click();
  await expect(page.getByTestId('connection-report')).toBeHidden();

  await page.locator('#trial-code').fill('def main(name):\n    print("running")\n    return {"hi": name}\n');
  await page.locator('#trial-arguments').fill('{"name": "Ada"}');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('trial-status')).toHaveAttribute('data-status', 'success');
  await expect(page.getByTestId('trial-return')).toContainText('"hi": "Ada"');
  await expect(page.getByTestId('trial-stdout')).toHaveText('running\n');
  await page.locator('#trial').screenshot({ path: testInfo.outputPath(`trial-run-${testInfo.project.name}.png`) });
});

test('arguments that are not a JSON object are refused with a message', async ({ page, javaScriptEnabled }) => {
  await page.goto('/admin/sandbox-settings');
  await expectInteractive(page, javaScriptEnabled);
  await page.locator('#trial-arguments').fill('[1, 2]');

  if (javaScriptEnabled) {
    await expect(page.locator('#trial .field-error')).toHaveText('Arguments must be a JSON object.');
  } else {
    await page.getByTestId('run').click();
    await expect(page.getByTestId('trial-error')).toContainText('Arguments must be a JSON object');
  }
});
