// The execution history end to end, hydrated ("js") and with JavaScript off ("nojs"): a trial
// run shows up at the top, its detail page opens, and the CSV export downloads.
import { test, expect } from '@playwright/test';
import fs from 'node:fs';
import { expectInteractive, signIn } from './helpers.mjs';

test('a trial run appears in the history, with its detail and an export', async ({ page, javaScriptEnabled }, testInfo) => {
  await page.goto('/login');
  await signIn(page);
  await page.getByRole('link', { name: 'Sandbox settings' }).click();
  const marker = `history-${testInfo.project.name}`;
  await page.locator('#trial-code').fill(`def main():\n    print("${marker}")\n    return 1\n`);
  await page.locator('#trial-arguments').fill('{}');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('trial-status')).toHaveAttribute('data-status', 'success');

  await page.getByRole('navigation', { name: 'Main' }).getByRole('link', { name: 'History' }).click();
  await expect(page).toHaveURL(/\/admin\/history$/);
  await expectInteractive(page, javaScriptEnabled);
  const newest = page.getByTestId('history-row').first();
  await expect(newest).toContainText('trial');
  await expect(newest).toContainText('admin');
  await expect(newest).toContainText('Success');
  await expect(newest.locator('[data-status=success]')).toBeVisible();
  await page.screenshot({ path: testInfo.outputPath(`history-${testInfo.project.name}.png`), fullPage: true });

  await page.locator('#f-status').selectOption('success');
  await page.getByTestId('filter').click();
  await expect(page).toHaveURL(/status=success/);
  await expect(page.getByTestId('history-row').first()).toContainText('trial');

  const download = page.waitForEvent('download');
  await page.getByTestId('export-csv').click();
  const file = await download;
  expect(file.suggestedFilename()).toBe('sandbox-history.csv');
  const csv = fs.readFileSync(await file.path(), 'utf8');
  expect(csv.split('\n')[0]).toContain('id,created_at,caller');
  expect(csv).toContain(',trial,');

  await newest.getByRole('link').click();
  await expect(page.getByTestId('run-status')).toHaveText('Success');
  await expect(page.getByTestId('run-status')).toHaveAttribute('data-status', 'success');
  await expect(page.getByTestId('run-detail')).toContainText('Code SHA-256');
});
