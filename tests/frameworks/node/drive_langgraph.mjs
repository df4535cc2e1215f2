// LangGraph.js through the shared scenario, with OpenInference's LangChain.js instrumentation
// (`@arizeai/openinference-instrumentation-langchain`), cell `langgraphjs-openinference`.
//
// `--scenario delegation` (cell `langgraphjs-multiagent-openinference`) plays the harness's delegation
// scenario with LangGraph's tool-calling supervisor pattern, as the Python driver does: the leader is a
// prebuilt ReAct agent named `coordinator` whose tool `weather_agent` invokes the member, a prebuilt
// ReAct agent named `weather_agent` with `get_weather`.
//
// The agent is LangGraph.js's prebuilt ReAct agent (`createReactAgent` from
// `@langchain/langgraph/prebuilt`) with two tools made by `@langchain/core/tools`' `tool()`. The
// instrumentation is set up as its README says: `new LangChainInstrumentation()` and
// `manuallyInstrument(CallbackManagerModule)` (the `@langchain/core/callbacks/manager` module), with the
// harness's provider registered globally.
//
// The model is a `BaseChatModel` playing a script (tool calls with fixed ids, then text), whose
// `bindTools` keeps the script: a scripted model has no tool schema to send anywhere. Both weather
// calls are asked for in one turn (LangGraph's ToolNode runs them in parallel). Nothing leaves the
// machine but OTLP to `--endpoint`.
//
// Run from a folder where tests/frameworks/node/package.json is installed (`npm ci`) beside copies of
// this file and harness.mjs:
//     node drive_langgraph.mjs --endpoint http://127.0.0.1:4318/v1/traces \
//         --record tests/frameworks/fixtures/langgraphjs-openinference
//     node drive_langgraph.mjs --scenario delegation --endpoint http://127.0.0.1:4318/v1/traces \
//         --record tests/frameworks/fixtures/langgraphjs-multiagent-openinference

import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
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

const PACKAGES = ['@langchain/langgraph', '@langchain/core', '@arizeai/openinference-instrumentation-langchain'];

/** A chat model that answers with the next message of its script, whatever it is given. */
class ScriptedChatModel extends BaseChatModel {
  constructor(turns) {
    super({});
    this.turns = [...turns];
  }

  _llmType() {
    return 'scripted';
  }

  bindTools() {
    return this;
  }

  async _generate() {
    const message = this.turns.shift();
    if (message === undefined) throw new Error('the script has no more turns');
    return { generations: [{ text: typeof message.content === 'string' ? message.content : '', message }] };
  }
}

/** The model's turns for one task: its tool calls in one message, then its answer. */
function turns(calls, answer) {
  const requested = calls.map(([id, name, args]) => ({ id, name, args, type: 'tool_call' }));
  return [new AIMessage({ content: '', tool_calls: requested }), new AIMessage({ content: answer })];
}

/** The delegation scenario: the leader's tool `weather_agent` runs the member agent. */
async function delegate(harness) {
  const member = createReactAgent({
    llm: new ScriptedChatModel(turns(MEMBER_CALLS, MEMBER_ANSWER)),
    tools: [
      tool(async input => harness.getWeather(input, MEMBER), {
        name: 'get_weather',
        description: 'The current weather in a city.',
        schema: z.object({ city: z.string() }),
      }),
    ],
    name: MEMBER,
  });
  const weatherAgent = tool(
    async ({ request }) => {
      const answer = await member.invoke({ messages: [{ role: 'user', content: request }] });
      return String(answer.messages[answer.messages.length - 1].content);
    },
    { name: MEMBER, description: 'Ask the weather agent.', schema: z.object({ request: z.string() }) },
  );
  const leaderCalls = [['call_delegate', MEMBER, { request: MEMBER_REQUEST }]];
  const leader = createReactAgent({
    llm: new ScriptedChatModel(turns(leaderCalls, LEADER_ANSWER)),
    tools: [weatherAgent],
    name: LEADER,
  });
  await harness.invocation(DELEGATION_TASK, async () => {
    await leader.invoke({ messages: [{ role: 'user', content: DELEGATION_PROMPT }] });
  });
}

async function main() {
  const args = parseArguments('LangGraph.js through the shared scenario, with OpenInference JS.', {
    scenario: { type: 'string', default: 'single' },
  });
  const delegation = args.scenario === 'delegation';
  if (!delegation && args.scenario !== 'single') throw new Error('--scenario: single or delegation');
  const cell = delegation ? 'langgraphjs-multiagent-openinference' : 'langgraphjs-openinference';
  const harness = new Harness(cell, PACKAGES, args.endpoint, args.record);
  new LangChainInstrumentation().manuallyInstrument(CallbackManagerModule);
  if (delegation) {
    await delegate(harness);
    await harness.finish({ requests: true, delegation_tools: [MEMBER], runtime: `node ${process.version}` });
    return;
  }

  const tools = [
    tool(async input => harness.getWeather(input), {
      name: 'get_weather',
      description: 'The current weather in a city.',
      schema: z.object({ city: z.string() }),
    }),
    tool(async input => harness.bookFlight(input), {
      name: 'book_flight',
      description: 'Book a flight for some passengers.',
      schema: z.object({ destination: z.string(), passengers: z.number().int() }),
    }),
  ];
  for (const [task, prompt, calls, answer] of SCENARIO) {
    const agent = createReactAgent({ llm: new ScriptedChatModel(turns(calls, answer)), tools });
    await harness.invocation(task, async () => {
      await agent.invoke({ messages: [{ role: 'user', content: prompt }] });
    });
  }
  await harness.finish({ requests: true, parallel_calls: true, runtime: `node ${process.version}` });
}

await main();
