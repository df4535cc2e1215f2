// What every Node framework driver shares: the JavaScript twin of tests/frameworks/drivers/_harness.py.
//
// A driver exports over real OTLP/HTTP (JSON, as @opentelemetry/exporter-trace-otlp-http sends it) to
// `--endpoint` and, with `--record DIR`, also writes:
//
// - `DIR/otlp.jsonl`: every export request exactly as sent, one OTLP/JSON request per line (the
//   exporter's own serializer, @opentelemetry/otlp-transformer's JsonTraceSerializer: lowerCamelCase
//   keys, hex ids, enums as integers, times as decimal strings);
// - `DIR/calls.json`: the ground truth, in exactly the shape the Python harness writes: per invocation
//   of the agent, its task and every call its tools really received (arguments as the tool got them,
//   and the message of what it threw), plus the versions of the packages that produced the spans.
//
// The scenario is the Python harness's, constant for constant, so one set of specs and one set of checks
// (tests/frameworks/_cells.py) judge every cell, whatever its language:
//
// - task `weather`: `get_weather(city)` (one string parameter) twice, for Paris and Tokyo, in one model
//   turn (parallel calls); then a final answer.
// - task `booking`: `book_flight(destination, passengers)` throws `Error("no seats left to Oslo")`; the
//   model then answers without it.
//
// A `-multiagent-` cell plays the delegation scenario instead (`DELEGATION_*`, one invocation), as the
// Python harness does: the leader agent `coordinator` hands the question to the member agent
// `weather_agent` through the framework's own facility; the member calls `get_weather(city="Paris")`
// and answers; the leader then answers. The ledger records which agent made each call (`agent`).
//
// The dependencies are tests/frameworks/node/package.json's, installed with `npm ci` next to a copy of
// this file and the driver (Node resolves imports from the importing file's folder up, so the .mjs
// files run from the folder that holds node_modules).

import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

