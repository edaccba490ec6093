import { afterEach, describe, expect, it } from "vitest";
import { type ScriptedModel, startScriptedModel } from "./scripted-model-server";
import { scripted } from "./scripted-turn";

let model: ScriptedModel | undefined;
afterEach(async () => {
  await model?.close();
  model = undefined;
});

const tools = [{ name: "Write", input_schema: { type: "object" } }];

// biome-ignore lint/suspicious/noExplicitAny: answers are inspected loosely
type Loose = any;

async function json(response: Response): Promise<Loose> {
  return response.json();
}

function post(url: string, body: unknown, path = "/v1/messages?beta=true") {
  return fetch(`${url}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

function eventsOf(text: string) {
  return text
    .split("\n\n")
    .filter(Boolean)
    .map((record) => {
      const [eventLine, dataLine] = record.split("\n");
      return {
        event: eventLine!.slice("event: ".length),
        data: JSON.parse(dataLine!.slice("data: ".length)),
      };
    });
}

describe("startScriptedModel", () => {
  it("binds to loopback on an ephemeral port and answers the probe", async () => {
    model = await startScriptedModel();
    expect(model.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(model.port).toBeGreaterThan(0);
    const response = await fetch(model.url, { method: "HEAD" });
    expect(response.status).toBe(200);
    expect(model.requests[0]!.kind).toBe("probe");
  });

  it("plays the script in order for agent requests and records them", async () => {
    model = await startScriptedModel({
      script: [scripted.write("a.txt", "A"), scripted.text("done")],
    });
    const first = await post(model.url, {
      stream: true,
      tools,
      messages: [{ role: "user", content: "task one" }],
    });
    expect(first.headers.get("content-type")).toBe("text/event-stream");
    const firstEvents = eventsOf(await first.text());
    expect(firstEvents[1]!.data.content_block).toMatchObject({ type: "tool_use", name: "Write" });
    const second = await post(model.url, {
      stream: true,
      tools,
      messages: [{ role: "user", content: "task one" }],
    });
    const secondEvents = eventsOf(await second.text());
    expect(secondEvents.at(-2)!.data.delta.stop_reason).toBe("end_turn");
    const third = await post(model.url, { stream: false, tools, messages: [{ role: "user", content: "x" }] });
    const body = await json(third);
    expect(body.content[0].text).toContain("script is finished");
    expect(model.agentRequests().map((request) => request.firstUserText)).toEqual([
      "task one",
      "task one",
      "x",
    ]);
  });

  it("answers side requests without consuming the script", async () => {
    model = await startScriptedModel({ script: [scripted.text("main")], sideText: "a title" });
    const side = await post(model.url, { stream: false, messages: [{ role: "user", content: "title?" }] });
    expect((await json(side)).content[0].text).toBe("a title");
    const main = await post(model.url, { stream: false, tools, messages: [{ role: "user", content: "go" }] });
    expect((await json(main)).content[0].text).toBe("main");
    const count = await post(
      model.url,
      { messages: [{ role: "user", content: "12345678" }] },
      "/v1/messages/count_tokens",
    );
    expect(await json(count)).toEqual({ input_tokens: 2 });
  });

  it("serves errors with the Messages API body, repeated `times` requests", async () => {
    model = await startScriptedModel({ script: [scripted.rateLimited(2), scripted.text("recovered")] });
    for (let attempt = 0; attempt < 2; attempt += 1) {
      const response = await post(model.url, { tools, messages: [] });
      expect(response.status).toBe(429);
      expect(response.headers.get("retry-after")).toBe("0");
      expect((await json(response)).error.type).toBe("rate_limit_error");
    }
    const after = await post(model.url, { tools, messages: [] });
    expect((await json(after)).content[0].text).toBe("recovered");
  });

  it("chooses answers from the request when a responder is given", async () => {
    model = await startScriptedModel({
      respond: (request) =>
        request.promptText.includes("## Learnings") ? scripted.promptTooLong() : scripted.text("fits"),
    });
    const withLearnings = await post(model.url, {
      tools,
      messages: [{ role: "user", content: [{ type: "text", text: "task\n## Learnings\n- x" }] }],
    });
    expect(withLearnings.status).toBe(400);
    expect((await json(withLearnings)).error.message).toContain("prompt is too long");
    const without = await post(model.url, { tools, messages: [{ role: "user", content: "task" }] });
    expect((await json(without)).content[0].text).toBe("fits");
  });

  it("holds a hanging request open until close drops it", async () => {
    model = await startScriptedModel({ script: [scripted.hang()] });
    const pending = post(model.url, { stream: true, tools, messages: [] }).then(
      (response) => response.text(),
      (error: unknown) => error,
    );
    while (model.hangingCount() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await model.close();
    const outcome = await pending;
    expect(outcome).toBeInstanceOf(Error);
    model = undefined;
  });

  it("holds a request with holdUntil, counted as hanging, and answers it once released", async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    model = await startScriptedModel({ script: [scripted.text("after the hold", { holdUntil: released })] });
    let answered = false;
    const pending = post(model.url, { tools, messages: [{ role: "user", content: "task" }] }).then(
      async (response) => {
        answered = true;
        return json(response);
      },
    );
    while (model.hangingCount() === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(answered).toBe(false);
    release();
    expect((await pending).content[0].text).toBe("after the hold");
    expect(model.hangingCount()).toBe(0);
  });

  it("rejects unknown paths with a 404 error body", async () => {
    model = await startScriptedModel();
    const response = await fetch(`${model.url}/v1/nothing`);
    expect(response.status).toBe(404);
    expect((await json(response)).error.type).toBe("not_found_error");
  });

  it("streams a slow answer in separate pieces that still add up to the scripted text", async () => {
    const text = "a slow answer, delivered piece by piece";
    model = await startScriptedModel({ script: [scripted.text(text, { chunkDelayMs: 10 })], chunkSize: 8 });
    const response = await post(model.url, { stream: true, tools, messages: [] });
    const reader = response.body!.getReader();
    const decoder = new TextDecoder();
    let reads = 0;
    let body = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      reads += 1;
      body += decoder.decode(value, { stream: true });
    }
    expect(reads).toBeGreaterThan(1);
    const said = eventsOf(body)
      .filter((event) => event.event === "content_block_delta")
      .map((event) => event.data.delta.text)
      .join("");
    expect(said).toBe(text);
  });

  it("answers the Responses API with output items, a function call for a tool use", async () => {
    model = await startScriptedModel({
      script: [scripted.toolUse("exec_command", { cmd: "ls" }, { text: "Looking." })],
    });
    const response = await post(
      model.url,
      {
        stream: true,
        tools: [{ type: "function", name: "exec_command" }],
        input: [{ role: "user", content: [{ type: "input_text", text: "list" }] }],
      },
      "/v1/responses",
    );
    const events = eventsOf(await response.text());
    expect(events[0]!.event).toBe("response.created");
    const completed = events.at(-1)!;
    expect(completed.event).toBe("response.completed");
    expect(completed.data.response.output.map((item: { type: string }) => item.type)).toEqual([
      "message",
      "function_call",
    ]);
    expect(JSON.parse(completed.data.response.output[1].arguments)).toEqual({ cmd: "ls" });
    expect(model.agentRequests()[0]).toMatchObject({ api: "openai-responses", firstUserText: "list" });
    const failing = await startScriptedModel({ script: [scripted.rateLimited()] });
    try {
      const refused = await post(failing.url, { tools: [{ type: "function" }], input: "x" }, "/v1/responses");
      expect(refused.status).toBe(429);
      expect((await json(refused)).error.type).toBe("rate_limit_error");
    } finally {
      await failing.close();
    }
  });
});
