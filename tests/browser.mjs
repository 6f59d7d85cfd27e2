// The one browser every Chromium test drives: Debian's chromium through
// playwright-core, headless, kept from reaching for anything off this
// machine. Screenshots go to ARTIFACTS, which launching makes.

import { mkdirSync } from "node:fs";

import { chromium } from "playwright-core";

import { ARTIFACTS } from "./edge/harness.mjs";

const CHROMIUM = process.env.CHROMIUM || "/usr/bin/chromium";
const CHROMIUM_ARGS = [
  "--no-sandbox",
  "--disable-gpu",
  "--disable-quic",
  "--no-first-run",
  "--disable-background-networking",
  "--disable-component-update",
  "--disable-sync",
  "--host-resolver-rules=MAP * ~NOTFOUND , EXCLUDE 127.0.0.1",
];

/** Starts the browser (and makes the screenshot folder). */
export async function launchBrowser() {
  mkdirSync(ARTIFACTS, { recursive: true });
  return chromium.launch({ executablePath: CHROMIUM, args: CHROMIUM_ARGS, headless: true });
}

/** Closes `browser` if one was started; never throws, for `after` hooks. */
export async function closeBrowser(browser) {
  if (browser) await browser.close().catch(() => {});
}
