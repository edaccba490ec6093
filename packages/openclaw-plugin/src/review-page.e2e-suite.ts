import { execFile } from "node:child_process";
import { mkdir, readFile, stat, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { promisify } from "node:util";
import { type OpenClawGateway, type OpenClawHome, runOpenClaw } from "@gstack/openclaw-testbed";
import { type ScriptedResponder, scripted } from "@gstack/scripted-model";
import puppeteer, { type Browser, type Page } from "puppeteer-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadBudget } from "../../../vitest.load-budget";
import { DISPATCH_MARKER, newestUserText, openclawAgentResponder, TOOL_MARKER } from "./openclaw-scripts";
import {
  bindRecordingPerson,
  dispatchFromChat,
  type GstackWorld,
  planThenExecuteScript,
  pluginPackageDir,
  runCodingDaemonUntilDone,
  startCodingDaemon,
  waitFor,
} from "./openclaw-world";
import { recordedMessages, recordedMessagesFile, type SharedGateway } from "./real-gateway-world";
import { signCapability } from "./review/capability";

const run = promisify(execFile);

/** Debian's browser, installed by .ci/run; the tests never download one. */
const CHROMIUM = "/usr/bin/chromium";
/** Screenshots kept beside the test log. */
const SHOTS = join(pluginPackageDir, ".logs", "review-page");

let sentFile: string;
let browser: Browser;

// The report's turn gets NO_REPLY: what the person reads is the recorded message.
const respond: ScriptedResponder = (request) => {
  const fresh = newestUserText(request);
  if (fresh.includes(DISPATCH_MARKER) || fresh.includes(TOOL_MARKER)) return openclawAgentResponder(request);
  if (fresh.includes("(report key ") || fresh.includes("one more look")) return scripted.text("NO_REPLY");
  return openclawAgentResponder(request);
};
let world: GstackWorld;
let home: OpenClawHome;
let gateway: OpenClawGateway;

async function sentTo(person: string): Promise<string[]> {
  return (await recordedMessages(sentFile))
    .filter((message) => message.to === person)
    .map((message) => message.text);
}

const delivered = (slot: string) =>
  stat(join(home.stateDir, "gstack", "delivered", `${slot}.json`)).catch(() => undefined);

/** The review link a person's message carries. */
function linkIn(text: string): string {
  const link = /https?:\/\/\S+\/gstack\/review\/d\?c=[A-Za-z0-9_.-]+/.exec(text)?.[0];
  if (!link) throw new Error(`no review link in the message:\n${text}`);
  return link;
}

async function phone(): Promise<Page> {
  const page = await browser.newPage();
  await page.setViewport({ width: 375, height: 812, isMobile: true, hasTouch: true, deviceScaleFactor: 1 });
  return page;
}

/** Nothing scrolls sideways at phone width but the code blocks inside the page. */
async function expectNoSidewaysScroll(page: Page): Promise<void> {
  const width = (await page.evaluate("document.documentElement.scrollWidth")) as number;
  expect(width).toBeLessThanOrEqual(375);
}

async function shot(page: Page, name: string): Promise<void> {
  await page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });
}

async function tapAndWait(page: Page, action: string): Promise<void> {
  await Promise.all([
    page.waitForNavigation(),
    page.click(`form:has(input[name="do"][value="${action}"]) button`),
  ]);
}

const git = (...args: string[]) => run("git", ["-C", world.repo, ...args]).then((out) => out.stdout.trim());

