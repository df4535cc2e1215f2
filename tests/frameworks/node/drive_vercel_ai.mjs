// The Vercel AI SDK (`ai` on npm) through the shared scenario, with its own OpenTelemetry telemetry.
//
// Modes (`--mode`), one cell each:
// - `legacy` (cell `vercel-ai-legacy`): AI SDK 6 (`ai-v6`, an npm alias of ai@6) with
//   `experimental_telemetry: { isEnabled: true, recordInputs: true, recordOutputs: true }` and nothing
//   else: the SDK's built-in `ai.*` spans (`ai.generateText`, `ai.generateText.doGenerate`,
//   `ai.toolCall`), which AI SDK 3 to 6 emit by default.
// - `legacy-v7` (cell `vercel-ai-legacy-v7`): AI SDK 7 (`ai`) with @ai-sdk/otel's
//   `LegacyOpenTelemetry` registered (`registerTelemetry(new LegacyOpenTelemetry())`) and
//   `telemetry: { isEnabled: true, recordInputs: true, recordOutputs: true }`: the same `ai.*` span
//   names, but `ai.toolCall` nests under `ai.generateText.doGenerate`, `ai.response.toolCalls` holds
//   each call's `input` as an object (a JSON string in AI SDK 6), and the `ai.generateText` root lists
//   every call of the run again.
// - `genai` (cell `vercel-ai-genai`): AI SDK 7 with @ai-sdk/otel's `OpenTelemetry` registered
//   (`registerTelemetry(new OpenTelemetry())`) and the same `telemetry` option: the GenAI semantic
//   conventions' spans (`invoke_agent <model>`, `step <n>`, `chat <model>`, `execute_tool <tool>`).
//
// `--sequential` (cell `<cell>-sequential`) has the model ask for the two weather calls in two turns
// instead of one, so that no single model call holds every call of the run (the `invoke_agent` root's
// `gen_ai.output.messages` still does).
//
// The model is the SDK's own test model (`MockLanguageModelV3` from `ai-v6/test`, `MockLanguageModelV4`
// from `ai/test`) playing a script: both weather calls in one step (the SDK runs them in parallel), then
// text; the booking call, whose tool throws, then text. `generateText` runs the tool loop with
// `stopWhen: stepCountIs(5)`. Nothing leaves the machine but OTLP to `--endpoint`.
//
// Run from a folder where tests/frameworks/node/package.json is installed (`npm ci`) beside copies of
// this file and harness.mjs:
//     node drive_vercel_ai.mjs --mode legacy --endpoint http://127.0.0.1:4318/v1/traces \
//         --record tests/frameworks/fixtures/vercel-ai-legacy

import { z } from 'zod';

import { Harness, SCENARIO, parseArguments } from './harness.mjs';

const MODES = {
  legacy: { cell: 'vercel-ai-legacy', packages: ['ai-v6'] },
  'legacy-v7': { cell: 'vercel-ai-legacy-v7', packages: ['ai', '@ai-sdk/otel'] },
  genai: { cell: 'vercel-ai-genai', packages: ['ai', '@ai-sdk/otel'] },
};

const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** The model's turns for one task: its tool calls in one response (or one each), then its answer. */
function turns(calls, answer, sequential) {
  const requests = sequential ? calls.map(call => [call]) : [calls];
  return [
    ...requests.map(asked => ({
      content: asked.map(([toolCallId, toolName, input]) => ({
        type: 'tool-call',
        toolCallId,
        toolName,
        input: JSON.stringify(input),
      })),
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage: USAGE,
      warnings: [],
    })),
    {
      content: [{ type: 'text', text: answer }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: USAGE,
      warnings: [],
    },
  ];
}

/** The AI SDK of the mode, and the telemetry option that turns its spans on. */
async function sdk(mode) {
  const telemetry = { isEnabled: true, recordInputs: true, recordOutputs: true };
  if (mode === 'legacy') {
    const ai = await import('ai-v6');
    const { MockLanguageModelV3 } = await import('ai-v6/test');
    return { ai, Model: MockLanguageModelV3, options: { experimental_telemetry: telemetry } };
  }
  const ai = await import('ai');
  const { MockLanguageModelV4 } = await import('ai/test');
  const { LegacyOpenTelemetry, OpenTelemetry } = await import('@ai-sdk/otel');
  ai.registerTelemetry(mode === 'genai' ? new OpenTelemetry() : new LegacyOpenTelemetry());
  return { ai, Model: MockLanguageModelV4, options: { telemetry } };
}

async function main() {
  const args = parseArguments(
    'The Vercel AI SDK through the shared scenario, with its own OpenTelemetry telemetry.',
    { mode: { type: 'string', default: 'legacy' }, sequential: { type: 'boolean', default: false } },
  );
  const mode = MODES[args.mode];
  if (mode === undefined) throw new Error(`--mode: one of ${Object.keys(MODES).join(', ')}`);
  const cell = args.sequential ? `${mode.cell}-sequential` : mode.cell;
  const harness = new Harness(cell, mode.packages, args.endpoint, args.record);
  const { ai, Model, options } = await sdk(args.mode);

  const tools = {
    get_weather: ai.tool({
      description: 'The current weather in a city.',
      inputSchema: z.object({ city: z.string() }),
      execute: async input => harness.getWeather(input),
    }),
    book_flight: ai.tool({
      description: 'Book a flight for some passengers.',
      inputSchema: z.object({ destination: z.string(), passengers: z.number().int() }),
      execute: async input => harness.bookFlight(input),
    }),
  };
  for (const [task, prompt, calls, answer] of SCENARIO) {
    const model = new Model({ doGenerate: turns(calls, answer, args.sequential) });
    await harness.invocation(task, async () => {
      await ai.generateText({ model, tools, prompt, stopWhen: ai.stepCountIs(5), ...options });
    });
  }
  await harness.finish({ requests: true, parallel_calls: !args.sequential, runtime: `node ${process.version}` });
}

await main();
