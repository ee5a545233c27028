#!/usr/bin/env node
import { runCli } from './program.js';

// A reader that stops early (`ehr-gateway serve --help | head`) closes the pipe: end quietly, as a shell tool does.
process.stdout.on('error', (error: NodeJS.ErrnoException) => {
  if (error.code === 'EPIPE') process.exit(0);
  throw error;
});

const code = await runCli(process.argv.slice(2));
// A failed command has printed its one line; nothing it left behind (a timer, a socket) may keep it alive.
if (code !== 0) process.exit(code);
process.exitCode = code;
