// Synthetic conversation for long-session benches: exchanges of five messages (a question, two parallel tool calls
// with results of a few KB, an answer), ~6.5 KB per exchange, from a fixed pseudo-random word stream.
const WORDS = 'the agent reads a file runs a command and answers with what it found in the workspace today'.split(' ');
export const WORDS_NOTE =
  'Sessions are synthetic: 5-message exchanges (question, 2 tool calls with 3.5 + 1.5 KB results, answer).';

let seed = 1;
function text(bytes) {
  let out = '';
  while (out.length < bytes) {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    out += `${WORDS[seed % WORDS.length]} `;
  }
  return out.slice(0, bytes);
}

let callId = 0;
const toolCall = (name, args) => ({
  id: `call_${++callId}`,
  type: 'function',
  function: { name, arguments: JSON.stringify(args) },
});
const at = () => new Date().toISOString();

export function exchange() {
  const calls = [toolCall('read_file', { path: `src/${text(20).trim()}.ts` }), toolCall('exec', { command: text(60) })];
  return [
    { role: 'user', content: text(300), timestamp: at() },
    { role: 'assistant', content: text(120), tool_calls: calls, timestamp: at() },
    { role: 'tool', tool_call_id: calls[0].id, name: 'read_file', content: text(3_500), timestamp: at() },
    { role: 'tool', tool_call_id: calls[1].id, name: 'exec', content: text(1_500), timestamp: at() },
    { role: 'assistant', content: text(900), timestamp: at() },
  ];
}
