// The API-keys page end to end, hydrated ("js") and with JavaScript off ("nojs"): create a
// key (shown once), run code with it through the REST API, revoke it, and see it refused.
import { test, expect } from '@playwright/test';
import { expectInteractive, signIn } from './helpers.mjs';

test.beforeEach(async ({ page }) => {
  await page.goto('/login');
  await signIn(page);
  await expect(page.getByTestId('admin-name')).toBeVisible();
});

test('an admin creates a key, an agent runs code with it, the admin revokes it', async ({ page, request, javaScriptEnabled }, testInfo) => {
  const name = `agent-${testInfo.project.name}`;
  await page.getByRole('link', { name: 'API keys' }).click();
  await expect(page).toHaveURL(/\/admin\/api-keys$/);
  await expectInteractive(page, javaScriptEnabled);

  await page.locator('#key-name').fill('bad/name');
  await page.getByTestId('create-key').click();
  await expect(page.getByTestId('key-notice')).toContainText("Use letters, digits");
  await expect(page.locator('#key-name')).toHaveValue('bad/name');

  await page.locator('#key-name').fill(name);
  await page.getByTestId('create-key').click();
  const shown = page.getByTestId('new-key');
  await expect(shown).toBeVisible();
  const key = (await shown.textContent()).trim();
  expect(key).toMatch(/^sck_[A-Za-z0-9_-]{40}$/);
  await expect(page.getByTestId(`key-${name}`)).toContainText(key.slice(0, 12));
  await page.screenshot({ path: testInfo.outputPath(`api-keys-${testInfo.project.name}.png`), fullPage: true });

  const run = await request.post('/api/v1/execute', {
    headers: { Authorization: `Bearer ${key}` },
    data: { language: 'python', code: 'def main(x):\n    return x * 2\n', arguments: { x: 21 } },
  });
  expect(run.status()).toBe(200);
  expect((await run.json()).result.value).toBe(42);

  await page.reload();
  await expectInteractive(page, javaScriptEnabled);
  await expect(page.getByTestId('new-key')).toHaveCount(0);
  await expect(page.getByTestId(`key-${name}`)).toContainText('UTC', { timeout: 10_000 });
  await expect(page.getByTestId(`key-${name}`)).toContainText('from 127.0.0.1');

  // Revoking asks first; Cancel leaves the key live.
  await page.getByTestId(`revoke-${name}`).click();
  await expect(page.getByTestId('confirm-revoke')).toContainText(`Revoke '${name}'?`);
  await page.getByTestId('cancel-revoke').click();
  await expect(page.getByTestId('confirm-revoke')).toHaveCount(0);
  await expect(page.getByTestId(`key-${name}`)).not.toContainText('Revoked');
  await page.getByTestId(`revoke-${name}`).click();
  await page.getByTestId(`confirm-revoke-${name}`).click();
  await expect(page.getByTestId('key-notice')).toContainText(`Revoked '${name}'`);
  await expect(page.getByTestId(`key-${name}`)).toContainText('Revoked');

  const refused = await request.post('/api/v1/execute', {
    headers: { Authorization: `Bearer ${key}` },
    data: { language: 'python', code: 'print(1)' },
  });
  expect(refused.status()).toBe(401);
});
