// The audit end to end, hydrated ("js") and with JavaScript off ("nojs"): a save on
// the sandbox page shows up at the top of the audit with the changed key, never its value.
import { test, expect } from '@playwright/test';
import { expectInteractive, signIn } from './helpers.mjs';

test('a saved change appears in the audit', async ({ page, javaScriptEnabled }, testInfo) => {
  await page.goto('/login');
  await signIn(page);
  await page.getByRole('link', { name: 'Sandbox settings' }).click();
  const memory = javaScriptEnabled ? '300' : '320';
  await page.locator('#field-memory_mb').fill(memory);
  await page.getByTestId('save').click();
  await expect(page.getByTestId('save-notice')).toContainText('Saved (version');

  await page.getByRole('link', { name: 'Audit', exact: true }).click();
  await expect(page).toHaveURL(/\/admin\/audit$/);
  await expectInteractive(page, javaScriptEnabled);
  const newest = page.getByTestId('audit-row').first();
  await expect(newest).toContainText('memory_mb');
  await expect(newest).toContainText('admin');
  await expect(page.getByTestId('audit-pages')).toContainText('Page 1 of 1');
  await page.screenshot({ path: testInfo.outputPath(`settings-audit-${testInfo.project.name}.png`), fullPage: true });
});
