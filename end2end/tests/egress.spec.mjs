// An allow-list end to end: an admin puts a host (a name mapped to a server this test starts on
// loopback) on the local provider's allow-list, Test connection shows it resolved and the
// list holding, and a trial run fetches from it; afterwards the local provider has no network
// again for the specs that follow.
import { test, expect } from '@playwright/test';
import http from 'node:http';
import { expectInteractive, signIn } from './helpers.mjs';

let server;
let port;

test.beforeAll(async () => {
  server = http.createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'text/plain' });
    res.end('hello from files.test');
  });
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  port = server.address().port;
});

test.afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

test.beforeEach(async ({ page }) => {
  await page.goto('/login');
  await signIn(page);
  await expect(page.getByTestId('admin-name')).toBeVisible();
});

test.afterEach(async ({ page }) => {
  await page.goto('/admin/sandbox-settings?provider=local');
  await page.getByLabel('Network', { exact: true }).selectOption('none');
  await page.getByLabel('Allowed hosts').fill('');
  await page.getByLabel('Static hosts').fill('');
  await page.getByTestId('save').click();
  await expect(page.getByTestId('save-notice')).toContainText('Saved (version');
});

test('an admin allows a host, tests the list, and a trial run fetches from it', async ({ page, javaScriptEnabled }, testInfo) => {
  await page.goto('/admin/sandbox-settings?provider=local');
  await expectInteractive(page, javaScriptEnabled);
  await page.getByLabel('Network', { exact: true }).selectOption('allow-list');
  await page.getByLabel('Allowed hosts').fill(`files.test:${port}`);
  await page.getByLabel('Static hosts').fill('files.test 127.0.0.1');

  await page.getByTestId('test-connection').click();
  const report = page.getByTestId('connection-report');
  await expect(report).toContainText('the allow-list holds', { timeout: 30_000 });
  await expect(report).toContainText('files.test');
  await expect(report).toContainText('127.0.0.1');
  await page.getByTestId('close-report').click();
  await expect(report).toBeHidden();

  // Closing the report keeps the form as it was; filling the list again changes nothing.
  await page.getByLabel('Network', { exact: true }).selectOption('allow-list');
  await page.getByLabel('Allowed hosts').fill(`files.test:${port}`);
  await page.getByLabel('Static hosts').fill('files.test 127.0.0.1');
  await page.getByTestId('save').click();
  await expect(page.getByTestId('save-notice')).toContainText('Saved (version');

  await page.locator('#trial-code').fill(
    `import urllib.request\ndef main(**args):\n    return urllib.request.urlopen('http://files.test:${port}/', timeout=10).read().decode()\n`);
  await page.getByTestId('run').click();
  await expect(page.getByTestId('trial-status')).toHaveAttribute('data-status', 'success', { timeout: 30_000 });
  await expect(page.getByTestId('trial-return')).toContainText('hello from files.test');

  await page.locator('#trial-code').fill(
    `import socket\ndef main(**args):\n    try:\n        socket.create_connection(('169.254.169.254', 80), timeout=5)\n        return 'reached'\n    except OSError as e:\n        return 'refused'\n`);
  await page.getByTestId('run').click();
  await expect(page.getByTestId('trial-return')).toContainText('refused', { timeout: 30_000 });
  await expect(page.getByTestId('trial-stderr')).toContainText("egress to 169.254.169.254:80 is not on this provider's allow-list");
  await page.screenshot({ path: testInfo.outputPath(`egress-${testInfo.project.name}.png`), fullPage: true });
});