import { context, trace } from '@opentelemetry/api';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { defaultResource, resourceFromAttributes } from '@opentelemetry/resources';
import { BatchSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

export const WEATHER = { Paris: '18°C, light rain', Tokyo: '24°C, clear' };
export const NO_SEATS = 'no seats left to Oslo';
export const WEATHER_PROMPT = 'What is the weather in Paris and in Tokyo?';
export const BOOKING_PROMPT = 'Book a flight to Oslo for two people.';
export const WEATHER_ANSWER = 'Paris: 18°C, light rain. Tokyo: 24°C, clear.';
export const BOOKING_ANSWER = 'Sorry, there are no seats left to Oslo.';

// The calls the scripted model makes, in order, with the call ids it gives them: [callId, tool, arguments].
export const WEATHER_CALLS = [
  ['call_paris', 'get_weather', { city: 'Paris' }],
  ['call_tokyo', 'get_weather', { city: 'Tokyo' }],
];
export const BOOKING_CALLS = [['call_oslo', 'book_flight', { destination: 'Oslo', passengers: 2 }]];
// The two invocations every driver plays: [task, prompt, the model's calls, its final answer].
export const SCENARIO = [
  ['weather', WEATHER_PROMPT, WEATHER_CALLS, WEATHER_ANSWER],
  ['booking', BOOKING_PROMPT, BOOKING_CALLS, BOOKING_ANSWER],
];

// The delegation scenario (tests/frameworks/drivers/_harness.py, constant for constant).
export const LEADER = 'coordinator';
export const MEMBER = 'weather_agent';
export const DELEGATION_TASK = 'delegation';
export const DELEGATION_PROMPT = 'What is the weather in Paris? Ask the weather agent.';
export const MEMBER_REQUEST = 'What is the weather in Paris?';
export const MEMBER_CALLS = [['call_member_paris', 'get_weather', { city: 'Paris' }]];
export const MEMBER_ANSWER = 'Paris: 18°C, light rain.';
export const LEADER_ANSWER = 'The weather agent says: Paris: 18°C, light rain.';

/** The real OTLP/HTTP exporter, and a line of OTLP/JSON per request it is handed. */
export class RecordingExporter {
  constructor(endpoint, record) {
    this.exporter = new OTLPTraceExporter({ url: endpoint });
    this.record = record ? fs.openSync(record, 'a') : null;
  }

  export(spans, resultCallback) {
    if (this.record !== null) {
      // The very bytes the JSON exporter puts in its request body (JsonTraceSerializer is its serializer).
      const body = Buffer.from(JsonTraceSerializer.serializeRequest(spans)).toString('utf8');
      fs.writeSync(this.record, `${body}\n`);
    }
    this.exporter.export(spans, resultCallback);
  }

  async forceFlush() {
    await this.exporter.forceFlush();
  }

  async shutdown() {
    await this.exporter.shutdown();
    if (this.record !== null) {
      fs.closeSync(this.record);
      this.record = null;
    }
  }
}

/** The arguments every driver takes; `options` adds a driver's own (`--mode`, …) in parseArgs' form. */
export function parseArguments(description, options = {}, argv = process.argv.slice(2)) {
  const all = {
    endpoint: { type: 'string', default: 'http://127.0.0.1:4318/v1/traces' },
    record: { type: 'string' },
    help: { type: 'boolean', default: false },
    ...options,
  };
  const { values } = parseArgs({ args: argv, options: all, strict: true, allowPositionals: false });
  if (values.help) {
    const flags = Object.entries(all)
      .map(([name, o]) => `  --${name}${o.type === 'string' ? ' VALUE' : ''}${o.default !== undefined ? ` (default: ${o.default})` : ''}`)
      .join('\n');
    process.stdout.write(`${description}\n\n${flags}\n`);
    process.exit(0);
  }
  return values;
}

/** The installed version of each package, read from its package.json, by the name it declares there. */
function installedVersions(packages) {
  const versions = {};
  for (const name of packages) {
    let dir = path.dirname(fileURLToPath(import.meta.url));
    for (;;) {
      const manifest = path.join(dir, 'node_modules', name, 'package.json');
      if (fs.existsSync(manifest)) {
        const pkg = JSON.parse(fs.readFileSync(manifest, 'utf8'));
        versions[pkg.name] = pkg.version; // an npm alias (`ai-v6` for `npm:ai@6…`) reports the real name
        break;
      }
      const parent = path.dirname(dir);
      if (parent === dir) throw new Error(`${name} is not installed next to ${import.meta.url}`);
      dir = parent;
    }
  }
  return versions;
}

/** One driver's run: its tracer provider, the invocation in progress, and what the tools received. */
export class Harness {
  constructor(cell, packages, endpoint, record) {
    this.cell = cell;
    this.packages = packages;
    this.record = record ?? null;
    if (this.record !== null) {
      fs.mkdirSync(this.record, { recursive: true });
      fs.rmSync(path.join(this.record, 'otlp.jsonl'), { force: true });
    }
    this.exporter = new RecordingExporter(
      endpoint,
      this.record !== null ? path.join(this.record, 'otlp.jsonl') : null,
    );
    this.provider = new NodeTracerProvider({
      resource: defaultResource().merge(resourceFromAttributes({ 'service.name': cell })),
      spanProcessors: [new BatchSpanProcessor(this.exporter)],
    });
    // The global provider, with Node's AsyncLocalStorage context manager: the AI SDK takes its tracer
    // from the global API, and the rollout span must stay current across the SDK's awaits.
    this.provider.register();
    this.tracer = this.provider.getTracer('tracescore.frameworks.harness');
    this.invocations = [];
  }

  /**
   * One invocation of the agent, under a span naming its task, as docs/integrations.md advises.
   *
   * What the invocation throws is recorded as what it `raised` (Python's `Type: message`), and the
   * driver goes on.
   */
  async invocation(task, fn) {
    const invocation = { task, calls: [], raised: null };
    this.invocations.push(invocation);
    await this.tracer.startActiveSpan('rollout', { attributes: { 'tracescore.task.id': task } }, async span => {
      try {
        await fn();
      } catch (error) {
        invocation.raised = error instanceof Error ? `${error.name}: ${error.message}` : String(error);
      } finally {
        span.end();
      }
    });
  }

  /**
   * What a tool received (and will return), recorded by the tool itself before it does anything;
   * `agent`: which agent of the delegation scenario the tool belongs to.
   */
  called(tool, args, returned = null, agent = null) {
    const call = { tool, arguments: args, error: null, returned };
    if (agent !== null) call.agent = agent;
    this.invocations[this.invocations.length - 1].calls.push(call);
    return call;
  }

  /** The scenario's tools, given the input object a framework hands a tool (recorded as received). */
  getWeather(input, agent = null) {
    return String(this.called('get_weather', { ...input }, WEATHER[input.city], agent).returned);
  }

  bookFlight(input) {
    const call = this.called('book_flight', { ...input });
    call.error = NO_SEATS;
    throw new Error(NO_SEATS);
  }

  /**
   * Flush every span, and write the ground truth beside the recording.
   *
   * `requests`: the instrumentation shows the calls the model asked for, so every execution must be
   * joined to its request. `arguments`: it captures tool arguments at all. `error_messages`: the spans
   * carry the text of a tool's exception anywhere. `internal_tools`: tools the framework itself runs
   * beside the agent's own. For the delegation scenario, `delegation_tools`: the tools through which the
   * framework has the leader hand work to the member. Anything else is a fact about the cell, written
   * as it is.
   */
  async finish({
    requests,
    arguments: captured = true,
    error_messages = true,
    internal_tools = [],
    delegation_tools = [],
    ...facts
  }) {
    await this.provider.forceFlush();
    await this.provider.shutdown();
    context.disable();
    trace.disable();
    if (this.record === null) return;
    const truth = {
      cell: this.cell,
      versions: installedVersions(this.packages),
      requests,
      arguments: captured,
      error_messages,
      internal_tools: [...internal_tools],
      invocations: this.invocations,
      ...facts,
    };
    if (this.invocations.some(invocation => invocation.calls.some(call => call.agent))) {
      truth.agents = { leader: LEADER, member: MEMBER };
      truth.delegation_tools = [...delegation_tools];
    }
    fs.writeFileSync(path.join(this.record, 'calls.json'), `${JSON.stringify(truth, null, 2)}\n`);
  }
}
