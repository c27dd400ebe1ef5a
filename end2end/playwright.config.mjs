// Browser tests run in Debian's Chromium (this machine cannot download Playwright's own
// browser builds), in E2E_WORKERS workers, each against a server of its own that
// scripts/e2e.sh starts: BASE_URLS lists them, in worker order (BASE_URL: one for all).
import { defineConfig } from '@playwright/test';

const chromium = {
  executablePath: '/usr/bin/chromium',
  args: [
    '--headless',
    '--no-sandbox',
    '--disable-gpu',
    '--disable-quic',
    '--no-first-run',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-sync',
  ],
};

const servers = (process.env.BASE_URLS ?? process.env.BASE_URL ?? 'http://127.0.0.1:3000').split(' ');
// Set in each worker process (0 .. workers-1; a restarted worker keeps its slot).
const slot = Number(process.env.TEST_PARALLEL_INDEX ?? 0);

export default defineConfig({
  testDir: './tests',
  outputDir: './test-results',
  // Two workers share two cores with two consoles, and in `make test` with the Rust suite and
  // a bystander console beside them: a walk of 20-40 steps took up to 59 s there (CI27-CI30)
  // and ran out of a 60 s limit in CI29 and in a stop's CI. A hang is caught by each step's own
  // 10 s limit (expect), which stays; the walk as a whole gets 120 s.
  timeout: 120_000,
  expect: { timeout: 10_000 },
  workers: servers.length,
  retries: 0,
  forbidOnly: !!process.env.CI,
  reporter: [['list']],
  use: {
    baseURL: servers[slot % servers.length],
    launchOptions: chromium,
    screenshot: 'only-on-failure',
    trace: 'retain-on-failure',
  },
  projects: [
    { name: 'js', use: { javaScriptEnabled: true } },
    { name: 'nojs', use: { javaScriptEnabled: false } },
  ],
});
