// Sign in, see the shell, sign out: once hydrated (project "js") and once with JavaScript
// disabled (project "nojs"), where every step is a plain form post and redirect.
import { test, expect } from '@playwright/test';

import { PASSWORD, USER, expectInteractive, signIn } from './helpers.mjs';

test.beforeAll(() => {
  if (!PASSWORD) throw new Error('E2E_ADMIN_PASSWORD is not set (scripts/e2e.sh sets it)');
});

test('an admin signs in, sees the shell, and signs out', async ({ page, javaScriptEnabled }, testInfo) => {
  await page.goto('/');
  await expect(page).toHaveURL(/\/login$/);
  await expectInteractive(page, javaScriptEnabled);

  await signIn(page);

  await expect(page).toHaveURL(/\/$/);
  await expect(page.getByTestId('admin-name')).toHaveText(USER);
  await expect(page.getByRole('heading', { name: 'Dashboard', level: 1 })).toBeVisible();
  await expect(page.getByTestId('overview')).toContainText('Administrators');
  await expect(page.getByTestId('dashboard-provider')).toContainText('Local sandbox');
  await expect(page.getByTestId('dashboard-health')).toHaveText('Healthy');
  await expect(page.getByRole('navigation', { name: 'Main' }).getByRole('link')).toHaveText(['Dashboard', 'Sandbox settings', 'Environments', 'History', 'Sessions', 'API keys', 'Audit', 'Administrators']);
  await expectInteractive(page, javaScriptEnabled);
  await page.screenshot({ path: testInfo.outputPath(`shell-${testInfo.project.name}.png`), fullPage: true });

  await page.getByTestId('logout').click();

  await expect(page).toHaveURL(/\/login\?error=signed_out$/);
  await expect(page.getByTestId('login-notice')).toHaveText('You have been signed out.');
  await page.goto('/');
  await expect(page).toHaveURL(/\/login$/);
});

test('a wrong password is refused with a clear message', async ({ page }) => {
  await page.goto('/login');

  await signIn(page, 'definitely not it');

  await expect(page).toHaveURL(/\/login\?error=invalid$/);
  await expect(page.getByTestId('login-notice')).toHaveText('Invalid username or password.');
  await page.goto('/');
  await expect(page).toHaveURL(/\/login$/);
});

test('a deep link survives the detour through sign-in', async ({ page }) => {
  await page.goto('/no-such-page?from=e2e');
  await expect(page).toHaveURL(/\/login\?next=\/no-such-page%3Ffrom%3De2e$/);

  await signIn(page);

  await expect(page).toHaveURL(/\/no-such-page\?from=e2e$/);
  await expect(page.getByRole('heading', { name: 'Page not found' })).toBeVisible();
  await expect(page.getByTestId('admin-name')).toHaveText(USER);
});
