// The ssh provider end to end against the real sshd `scripts/sshd.sh up` started (make e2e
// starts it): from the settings page an admin points it at the host. Without known hosts the
// host is refused and the refusal shows the line to add; a wrong password is refused clearly;
// the right one passes (health and the test script run on the host); the private-key tab signs
// in with a key; the save keeps every secret without ever showing it again.
import { test, expect } from '@playwright/test';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expectInteractive, signIn } from './helpers.mjs';

const state = process.env.SANDBOX_CONSOLE_SSHD_STATE ?? '/tmp/sandbox-console-sshd';
const read = (name) => fs.readFileSync(path.join(state, name), 'utf8').trim();

test.beforeEach(async ({ page }) => {
  expect(fs.existsSync(path.join(state, 'sshd.pid')), 'scripts/sshd.sh up has started the test sshd').toBeTruthy();
  await page.goto('/login');
  await signIn(page);
  await expect(page.getByTestId('admin-name')).toBeVisible();
});

test('an admin points ssh at a host: unknown key and wrong password refused clearly, password and key pass', async ({ page, javaScriptEnabled }, testInfo) => {
  // A work folder of this test's own, owned by the test account.
  const work = fs.mkdtempSync(path.join(os.tmpdir(), 'e2e-ssh-'));
  const owner = fs.statSync(path.join(state, 'home'));
  fs.chownSync(work, owner.uid, owner.gid);
  // Each project names the host its own way: a worker's server may have run the other
  // project's test before, and a saved key is reused while the host (where it goes) is the same.
  const host = javaScriptEnabled ? '127.0.0.1' : 'localhost';
  const knownHosts = read('known_hosts').replace('[127.0.0.1]', `[${host}]`);
  const password = read('password');
  const key = read('client_ed25519');
  // A secret's field shows under its tab (after a post without JavaScript, the tab of a
  // stored key may be the one open).
  const fill = async (fields) => {
    for (const [name, value] of Object.entries(fields)) {
      if (name === 'password') await page.getByTestId('choice-password').check();
      if (name === 'private_key') await page.getByTestId('choice-private_key').check();
      await page.locator(`#field-${name}`).fill(value);
    }
  };
  // `message`: in the failure's message, or in a pass's report (the health check's line).
  const testConnection = async (outcome, message) => {
    await page.getByTestId('test-connection').click();
    await expect(page.getByTestId('connection-report')).toContainText(outcome, { timeout: 60_000 });
    const where = outcome.includes('failed') ? 'connection-message' : 'connection-report';
    if (message) await expect(page.getByTestId(where)).toContainText(message);
  };
  const closeReport = async () => {
    await expectInteractive(page, javaScriptEnabled);
    await page.getByTestId('close-report').click();
    await expect(page.getByTestId('connection-report')).toBeHidden();
  };
  const common = {
    host,
    port: read('port'),
    username: read('account'),
    python_bin: '/usr/bin/python3.11',
    work_dir: work,
  };

  await page.goto('/admin/sandbox-settings');
  await expectInteractive(page, javaScriptEnabled);
  await page.getByTestId('provider-ssh').click();
  await expect(page).toHaveURL(/provider=ssh/);
  await expectInteractive(page, javaScriptEnabled);
  // The sign-in tabs: the password's field shows, the key's does not (the key's tab opens
  // first when the other project's test saved a key on this server).
  await page.getByTestId('choice-password').check();
  await expect(page.locator('#field-password')).toBeVisible();
  await expect(page.locator('#field-private_key')).toBeHidden();
  await expect(page.locator('#field-password')).toHaveAttribute('type', 'password');

  // No known hosts: refused, with the line to add.
  await fill({ ...common, password });
  await testConnection('Connection test failed', 'does not list');
  await expect(page.getByTestId('connection-message')).toContainText(knownHosts);
  await expect(page.getByTestId('connection-report')).not.toContainText(password);
  await closeReport();

  // Known, but the wrong password.
  await fill({ ...common, known_hosts: knownHosts, password: `wrong-${password}` });
  await testConnection('Connection test failed', 'refused the password');
  await expect(page.getByTestId('connection-report')).not.toContainText(`wrong-${password}`);
  await closeReport();

  // The right password: health (interpreters found) and the test script on the host.
  await fill({ ...common, known_hosts: knownHosts, password });
  await testConnection('Connection test passed', 'it runs Python 3.11');
  await expect(page.getByTestId('connection-report')).toContainText('Node.js v');
  await expect(page.getByTestId('connection-report')).toContainText('sandbox-console test connection');
  await page.screenshot({ path: testInfo.outputPath(`ssh-${testInfo.project.name}.png`), fullPage: true });
  await closeReport();

  // The private-key tab: a key alone signs in.
  await page.getByTestId('choice-private_key').check();
  await expect(page.locator('#field-private_key')).toBeVisible();
  await expect(page.locator('#field-password')).toBeHidden();
  await fill({ ...common, known_hosts: knownHosts, private_key: key });
  await page.getByTestId('choice-password').check();
  await page.locator('#field-password').fill('');
  await page.getByTestId('choice-private_key').check();
  await testConnection('Connection test passed', 'host key verified');
  await closeReport();

  // Saved without making it active: the key is kept (encrypted) and never shown again.
  await page.getByTestId('choice-private_key').check();
  await fill({ ...common, known_hosts: knownHosts, private_key: key });
  await page.getByTestId('save').click();
  await expect(page.getByTestId('save-notice')).toContainText('Saved (version');
  await page.reload();
  // The stored key opens its tab.
  await expect(page.getByTestId('choice-private_key')).toBeChecked();
  await expect(page.locator('#field-private_key')).toHaveValue('');
  expect(await page.content()).not.toContain(key.split('\n')[1]);
  await expect(page.getByTestId('provider-local')).toContainText('Active');
  // Every run's folder went.
  expect(fs.readdirSync(work)).toEqual([]);
  fs.rmSync(work, { recursive: true, force: true });
});
