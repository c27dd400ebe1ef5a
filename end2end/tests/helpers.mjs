// Shared steps of the browser tests.
import { expect } from '@playwright/test';

export const USER = process.env.E2E_ADMIN_USERNAME ?? 'admin';
export const PASSWORD = process.env.E2E_ADMIN_PASSWORD;

export async function signIn(page, password = PASSWORD) {
  await page.locator('#username').fill(USER);
  await page.locator('#password').fill(password);
  await page.getByTestId('login-submit').click();
}

export async function expectInteractive(page, javaScriptEnabled) {
  if (javaScriptEnabled) {
    await expect(page.locator('body')).toHaveAttribute('data-hydrated', 'true');
  } else {
    await expect(page.locator('body')).not.toHaveAttribute('data-hydrated', 'true');
  }
}
