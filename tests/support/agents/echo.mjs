// A test agent in Node: answers with the request it received, as JSON inside "content".
const chunks = [];
for await (const chunk of process.stdin) chunks.push(chunk);
const request = JSON.parse(Buffer.concat(chunks).toString("utf8"));
process.stdout.write(JSON.stringify({ content: JSON.stringify({ request, cwd: process.cwd() }) }) + "\n");
