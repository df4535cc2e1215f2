// Mastra (`@mastra/core`) through the shared scenario, with its own tracing exported over OpenTelemetry
// by `@mastra/otel-exporter`, cell `mastra-otel`.
//
// Mastra's tracing is its own (`@mastra/observability`): an agent run, each model step and each tool
// call are Mastra spans, and an exporter sends them on. `OtelExporter` turns them into OpenTelemetry
// spans with GenAI semantic-convention attributes (`gen_ai.operation.name`, `gen_ai.tool.name`,
// `gen_ai.tool.call.arguments`, …) and exports them over OTLP. It is set up as Mastra's docs say:
// `new Mastra({ agents, observability: new Observability({ configs: { otel: { serviceName, exporters:
// [new OtelExporter({ provider: { custom: { endpoint, protocol: 'http/json' } } })] } } }) })`; here the
// exporter is given the harness's recording exporter (`OtelExporter({ exporter })`, the same OTLP/HTTP
// JSON exporter the `custom` provider loads) so that what it sends is recorded too.
//
// Mastra opens a trace of its own; a run joins the caller's OpenTelemetry trace when its ids are passed
// as `tracingOptions: { traceId, parentSpanId }` (Mastra exports the parent as the root's parent), which
// is how each invocation sits under the harness's `rollout` span naming its task.
//
// The model is the AI SDK's test model (`MockLanguageModelV3` from `ai-v6/test`, a LanguageModelV3,
// which Mastra accepts) playing a script (its `doGenerate` answers, in order): both weather calls in one step (Mastra runs them
// concurrently), then text; the booking call, whose tool throws, then text. Nothing leaves the machine
// but OTLP to `--endpoint`.
//
// Run from a folder where tests/frameworks/node/package.json is installed (`npm ci`) beside copies of
// this file and harness.mjs:
//     node drive_mastra.mjs --endpoint http://127.0.0.1:4318/v1/traces \
//         --record tests/frameworks/fixtures/mastra-otel

import path from 'node:path';

import { trace } from '@opentelemetry/api';
import { Agent } from '@mastra/core/agent';
import { Mastra } from '@mastra/core/mastra';
import { createTool } from '@mastra/core/tools';
import { Observability } from '@mastra/observability';
import { OtelExporter } from '@mastra/otel-exporter';
import { MockLanguageModelV3 } from 'ai-v6/test';
import { z } from 'zod';

import { Harness, RecordingExporter, SCENARIO, parseArguments } from './harness.mjs';

const CELL = 'mastra-otel';
const PACKAGES = ['@mastra/core', '@mastra/observability', '@mastra/otel-exporter'];

const USAGE = {
  inputTokens: { total: 10, noCache: 10, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 5, text: 5, reasoning: undefined },
};

/** The model's turns for one task: its tool calls in one response, then its answer. */
function turns(calls, answer) {
  return [
    {
      content: calls.map(([toolCallId, toolName, input]) => ({
        type: 'tool-call',
        toolCallId,
        toolName,
        input: JSON.stringify(input),
      })),
      finishReason: { unified: 'tool-calls', raw: 'tool_calls' },
      usage: USAGE,
      warnings: [],
    },
    {
      content: [{ type: 'text', text: answer }],
      finishReason: { unified: 'stop', raw: 'stop' },
      usage: USAGE,
      warnings: [],
    },
  ];
}

async function main() {
  const args = parseArguments("Mastra through the shared scenario, with its OpenTelemetry exporter.");
  const harness = new Harness(CELL, PACKAGES, args.endpoint, args.record);
  const recording = args.record ? path.join(args.record, 'otlp.jsonl') : null;
  const exporter = new RecordingExporter(args.endpoint, recording);

  const tools = {
    get_weather: createTool({
      id: 'get_weather',
      description: 'The current weather in a city.',
      inputSchema: z.object({ city: z.string() }),
      execute: async input => harness.getWeather(input),
    }),
    book_flight: createTool({
      id: 'book_flight',
      description: 'Book a flight for some passengers.',
      inputSchema: z.object({ destination: z.string(), passengers: z.number().int() }),
      execute: async input => harness.bookFlight(input),
    }),
  };
  const script = SCENARIO.flatMap(([, , calls, answer]) => turns(calls, answer));
  const agent = new Agent({
    id: 'travel_agent',
    name: 'travel_agent',
    instructions: 'Help travellers.',
    model: new MockLanguageModelV3({ doGenerate: script }),
    tools,
  });
  const mastra = new Mastra({
    agents: { travel_agent: agent },
    logger: false,
    observability: new Observability({
      configs: {
        otel: {
          serviceName: CELL,
          exporters: [
            new OtelExporter({
              provider: { custom: { endpoint: args.endpoint, protocol: 'http/json' } },
              exporter, // the harness's recording twin of the exporter the provider would load
              signals: { logs: false }, // tracescore reads traces
            }),
          ],
        },
      },
    }),
  });
  for (const [task, prompt] of SCENARIO) {
    await harness.invocation(task, async () => {
      const rollout = trace.getActiveSpan().spanContext();
      const tracingOptions = { traceId: rollout.traceId, parentSpanId: rollout.spanId };
      await mastra.getAgent('travel_agent').generate(prompt, { maxSteps: 5, tracingOptions });
    });
  }
  await mastra.shutdown();
  await harness.finish({ requests: true, parallel_calls: true, runtime: `node ${process.version}` });
}

await main();
