// The OpenAI Agents SDK for JavaScript (`@openai/agents`) through the shared scenario, with OpenInference's
// instrumentation (`@arizeai/openinference-instrumentation-openai-agents`), cell
// `openai-agents-js-openinference`.
//
// The SDK's own tracing is not OpenTelemetry: by default its processor uploads traces to OpenAI. The
// instrumentation is a `TracingProcessor` that turns the SDK's spans into OpenTelemetry spans; set up as
// its README says, `new OpenAIAgentsInstrumentation({ tracerProvider })` and
// `manuallyInstrument(agents)` (ESM), which replaces the SDK's processors with its own (its
// `exclusiveProcessor` default), so nothing goes to OpenAI.
//
// The model is the SDK's own `OpenAIResponsesModel` (so the SDK opens its real `response` spans, where
// the model's requests are), given an `OpenAI` client whose `fetch` answers each `/responses` request
// with the script's next turn: both weather calls in one reply (call ids `call_paris`, `call_tokyo`),
// then the answer. No socket is opened but OTLP's. The SDK runs a turn's function calls concurrently; a
// tool's exception goes to the model as the fixed text of the SDK's default tool error function ("An
// error occurred while running the tool. Please try again."), so the booking task ends with the model's
// answer.
//
// `--scenario delegation` (cell `openai-agents-js-multiagent-openinference`) plays the harness's
// delegation scenario: the member agent is the leader's tool (`agent.asTool`), so the member runs inside
// the leader's tool call.
//
// Run from a folder where tests/frameworks/node/package.json is installed (`npm ci`) beside copies of
// this file and harness.mjs:
//     node drive_openai_agents.mjs --endpoint http://127.0.0.1:4318/v1/traces \
//         --record tests/frameworks/fixtures/openai-agents-js-openinference

import { OpenAIAgentsInstrumentation } from '@arizeai/openinference-instrumentation-openai-agents';
import * as agents from '@openai/agents';
import OpenAI from 'openai';
import { z } from 'zod';

import {
  DELEGATION_PROMPT,
  DELEGATION_TASK,
  Harness,
  LEADER,
  LEADER_ANSWER,
  MEMBER,
  MEMBER_ANSWER,
  MEMBER_CALLS,
  MEMBER_REQUEST,
  SCENARIO,
  parseArguments,
} from './harness.mjs';

const PACKAGES = ['@openai/agents', '@arizeai/openinference-instrumentation-openai-agents'];
const MODEL = 'gpt-4.1-mini';

/** One Responses API answer, as OpenAI's server writes it. */
function response(number, output) {
  return {
    id: `resp_${number}`,
    object: 'response',
    created_at: 1700000000,
    status: 'completed',
    model: MODEL,
    output,
    parallel_tool_calls: true,
    tool_choice: 'auto',
    tools: [],
    usage: {
      input_tokens: 10,
      input_tokens_details: { cached_tokens: 0 },
      output_tokens: 5,
      output_tokens_details: { reasoning_tokens: 0 },
      total_tokens: 15,
    },
  };
}

/** The model's turns for one task: its function calls in one reply, then its answer. */
function turns(calls, answer) {
  const asked = calls.map(([callId, name, args], i) => ({
    type: 'function_call',
    id: `fc_${callId}`,
    call_id: callId,
    name,
    arguments: JSON.stringify(args),
    status: 'completed',
  }));
  const said = {
    type: 'message',
    id: `msg_${calls[0][0]}`,
    role: 'assistant',
    status: 'completed',
    content: [{ type: 'output_text', text: answer, annotations: [] }],
  };
  return [asked, [said]];
}

/** An OpenAI client whose every request is answered by the script, in order. */
function scriptedClient(script) {
  let answered = 0;
  const fetch = async (url, init) => {
    if (!String(url).endsWith('/responses')) throw new Error(`the script answers /responses only, not ${url}`);
    const output = script.shift();
    if (output === undefined) throw new Error('the script has no more turns');
    answered += 1;
    return new Response(JSON.stringify(response(answered, output)), {
      status: 200,
      headers: { 'content-type': 'application/json' },
    });
  };
  return new OpenAI({ apiKey: 'sk-scripted', baseURL: 'http://scripted.invalid/v1', fetch, maxRetries: 0 });
}

