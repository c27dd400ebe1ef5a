// The remote providers end to end, each pointed at its contract fake (scripts/e2e.sh starts
// them and passes their addresses in E2E_FAKES): a wrong secret makes Test connection fail with
// a message that says so, the right one passes (health check and the test script run through
// the fake), and a save keeps the secret without ever showing it again.
import { test, expect } from '@playwright/test';
import { expectInteractive, signIn } from './helpers.mjs';

const fakes = JSON.parse(process.env.E2E_FAKES ?? '{}');

const providers = [
  {
    kind: 'self_managed',
    fields: { endpoint: fakes.executor_manager },
    secret: ['api_token', fakes.executor_token],
    refused: 'refused the API token',
  },
  {
    kind: 'e2b',
    fields: { api_url: fakes.e2b, sandbox_url: fakes.e2b },
    secret: ['api_key', fakes.e2b_api_key],
    refused: 'E2B refused the API key',
  },
  {
    kind: 'aliyun_codeinterpreter',
    fields: {
      access_key_id: fakes.agentrun_access_key_id,
      account_id: fakes.agentrun_account_id,
      endpoint: fakes.agentrun,
      control_endpoint: fakes.agentrun,
    },
    secret: ['access_key_secret', fakes.agentrun_secret],
    refused: 'AgentRun refused the AccessKey',
  },
  {
    kind: 'tenki',
    fields: { base_url: fakes.tenki },
    secret: ['api_key', fakes.tenki_api_key],
    // Tenki's keys start with tk_ (checked before anything is sent).
    wrong: 'tk_wrong',
    refused: 'Tenki refused the API key',
    // The form is the same generic one as the rows above, which run without JavaScript too.
    jsOnly: true,
  },
  {
    kind: 'ucloud_agent_sandbox',
    fields: { api_url: fakes.ucloud, sandbox_url: fakes.ucloud },
    secret: ['api_key', fakes.ucloud_api_key],
    refused: 'UCloud Agent Sandbox refused the API key',
    jsOnly: true,
  },
  {
    kind: 'kubernetes',
    // A bearer token for the fake API server; its pods' runtime listens on a port of its own.
    selects: { credentials: 'token' },
    fields: { api_url: fakes.kubernetes, runtime_port: String(fakes.kubernetes_runtime_port) },
    secret: ['token', fakes.kubernetes_token],
    refused: 'did not accept the credentials',
    jsOnly: true,
  },
];

test.beforeEach(async ({ page }) => {
  expect(fakes.executor_manager, 'scripts/e2e.sh passes the fakes in E2E_FAKES').toBeTruthy();
  await page.goto('/login');
  await signIn(page);
  await expect(page.getByTestId('admin-name')).toBeVisible();
});

for (const provider of providers) {
  test(`an admin points ${provider.kind} at its service; a wrong secret fails clearly, the right one passes`, async ({ page, javaScriptEnabled }, testInfo) => {
    test.skip(provider.jsOnly && !javaScriptEnabled, 'its form is covered without JavaScript by the rows above');
    const [secretKey, secret] = provider.secret;
    const fill = async (secretValue) => {
      for (const [key, value] of Object.entries(provider.selects ?? {})) {
        await page.locator(`#field-${key}`).selectOption(value);
      }
      for (const [key, value] of Object.entries(provider.fields)) {
        await page.locator(`#field-${key}`).fill(value);
      }
      await page.locator(`#field-${secretKey}`).fill(secretValue);
    };
    await page.goto('/admin/sandbox-settings');
    await expectInteractive(page, javaScriptEnabled);
    await page.getByTestId(`provider-${provider.kind}`).click();
    await expect(page).toHaveURL(new RegExp(`provider=${provider.kind}`));
    await expectInteractive(page, javaScriptEnabled);
    await expect(page.locator(`#field-${secretKey}`)).toHaveAttribute('type', 'password');

    const wrong = provider.wrong ?? `wrong-${secret}`;
    await fill(wrong);
    await page.getByTestId('test-connection').click();
    await expect(page.getByTestId('connection-report')).toContainText('Connection test failed', { timeout: 30_000 });
    await expect(page.getByTestId('connection-message')).toContainText(provider.refused);
    await expect(page.getByTestId('connection-report')).not.toContainText(wrong);
    await expectInteractive(page, javaScriptEnabled);
    await page.getByTestId('close-report').click();
    await expect(page.getByTestId('connection-report')).toBeHidden();

    await expectInteractive(page, javaScriptEnabled);
    await fill(secret);
    await page.getByTestId('test-connection').click();
    await expect(page.getByTestId('connection-report')).toContainText('Connection test passed', { timeout: 60_000 });
    await expect(page.getByTestId('connection-report')).toContainText('sandbox-console test connection');
    await page.screenshot({ path: testInfo.outputPath(`${provider.kind}-${testInfo.project.name}.png`), fullPage: true });
    await expectInteractive(page, javaScriptEnabled);
    await page.getByTestId('close-report').click();
    await expect(page.getByTestId('connection-report')).toBeHidden();
    if (javaScriptEnabled) {
      // Hydrated, closing the report keeps what was typed (secrets excepted: never sent back).
      const [key, value] = Object.entries(provider.fields)[0];
      await expect(page.locator(`#field-${key}`)).toHaveValue(value);
    }

    // Saved without making it active: the secret is kept (encrypted) and never shown again.
    await expectInteractive(page, javaScriptEnabled);
    await fill(secret);
    await page.getByTestId('save').click();
    await expect(page.getByTestId('save-notice')).toContainText('Saved (version');
    await page.reload();
    await expect(page.locator(`#field-${secretKey}`)).toHaveValue('');
    expect(await page.content()).not.toContain(secret);
    await expect(page.getByTestId('provider-local')).toContainText('Active');
  });
}
