// LangGraph.js through the shared scenario, with OpenInference's LangChain.js instrumentation
// (`@arizeai/openinference-instrumentation-langchain`), cell `langgraphjs-openinference`.
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

import { LangChainInstrumentation } from '@arizeai/openinference-instrumentation-langchain';
import * as CallbackManagerModule from '@langchain/core/callbacks/manager';
import { BaseChatModel } from '@langchain/core/language_models/chat_models';
import { AIMessage } from '@langchain/core/messages';
import { tool } from '@langchain/core/tools';
import { createReactAgent } from '@langchain/langgraph/prebuilt';
import { z } from 'zod';

import { Harness, SCENARIO, parseArguments } from './harness.mjs';

const CELL = 'langgraphjs-openinference';
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

async function main() {
  parseArguments('LangGraph.js through the shared scenario, with OpenInference JS.');
  const args = parseArguments('LangGraph.js through the shared scenario, with OpenInference JS.');
  const harness = new Harness(CELL, PACKAGES, args.endpoint, args.record);
  new LangChainInstrumentation().manuallyInstrument(CallbackManagerModule);

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
