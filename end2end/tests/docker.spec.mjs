// The docker provider end to end, against the dockerd that `make test` starts: configure it in
// the page (a bad image first), test connection, make it active, see its pool on the card, run
// code in a container; afterwards the local provider is made active again for the other specs.
import { test, expect } from '@playwright/test';
import { expectInteractive, signIn } from './helpers.mjs';

test.beforeEach(async ({ page }) => {
  await page.goto('/login');
  await signIn(page);
  await expect(page.getByTestId('admin-name')).toBeVisible();
});

// Whatever happened, the local provider is active again for the specs that follow.
test.afterEach(async ({ page }) => {
  await page.goto('/admin/sandbox-settings?provider=local');
  const activate = page.getByLabel('Make this the active provider');
  if (await activate.count()) {
    await activate.check();
    await page.getByTestId('save').click();
    await expect(page.getByTestId('provider-local')).toContainText('Active');
  }
});

test('an admin configures the docker provider, tests it, and runs code in a container', async ({ page, javaScriptEnabled }, testInfo) => {
  await page.goto('/admin/sandbox-settings');
  await expectInteractive(page, javaScriptEnabled);
  await page.getByTestId('provider-docker').click();
  await expect(page).toHaveURL(/provider=docker/);
  await expectInteractive(page, javaScriptEnabled);
  await expect(page.getByLabel('Docker host')).toHaveValue('unix:///var/run/docker.sock');

  // A typo in the image: the connection test names it.
  await page.getByLabel('Python image').fill('sandbox-runtime:no-such-tag');
  await page.getByTestId('test-connection').click();
  await expect(page.getByTestId('connection-report')).toContainText('"sandbox-runtime:no-such-tag" is not on the Docker host');
  await expectInteractive(page, javaScriptEnabled);
  await page.getByTestId('close-report').click();
  await expect(page.getByTestId('connection-report')).toBeHidden();

  await page.getByLabel('Python image').fill('sandbox-runtime:local');
  await page.getByLabel('Pool size per language').fill('1');
  await page.getByTestId('test-connection').click();
  await expect(page.getByTestId('connection-report')).toContainText('Connection test passed', { timeout: 30_000 });
  await expectInteractive(page, javaScriptEnabled);
  await page.getByTestId('close-report').click();
  await expect(page.getByTestId('connection-report')).toBeHidden();

  // With JavaScript off, closing the report goes back to the page with the stored values: set
  // the pool again (hydrated, the dialog just closes and the form keeps what was typed).
  await expectInteractive(page, javaScriptEnabled);
  await page.getByLabel('Pool size per language').fill('1');
  await page.getByLabel('Make this the active provider').check();
  await page.getByTestId('save').click();
  await expect(page.getByTestId('save-notice')).toContainText('Saved (version');
  await expect(page.getByTestId('provider-docker')).toContainText('Active');

  // The pool warms in the background: the card shows it once a reload sees it ready.
  // One pool figure on the card, live; the health message does not repeat it.
  await expect(async () => {
    await page.reload();
    await expect(page.getByTestId('health-badge')).toHaveText('Healthy', { timeout: 2_000 });
    await expect(page.getByTestId('pool-status')).toHaveText('Pool: 0 busy, 2 idle of 2 · Python started ahead: 1 ready, 0 warming', { timeout: 2_000 });
  }).toPass({ timeout: 30_000 });
  await expectInteractive(page, javaScriptEnabled);
  await expect(page.getByTestId('health-message')).not.toContainText('Pool');

  await page.locator('#trial-code').fill('import os\ndef main(name):\n    print("in", os.uname().nodename)\n    return {"hi": name, "uid": os.getuid()}\n');
  await page.locator('#trial-arguments').fill('{"name": "Ada"}');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('trial-status')).toHaveAttribute('data-status', 'success', { timeout: 30_000 });
  await expect(page.getByTestId('trial-return')).toContainText('"uid": 65534');
  await expect(page.getByTestId('trial-stdout')).toHaveText('in sandbox\n');
  await page.screenshot({ path: testInfo.outputPath(`docker-${testInfo.project.name}.png`), fullPage: true });
});
