// Package environments end to end, hydrated (project "js") and with JavaScript off ("nojs"):
// create one, watch it build (the page refreshes itself), test it, make it the local
// provider's, and run pandas and a matplotlib chart in a trial.
import { test, expect } from '@playwright/test';
import { expectInteractive, signIn } from './helpers.mjs';

test.beforeEach(async ({ page }) => {
  await page.goto('/login');
  await signIn(page);
  await expect(page.getByTestId('admin-name')).toBeVisible();
});

// Whatever happened, the local provider runs with the default environment again.
test.afterEach(async ({ page }) => {
  await page.goto('/admin/sandbox-settings?provider=local');
  await page.locator('#field-environment').selectOption('');
  await page.getByTestId('save').click();
  await expect(page.getByTestId('save-notice')).toContainText('Saved (version');
});

test('an admin builds an environment and runs pandas and a chart on it', async ({ page, javaScriptEnabled }, testInfo) => {
  // A first build downloads pandas and matplotlib; later ones reuse the store's folder.
  test.setTimeout(420_000);
  const name = `charts-${testInfo.project.name}`;
  await page.getByRole('link', { name: 'Environments' }).click();
  await expect(page).toHaveURL(/\/admin\/environments$/);
  await expectInteractive(page, javaScriptEnabled);
  await expect(page.getByTestId('env-default')).toContainText('default');

  // A typo is refused by field, and what was typed stays.
  await page.locator('#env-name').fill(name);
  await page.locator('#env-python').fill('pandas<3\n--index-url https://mirror.example/simple\n');
  await page.getByTestId('save-environment').click();
  await expect(page.getByTestId('env-notice')).toHaveText('Fix the marked fields.');
  await expect(page.locator('#python_requirements-error')).toContainText('pip options are not accepted');
  await expect(page.locator('#env-name')).toHaveValue(name);

  await page.locator('#env-python').fill('pandas<3\nmatplotlib\n');
  await page.getByTestId('save-environment').click();
  await expect(page).toHaveURL(new RegExp(`/admin/environments/${name}$`));
  // Built for real, or (the second project, a later run) found complete in the shared store.
  // Based on the default (the form's choice): its packages, then these.
  await expect(page.getByTestId('env-based-on')).toHaveText('default');
  // Its first line comes when pip starts, after a queue slot and the package index check:
  // over 10 s on the busy `make test` machine (CI32), so this wait is the build's, not a step's.
  await expect(page.getByTestId('build-log')).toContainText(
    /pip install numpy pandas<3 matplotlib requests|A complete build of this spec is in the store already/,
    { timeout: 120_000 },
  );
  // The page follows the build until it is ready.
  await expect(page.locator('h1 [data-testid=env-status]')).toHaveText('ready', { timeout: 360_000 });
  await expect(page.getByTestId('lock')).toContainText('pandas *');
  await expect(page.getByTestId('verification')).toContainText('local');
  await expect(page.getByTestId('verification')).not.toContainText('unusable');
  await page.screenshot({ path: testInfo.outputPath(`environment-${testInfo.project.name}.png`), fullPage: true });

  await page.getByTestId('test-environment').click();
  await expect(page.getByTestId('env-notice')).toContainText(`'${name}' imports cleanly`, { timeout: 120_000 });

  // The local provider mounts it.
  await page.goto('/admin/sandbox-settings?provider=local');
  await expectInteractive(page, javaScriptEnabled);
  await page.locator('#field-environment').selectOption(name);
  await page.getByTestId('save').click();
  await expect(page.getByTestId('save-notice')).toContainText('Saved (version');

  await page.locator('#trial-code').fill('import pandas as pd\ndef main():\n    return int(pd.DataFrame({"a": [1, 2]}).a.sum())\n');
  await page.locator('#trial-arguments').fill('{}');
  await page.getByTestId('run').click();
  await expect(page.getByTestId('trial-status')).toHaveAttribute('data-status', 'success', { timeout: 30_000 });
  await expect(page.getByTestId('trial-return')).toHaveText('3');

  // A figure still open when main() returns comes back as a PNG and shows in the panel.
  await page.locator('#trial-code').fill(
    'import matplotlib.pyplot as plt\ndef main():\n    plt.bar(["a", "b"], [1, 3])\n    plt.title("sales")\n    return "drawn"\n',
  );
  await page.getByTestId('run').click();
  await expect(page.getByTestId('trial-status')).toHaveAttribute('data-status', 'success', { timeout: 30_000 });
  const chart = page.getByTestId('artifact').locator('img');
  await expect(chart).toHaveAttribute('alt', 'figure-1.png');
  await expect(chart).toBeVisible();
  expect(await chart.evaluate((img) => img.naturalWidth)).toBeGreaterThan(100);
  await page.locator('#trial').screenshot({ path: testInfo.outputPath(`chart-${testInfo.project.name}.png`) });
});