/**
 * The delegation scenario: the member as the leader's tool (`agent.asTool`), or with `handoff` the
 * member in the leader's `handoffs` (the leader's model calls `transfer_to_weather_agent`; the member
 * then runs beside the leader, a top-level agent of the same run, and gives the final answer).
 */
async function delegate(harness, handoff) {
  const member = new agents.Agent({
    name: MEMBER,
    instructions: 'Answer weather questions.',
    model: new agents.OpenAIResponsesModel(scriptedClient(turns(MEMBER_CALLS, MEMBER_ANSWER)), MODEL),
    tools: [
      agents.tool({
        name: 'get_weather',
        description: 'The current weather in a city.',
        parameters: z.object({ city: z.string() }),
        execute: async input => harness.getWeather(input, MEMBER),
      }),
    ],
  });
  const leaderCalls = handoff
    ? [['call_handoff', `transfer_to_${MEMBER}`, {}]]
    : [['call_delegate', MEMBER, { input: MEMBER_REQUEST }]];
  // After a handoff the member answers: the leader's model is asked once.
  const leaderTurns = turns(leaderCalls, LEADER_ANSWER).slice(0, handoff ? 1 : 2);
  const leader = new agents.Agent({
    name: LEADER,
    instructions: 'Delegate weather questions.',
    model: new agents.OpenAIResponsesModel(scriptedClient(leaderTurns), MODEL),
    ...(handoff
      ? { handoffs: [member] }
      : { tools: [member.asTool({ toolName: MEMBER, toolDescription: 'Answers weather questions.' })] }),
  });
  await harness.invocation(DELEGATION_TASK, async () => {
    await agents.run(leader, DELEGATION_PROMPT);
  });
}

async function main() {
  const args = parseArguments(
    'The OpenAI Agents SDK for JavaScript through the shared scenario, with OpenInference JS.',
    { scenario: { type: 'string', default: 'single' }, delegation: { type: 'string', default: 'tool' } },
  );
  const handoff = args.delegation === 'handoff';
  if (!handoff && args.delegation !== 'tool') throw new Error('--delegation: tool or handoff');
  const delegation = args.scenario === 'delegation';
  if (!delegation && args.scenario !== 'single') throw new Error('--scenario: single or delegation');
  const cell = delegation
    ? `openai-agents-js-multiagent${handoff ? '-handoff' : ''}-openinference`
    : 'openai-agents-js-openinference';
  const harness = new Harness(cell, PACKAGES, args.endpoint, args.record);
  new OpenAIAgentsInstrumentation({ tracerProvider: harness.provider }).manuallyInstrument(agents);
  if (delegation) {
    await delegate(harness, handoff);
    const delegationTools = [handoff ? `transfer_to_${MEMBER}` : MEMBER];
    await harness.finish({ requests: true, delegation_tools: delegationTools, runtime: `node ${process.version}` });
    return;
  }

  const tools = [
    agents.tool({
      name: 'get_weather',
      description: 'The current weather in a city.',
      parameters: z.object({ city: z.string() }),
      execute: async input => harness.getWeather(input),
    }),
    agents.tool({
      name: 'book_flight',
      description: 'Book a flight for some passengers.',
      parameters: z.object({ destination: z.string(), passengers: z.number().int() }),
      execute: async input => harness.bookFlight(input),
    }),
  ];
  for (const [task, prompt, calls, answer] of SCENARIO) {
    const model = new agents.OpenAIResponsesModel(scriptedClient(turns(calls, answer)), MODEL);
    const agent = new agents.Agent({ name: 'travel_agent', instructions: 'Help travellers.', model, tools });
    await harness.invocation(task, async () => {
      await agents.run(agent, prompt);
    });
  }
  // The default tool error function keeps the exception's text from the model and from every span.
  await harness.finish({ requests: true, error_messages: false, parallel_calls: true, runtime: `node ${process.version}` });
}

await main();
