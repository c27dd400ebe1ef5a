// Accounts end to end, hydrated ("js") and with JavaScript off ("nojs"): an admin adds a
// second administrator, whose generated password is shown once; they sign in, must choose
// their own password before any other page opens, and then can. The theme chosen on the
// Account page is remembered for the admin.
import { test, expect } from '@playwright/test';
import { expectInteractive, signIn } from './helpers.mjs';

test('a new administrator must replace the generated password before anything else', async ({ page, browser, javaScriptEnabled }, testInfo) => {
  const name = `ops-${testInfo.project.name}`;
  await page.goto('/login');
  await signIn(page);
  await page.getByRole('link', { name: 'Administrators' }).click();
  await expectInteractive(page, javaScriptEnabled);
  await page.locator('#new-admin').fill(name);
  await page.getByTestId('add-admin').click();
  const shown = page.locator('#one-time-password');
  await expect(shown).toBeVisible();
  const generated = (await shown.textContent()).trim();
  expect(generated.length).toBeGreaterThanOrEqual(16);
  await expect(page.locator(`[data-name="${name}"]`)).toContainText('must change password');
  await page.screenshot({ path: testInfo.outputPath(`administrators-${testInfo.project.name}.png`), fullPage: true });
  await page.reload();
  await expectInteractive(page, javaScriptEnabled);
  await expect(page.locator('#one-time-password')).toHaveCount(0);
  // The same name again is refused on the form, the name kept in the field.
  await page.locator('#new-admin').fill(name);
  await page.getByTestId('add-admin').click();
  await expect(page).toHaveURL(/\/admin\/administrators$/);
  await expect(page.getByTestId('username-error')).toContainText('already exists');
  await expect(page.locator('#new-admin')).toHaveValue(name);

  const context = await browser.newContext({ javaScriptEnabled });
  const other = await context.newPage();
  await other.goto('/login');
  await other.locator('#username').fill(name);
  await other.locator('#password').fill(generated);
  await other.getByTestId('login-submit').click();
  await expect(other).toHaveURL(/\/admin\/account$/);
  await expect(other.getByTestId('password-change-required')).toBeVisible();
  await other.goto('/admin/sandbox-settings');
  await expect(other).toHaveURL(/\/admin\/account$/);
  await other.screenshot({ path: testInfo.outputPath(`forced-password-change-${testInfo.project.name}.png`), fullPage: true });

  // A mistyped confirmation: the page again, the message beside the field (never /rpc JSON).
  await other.locator('#current-password').fill(generated);
  await other.locator('#new-password').fill('my-own-password-1');
  await other.locator('#confirm-password').fill('my-own-password-2');
  await other.getByTestId('change-password').click();
  await expect(other).toHaveURL(/\/admin\/account$/);
  await expect(other.getByTestId('confirm-error')).toContainText('differ');
  await expect(other.locator('#confirm-password')).toBeFocused();

  await other.locator('#current-password').fill(generated);
  await other.locator('#new-password').fill('my-own-password-1');
  await other.locator('#confirm-password').fill('my-own-password-1');
  await other.getByTestId('change-password').click();
  await expect(other.getByTestId('account-notice')).toContainText('Password changed');
  await expect(other.getByTestId('password-change-required')).toHaveCount(0);
  await other.goto('/admin/sandbox-settings');
  await expect(other).toHaveURL(/\/admin\/sandbox-settings$/);
  await context.close();

  // The audit shows who did what.
  await page.goto('/admin/audit?view=accounts');
  await expect(page.getByTestId('audit')).toContainText('admin_add');
  await expect(page.getByTestId('audit')).toContainText('password_change');
});

test('the theme chosen on the Account page is remembered', async ({ page, javaScriptEnabled }) => {
  await page.goto('/login');
  await signIn(page);
  await page.getByTestId('admin-name').click();
  await expect(page).toHaveURL(/\/admin\/account$/);
  await expectInteractive(page, javaScriptEnabled);
  await expect(page.getByTestId('sessions')).toContainText('this session');
  const background = () => page.locator('.app').evaluate((e) => getComputedStyle(e).backgroundColor);
  const light = 'rgb(245, 246, 248)';
  await expect.poll(background).toBe(light);

  await page.locator('#theme').selectOption('dark');
  await page.getByTestId('save-theme').click();
  await expect(page.getByTestId('account-notice')).toContainText('Theme saved');
  await expect(page.locator('.theme-mark')).toHaveAttribute('data-theme', 'dark');
  // Polled: the stylesheet of the page the post redirected to may still be loading.
  await expect.poll(background).toBe('rgb(17, 21, 28)');
  await page.goto('/admin/history');
  await expect(page.locator('.theme-mark')).toHaveAttribute('data-theme', 'dark');
  await expect.poll(background).toBe('rgb(17, 21, 28)');

  await page.goto('/admin/account');
  await page.locator('#theme').selectOption('auto');
  await page.getByTestId('save-theme').click();
  await expect(page.getByTestId('account-notice')).toContainText('Theme saved');
  await expect(page.locator('.theme-mark')).toHaveAttribute('data-theme', 'auto');
  await expect.poll(background).toBe(light);
});