/** The review page on a phone, reached from the person's messages on the shared gateway. */
export function reviewPageSuite(shared: SharedGateway): void {
  describe("the review page on a phone", () => {
    beforeAll(async () => {
      shared.respondWith(respond);
      ({ world, home, gateway } = shared.real);
      sentFile = recordedMessagesFile(shared.real.scratch);
      await mkdir(SHOTS, { recursive: true });
      browser = await puppeteer.launch({
        executablePath: CHROMIUM,
        headless: true,
        args: ["--no-sandbox", "--disable-gpu", "--no-first-run"],
      });
    }, 300_000);

    afterAll(async () => {
      await browser?.close();
    });

    it("from the plan's message: read the plan and approve it on the page; from the report's: read the diff and land it once, though tapped twice", async () => {
      const session = "agent:main:review-plan";
      await bindRecordingPerson(gateway, session, "person-plan");
      const dispatch = await dispatchFromChat(
        gateway,
        world,
        { task: "Add page.txt and commit it", project: "acme-widget", project_dir: world.repo, mode: "plan" },
        session,
      );
      const id = dispatch.id as string;
      const coding = await startCodingDaemon(
        world,
        planThenExecuteScript("page.txt", "PLAN-ON-PAGE", "SHIPPED-ON-PAGE"),
      );
      try {
        await waitFor(() => delivered(`${id}.awaiting-1`), 150_000, "the plan recorded as delivered");
        const [planMessage] = await sentTo("person-plan");
        const planLink = linkIn(planMessage ?? "");
        // The link is on the gateway's own address and port, and names no dispatch id in clear.
        expect(planLink.startsWith(`${gateway.url}/gstack/review/d?c=`)).toBe(true);
        expect(planMessage).toContain("Read the plan and answer: ");

        let page = await phone();
        const opened = await page.goto(planLink);
        expect(opened?.status()).toBe(200);
        expect(await page.$eval("#standing", (node) => node.textContent)).toBe("waiting for you");
        expect(await page.$eval("main", (node) => node.textContent)).toContain("PLAN-ON-PAGE");
        await expectNoSidewaysScroll(page);
        await shot(page, "1-plan");

        await tapAndWait(page, "approve");
        expect(await page.$eval("#flash", (node) => node.textContent)).toMatch(/approve/i);
        await shot(page, "2-approved");
        const audit = await readFile(world.layout.dispatch.audit, "utf8");
        expect(
          audit.split("\n").filter((line) => line.includes(id) && line.includes('"answered"')),
        ).toHaveLength(1);

        await waitFor(() => delivered(id), 180_000, "the final report recorded as delivered");
        const report = (await sentTo("person-plan"))[1] ?? "";
        expect(report).toContain("Read the change and land it: ");
        // The report's link, opened as a tap in the chat opens it: in a tab of its own.
        await page.close();
        page = await phone();
        await page.goto(linkIn(report));
        expect(await page.$eval("#standing", (node) => node.textContent)).toBe("ready to land");
        const main = (await page.$eval("main", (node) => node.textContent)) ?? "";
        expect(main).toContain("page.txt");
        expect(main).toContain("+planned and approved");
        expect(main).toContain("Add page.txt");
        await expectNoSidewaysScroll(page);
        await shot(page, "3-ready-to-land");
        await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "dark" }]);
        const background = await page.evaluate("getComputedStyle(document.body).backgroundColor");
        expect(background).toBe("rgb(17, 17, 17)");
        await shot(page, "3-ready-to-land-dark");
        await page.emulateMediaFeatures([{ name: "prefers-color-scheme", value: "light" }]);

        // A double tap: the same form sent twice at once lands once.
        const before = await git("rev-parse", "main");
        const answers = await page.evaluate(`(async () => {
      const form = document.querySelector('form:has(input[name="do"][value="land"])');
      const body = new URLSearchParams(new FormData(form));
      const send = () => fetch(form.getAttribute("action"), { method: "POST", body }).then((response) => response.status);
      return Promise.all([send(), send()]);
    })()`);
        expect(answers).toEqual([200, 200]);
        await page.reload();
        expect(await page.$eval("#standing", (node) => node.textContent)).toBe("landed");
        await shot(page, "4-landed");
        expect(await readFile(join(world.repo, "page.txt"), "utf8")).toBe("planned and approved\n");
        expect(await git("rev-parse", "main")).not.toBe(before);
        const landed = (await readFile(world.layout.dispatch.audit, "utf8"))
          .split("\n")
          .filter((line) => line.includes(id) && line.includes('"landed"'));
        expect(landed).toHaveLength(1);
        await page.close();
      } finally {
        await coding.stop();
      }
    }, 600_000);

    it("forged and expired links get 401 and nothing else; a conflicting land says why and changes nothing", async () => {
      const session = "agent:main:review-conflict";
      await bindRecordingPerson(gateway, session, "person-conflict");
      const dispatch = await dispatchFromChat(
        gateway,
        world,
        { task: "Rewrite the README", project: "acme-widget", project_dir: world.repo },
        session,
      );
      const id = dispatch.id as string;
      await runCodingDaemonUntilDone(
        world,
        [
          scripted.write("README.md", "# acme-widget, rewritten by the dispatch\n"),
          scripted.bash("git commit -am 'Rewrite the README'"),
          scripted.text("Rewrote it.\n## What shipped\n- README rewritten\n## Needs human judgment\n- none"),
        ],
        id,
      );
      await waitFor(() => delivered(id), 150_000, "the report recorded as delivered");
      const link = linkIn((await sentTo("person-conflict"))[0] ?? "");
      const page = await phone();

      // Forged: one character of the capability changed. Expired: signed with the real key, in the past.
      const last = link.at(-1) === "A" ? "B" : "A";
      const forged = await page.goto(`${link.slice(0, -1)}${last}`);
      expect(forged?.status()).toBe(401);
      expect(await forged?.text()).toBe("Unauthorized\n");
      const key = Buffer.from(
        (await readFile(join(home.stateDir, "gstack", "review.key"), "utf8")).trim(),
        "hex",
      );
      const expired = signCapability(key, {
        dispatchId: id,
        expires: Math.floor(Date.now() / 1000) - 60,
        scope: "dispatch",
      });
      const stale = await page.goto(`${gateway.url}/gstack/review/d?c=${expired}`);
      expect(stale?.status()).toBe(401);
      expect(await stale?.text()).toBe("Unauthorized\n");
      const bare = await page.goto(`${gateway.url}/gstack/review/d`);
      expect(bare?.status()).toBe(401);
      await shot(page, "5-forged");

      // The list, from the link `openclaw gstack-review` prints: this host's dispatches, the one
      // waiting to land first.
      const printed = await runOpenClaw(["gstack-review"], { home: home.home });
      expect(printed.code, printed.stderr).toBe(0);
      const listPath = /http:\/\/127\.0\.0\.1:\d+(\/gstack\/review\?c=[A-Za-z0-9_.-]+)/.exec(
        printed.stdout,
      )?.[1];
      expect(listPath, printed.stdout).toBeDefined();
      expect(printed.stdout).toContain("(opens for 7 days;");
      await page.goto(`${gateway.url}${listPath}`);
      const first = await page.$eval("main li", (node) => node.textContent ?? "");
      expect(first).toContain(id.slice(-8));
      expect(first).toContain("ready to land");
      await expectNoSidewaysScroll(page);
      await shot(page, "6-list");

      // Someone changes the README on main meanwhile: landing would conflict.
      await writeFile(join(world.repo, "README.md"), "# acme-widget, edited by hand\n");
      await git("commit", "-qam", "Edit the README by hand");
      const head = await git("rev-parse", "main");
      await page.goto(link);
      expect(await page.$eval("main", (node) => node.textContent)).toContain("rewritten by the dispatch");
      await tapAndWait(page, "land");
      const flash = (await page.$eval("#flash", (node) => node.textContent)) ?? "";
      expect(flash).toMatch(/conflicts with main in README\.md/);
      expect(flash).toMatch(/merge it yourself, or discard it/);
      expect(await page.$eval("#standing", (node) => node.textContent)).toBe("ready to land");
      await expectNoSidewaysScroll(page);
      await shot(page, "7-conflict");
      expect(await git("rev-parse", "main")).toBe(head);
      expect(await readFile(join(world.repo, "README.md"), "utf8")).toBe("# acme-widget, edited by hand\n");
      expect(await git("status", "--porcelain")).toBe("");
      await page.close();
    }, 600_000);

    it("while the agent runs, the page shows the live tail of its progress and follows it without a reload", async () => {
      const session = "agent:main:review-live";
      await bindRecordingPerson(gateway, session, "person-live");
      const dispatch = await dispatchFromChat(
        gateway,
        world,
        { task: "Run the tests twice", project: "acme-widget", project_dir: world.repo },
        session,
      );
      const id = dispatch.id as string;
      // The agent's test run waits for the test to let it go (a file it names appears), and says it
      // is waiting: the agent is held at a known step for as long as the test needs, with no sleep.
      const gates = join(shared.real.scratch, "live-gates");
      await mkdir(gates, { recursive: true });
      const waiter = `const fs = require("node:fs");
const name = process.argv[2];
fs.writeFileSync(${JSON.stringify(gates)} + "/waiting-" + name, "");
const check = () => (fs.existsSync(${JSON.stringify(gates)} + "/release-" + name) ? process.exit(0) : setTimeout(check, 50));
check();
`;
      const coding = await startCodingDaemon(world, [
        scripted.write(
          "package.json",
          JSON.stringify({ name: "live", private: true, scripts: { test: "node gate.cjs" } }),
        ),
        scripted.write("gate.cjs", waiter),
        scripted.toolUse(
          "Bash",
          { command: "npm test -- one", description: "Run the tests" },
          { text: "LIVE-STEP-ONE" },
        ),
        scripted.toolUse(
          "Bash",
          { command: "npm test -- two", description: "Run the tests again" },
          { text: "LIVE-STEP-TWO" },
        ),
        scripted.text("Ran them twice.\n## What shipped\n- nothing\n## Needs human judgment\n- none"),
      ]);
      const waiting = (name: string) => stat(join(gates, `waiting-${name}`)).catch(() => undefined);
      const release = (name: string) => writeFile(join(gates, `release-${name}`), "");
      try {
        await waitFor(() => waiting("one"), 150_000, "the agent's first test run");
        // The running page is opened from the list `openclaw gstack-review` prints, as a person would.
        const printed = await runOpenClaw(["gstack-review", "--dispatch", id], { home: home.home });
        expect(printed.code, printed.stderr).toBe(0);
        const link = /http:\/\/\S+\/gstack\/review\/d\?c=[A-Za-z0-9_.-]+/.exec(printed.stdout)?.[0] ?? "";
        const page = await phone();
        await page.goto(link);
        expect(await page.$eval("#standing", (node) => node.textContent)).toBe("running");
        expect(await page.$eval("#tail-text", (node) => node.textContent)).toContain("LIVE-STEP-ONE");
        expect(await page.$eval("#tail-line", (node) => node.textContent)).toContain("npm test -- one");
        await expectNoSidewaysScroll(page);
        await shot(page, "8-running");
        // A mark only this load of the page carries: a reload would lose it.
        await page.evaluate("window.sameLoad = true");

        await release("one");
        await waitFor(() => waiting("two"), 120_000, "the agent's second test run");
        await page.waitForFunction(
          `document.getElementById("tail-text")?.textContent.includes("LIVE-STEP-TWO") && document.getElementById("tail-line")?.textContent.includes("npm test -- two")`,
          { timeout: loadBudget(60_000), polling: 200 },
        );
        expect(await page.evaluate("window.sameLoad")).toBe(true);
        expect(await page.$eval("#standing", (node) => node.textContent)).toBe("running");
        await shot(page, "9-running-later");

        // When the run ends the page loads itself again, now with what the agent left.
        const reloaded = page.waitForNavigation({ timeout: loadBudget(180_000) });
        await release("two");
        await reloaded;
        expect(await page.$eval("#standing", (node) => node.textContent)).not.toBe("running");
        expect(await page.evaluate("window.sameLoad")).toBeUndefined();
        expect(await page.$("#tail-text")).toBeNull();
        const tests = (await page.$eval("#tests", (node) => node.textContent)) ?? "";
        expect(tests).toContain("npm test -- one");
        expect(tests).toContain("npm test -- two");
        expect(tests).toMatch(/passed/);
        await shot(page, "10-run-ended");
        await page.close();
      } finally {
        await release("one");
        await release("two");
        await coding.stop();
      }
    }, 600_000);
  });
}
