// Takes the README's screenshots of the playground against a local stack:
//   node www/dev/screenshot.mjs  →  www/screenshot.png (base vs fine-tuned),
//                                   www/screenshot-finetune.png (the loss chart)
// A 20-step fine-tune on the example set, then the base model and the fine-tuned one side
// by side on a training prompt, with its reference answer scored under both.
import path from 'node:path';
import { startStack } from './stack.mjs';
import { root } from './static.mjs';
import { launchChromium } from '../../tests/js/run-browser.mjs';

const seed = process.env.SHOT_SEED ?? '4';
const stack = await startStack({});
const browser = await launchChromium();
try {
  const page = await browser.context.newPage();
  page.setDefaultTimeout(60_000);
  await page.setViewportSize({ width: 1200, height: 900 });
  await page.goto(`${stack.siteURL}/?model=Qwen/Qwen3-4B-Instruct-2507`);
  await page.waitForSelector('body[data-connected="true"]');
  await page.fill('#seed', seed);
  await page.fill('#num-samples', '2');
  await page.fill('#max-tokens', '24');
  await page.fill('#temperature', '0.8');
  await page.click('#tab-finetune');
  await page.waitForFunction(() => document.querySelector('#ft-parse').dataset.examples === '6');
  await page.fill('#ft-epochs', '20');
  await page.fill('#ft-lr', '0.1');
  await page.fill('#ft-name', 'pirate');
  await page.click('#ft-run');
  await page.waitForSelector('#ft-status[data-state="done"]');
  // From the training parameters to the chart's caption (page coordinates).
  const box = await page.evaluate(() => {
    const from = document.querySelector('#ft-form fieldset.params').getBoundingClientRect();
    const to = document.querySelector('#panel-finetune figure').getBoundingClientRect();
    return { x: from.left - 12, y: from.top + window.scrollY - 12, width: from.width + 24, height: to.bottom - from.top + 24 };
  });
  await page.screenshot({ path: path.join(root, 'www/screenshot-finetune.png'), fullPage: true, clip: box });
  await page.fill('#ft-try-prompt', 'What is the capital of France?');
  await page.click('#ft-compare');
  await page.waitForFunction(() => document.querySelector('#results').dataset.models === '2' && document.querySelector('#sample-status').dataset.state === 'done');
  await page.evaluate(() => {
    document.querySelector('#rendered').open = false;
  });
  await page.locator('#results .col').nth(1).locator('.answer-scores .tok').nth(8).hover();
  await page.waitForSelector('#tooltip:not([hidden])');
  await page.screenshot({ path: path.join(root, 'www/screenshot.png'), fullPage: true });
  console.log('wrote www/screenshot.png and www/screenshot-finetune.png');
} finally {
  await browser.close();
  await stack.stop();
}
